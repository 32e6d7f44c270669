package slurm

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/gpusim/gpusim/sim"
)

// mayPreempt reports whether pending job j may preempt running job r under the
// preemption type: a higher partition PriorityTier (partition_prio) or r's QOS in
// j's QOS preempt list (qos).
func (s *Slurm) mayPreempt(j, r *sim.Job) bool {
	ij, ir := &s.jobs[j.Ref], &s.jobs[r.Ref]
	switch s.ptype {
	case preemptPartition:
		return s.parts[ij.part].tier > s.parts[ir.part].tier
	case preemptQOS:
		// preempt/qos preempt_p_preemptable: a job never preempts one of its
		// own QOS (PREEMPT_MODE_WITHIN is not modelled).
		return ij.qos != ir.qos && s.qos[ij.qos].preempt[ir.qos]
	}
	return false
}

// victimMode is the preempt mode applied to r: its partition's (partition_prio) or
// QOS's (qos) PreemptMode, else the cluster's. A QOS cannot set OFF: Slurm
// stores OFF as 0, its "not set" value.
func (s *Slurm) victimMode(r *sim.Job) preemptMode {
	ir := &s.jobs[r.Ref]
	m := modeUnset
	switch s.ptype {
	case preemptPartition:
		m = s.parts[ir.part].mode
	case preemptQOS:
		// preempt/qos _job_preempt_mode: a QOS PreemptMode of OFF (0) is the
		// unset value, so the cluster's mode applies.
		if m = s.qos[ir.qos].mode; m == modeOff {
			m = modeUnset
		}
	}
	if m == modeUnset {
		m = s.pmode
	}
	return m
}

// victimKey is Slurm's victim order: tier (partition_prio) or QOS priority (qos)
// in the high bits, node count in the low bits; lowest first.
func (s *Slurm) victimKey(r *sim.Job) int64 {
	ir := &s.jobs[r.Ref]
	var hi int64
	if s.ptype == preemptPartition {
		hi = int64(s.parts[ir.part].tier)
	} else {
		hi = int64(s.qos[ir.qos].prio)
	}
	nodes := 0
	for i, n := range r.Nodes {
		if !slices.Contains(r.Nodes[:i], n) {
			nodes++
		}
	}
	return hi<<16 | int64(min(nodes, 0xffff))
}

func simMode(m preemptMode) sim.PreemptMode {
	switch m {
	case modeCancel:
		return sim.PreemptKill
	case modeSuspend:
		return sim.PreemptSuspend
	}
	return sim.PreemptRequeue
}

// preemptible filters victim candidates: the engine's protection (minimum run
// time, anti-churn window) and PreemptExemptTime.
func (s *Slurm) preemptible(r *sim.Job, now sim.Time) bool {
	return r.Preemptible(now) && (s.exempt <= 0 || now.Sub(r.LastStart) >= s.exempt)
}

// tryPreempt looks for victims that let j start now on its partition's allowed
// nodes: candidates in victim order are added until j fits, then every victim
// whose removal still leaves room is dropped again (last added first); the
// victims are preempted with their mode and j starts at once.
func (s *Slurm) tryPreempt(v *sim.View, p *sim.Plan, j *sim.Job, pt *partition, ok func(sim.NodeID) bool) (bool, error) {
	now := v.Now()
	s.cands = s.cands[:0]
	for _, r := range v.Running() {
		if !s.mayPreempt(j, r) || s.victimMode(r) <= modeOff || !s.preemptible(r, now) {
			continue
		}
		if s.victimMode(r) == modeSuspend && !s.parts[s.jobs[r.Ref].part].overSub {
			// a suspended job keeps its allocation: its preemptor needs
			// OverSubscribe=FORCE on the victim's partition to share it
			continue
		}
		on := false
		for _, n := range r.Nodes {
			if pt.mask[n] && ok(n) {
				on = true
				break
			}
		}
		if on {
			s.cands = append(s.cands, r)
		}
	}
	if len(s.cands) == 0 {
		return false, nil
	}
	slices.SortFunc(s.cands, func(a, b *sim.Job) int {
		if !s.youngest {
			// Equal keys keep job_list order, the lower job id first:
			// _find_preemptable_jobs walks job_list (ascending ids) and
			// list_sort uses glibc qsort, a stable merge sort for short
			// lists (fidelity fixture preempt-requeue: l1 and l2 go first).
			return cmp.Or(cmp.Compare(s.victimKey(a), s.victimKey(b)), cmp.Compare(a.Ref, b.Ref))
		}
		// youngest first, then the higher job id
		return cmp.Or(cmp.Compare(b.LastStart, a.LastStart), cmp.Compare(b.Ref, a.Ref))
	})
	defer s.ov.clear()
	chosen := -1
	for i, r := range s.cands {
		s.ov.release(r, +1, s.victimMode(r) == modeSuspend)
		if place(&s.ov, j, pt.nodes, ok, &s.pl, s.topo) {
			chosen = i + 1
			break
		}
	}
	if chosen < 0 {
		return false, nil
	}
	victims := s.cands[:chosen]
	keep := make([]bool, len(victims))
	for i := range keep {
		keep[i] = true
	}
	for i := len(victims) - 1; i >= 0; i-- {
		keepMem := s.victimMode(victims[i]) == modeSuspend
		s.ov.release(victims[i], -1, keepMem)
		if place(&s.ov, j, pt.nodes, ok, &s.pl, s.topo) {
			keep[i] = false
		} else {
			s.ov.release(victims[i], +1, keepMem)
		}
	}
	s.ov.clear()
	for i, r := range victims {
		if !keep[i] {
			continue
		}
		why := fmt.Sprintf("preempted by %s (%s)", j.Spec.ID, s.victimMode(r))
		s.freed = true // a job end: the main scheduler runs at the next point
		if err := p.AddPreempt(r.Ref, simMode(s.victimMode(r)), why); err != nil {
			return false, err
		}
	}
	if !s.placeSel(j, pt.nodes, ok, &s.pl) {
		return false, fmt.Errorf("slurm: job %s does not fit after preempting its victims (internal error)", j.Spec.ID)
	}
	if err := p.AddStart(j.Ref, s.pl.nodes, s.pl.gpus); err != nil {
		return false, err
	}
	return true, nil
}
