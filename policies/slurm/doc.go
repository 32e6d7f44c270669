// Package slurm simulates Slurm's scheduling (SchedMD/slurm, slurmctld with
// priority/multifactor, sched/backfill and preempt/{partition_prio,qos}) as the
// policy "slurm", configured like slurm.conf. docs/slurm.md documents every
// parameter, its default and what is and is not modelled.
//
// A scheduling point runs:
//
//	calc      every PriorityCalcPeriod: usage decay (half-life), usage of the
//	          period recorded per association (GPU-seconds), Fair Tree or
//	          classic fair share, multifactor priorities of pending jobs
//	limits    jobs without their own walltime are killed at their partition's
//	          DefaultTime/MaxTime
//	main      queue order (PriorityTier, priority, job id); the first
//	          default_queue_depth jobs on events, all every sched_interval; a job
//	          that cannot start (even by preemption) blocks its partition and its
//	          partition's nodes for the rest of the pass
//	backfill  every bf_interval: node_space from exact time-limit ends,
//	          whole-node reservations within bf_window quantised outward to
//	          bf_resolution, up to bf_max_job_test jobs,
//	          bf_job_part_count_reserve per partition
//
// Advanced reservations keep other jobs off their nodes when a job's time limit
// would overlap the window; the nodes return to general use when it ends.
package slurm
