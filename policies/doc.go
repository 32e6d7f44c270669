// Package policies holds gpusim's scheduling policies and the registry that builds
// them by name from scenario YAML.
//
// The baseline queue policies (fifo, priority, sjf, easy-backfill,
// conservative-backfill) share one implementation: a queue order, a strictness
// (head-of-line blocking or skipping), an optional backfill pass, and a Placer
// (first-fit, best-fit, spread) that chooses GPUs for a whole gang at once.
//
//	Schedule(View, Plan):
//	  for job in queue order:            fifo: engine list; others: indexed heap
//	     Placer.Place(cluster, job)      whole gang or nothing
//	     fits  -> Plan.AddStart          applied at once; the View sees it
//	     blocked & strict -> head; stop
//	  backfill(head)                     EASY: shadow time + spare capacity
//	                                     conservative: per-model GPU profile
//
// Policies see only walltime estimates (Job.Estimate), never true durations,
// unless the scenario sets oracle: true.
package policies
