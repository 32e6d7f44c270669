package slurm

import (
	"slices"

	"github.com/gpusim/gpusim/sim"
)

// This file holds the hooks with which the fidelity tests replay a Slurm
// recording on its own instants (docs/fidelity.md, Replay, "On the recorded
// instants"): the main scheduler's passes and the nodes' release after a
// job's end. They are unset in every run of the policy outside those tests,
// so no output changes.

// schedPass is one main-scheduler pass that a recording logged
// (job_scheduler.c schedule(): "sched: Running job scheduler for default
// depth." or "... full queue.").
type schedPass struct {
	at   sim.Time
	full bool // the whole queue (sched_interval's pass), not default_queue_depth
}

// recordedPass reports whether a recorded main-scheduler pass runs at now,
// whether it is a full one, and when the next one is due (sim.Never: none).
// Only with s.schedPasses set (tests).
func (s *Slurm) recordedPass(now sim.Time) (run, full bool, next sim.Time) {
	i, found := slices.BinarySearchFunc(s.schedPasses, now, func(p schedPass, t sim.Time) int {
		return cmpTime(p.at, t)
	})
	if found {
		run, full = true, s.schedPasses[i].full
		i++
	}
	next = sim.Never
	if i < len(s.schedPasses) {
		next = s.schedPasses[i].at
	}
	return run, full, next
}

func cmpTime(a, b sim.Time) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// noteRelease records, when a run of j ends at end, until when each of its
// nodes stays COMPLETING: slurmctld frees the job's resources in the select
// plugin at once (deallocate_nodes), but keeps the node in cg_node_bitmap
// until slurmd has answered the terminate request (agent.c
// _thread_per_group_rpc: ESLURMD_KILL_JOB_ALREADY_COMPLETE ->
// job_epilog_complete) or sent its epilog-complete message (proc_req.c
// _slurm_rpc_epilog_complete). Only with s.releaseAt set (tests).
func (s *Slurm) noteRelease(j *sim.Job, end sim.Time) {
	if s.releaseAt == nil {
		return
	}
	if s.cgUntil == nil {
		s.cgUntil = make([]sim.Time, len(s.blockedNode))
	}
	for _, n := range j.Nodes {
		if r := s.releaseAt(j, n, end); r > end {
			s.cgUntil[n] = max(s.cgUntil[n], r)
		}
	}
}

// completing reports whether node n is still COMPLETING at now (a job on it
// has ended and slurmd has not yet confirmed it).
func (s *Slurm) completing(n sim.NodeID, now sim.Time) bool {
	return s.cgUntil != nil && s.cgUntil[n] > now
}

// anyCompleting reports whether any of nodes is still COMPLETING at now:
// backfill.c _attempt_backfill then sets the job's start to now + 1 ("Need
// to wait for in-progress completion/epilog") and reserves the nodes from
// there instead of starting it.
func (s *Slurm) anyCompleting(nodes []sim.NodeID, now sim.Time) bool {
	if s.cgUntil == nil {
		return false
	}
	for _, n := range nodes {
		if s.cgUntil[n] > now {
			return true
		}
	}
	return false
}
