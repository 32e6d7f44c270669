package sim

import (
	"errors"
	"fmt"
)

// SpanPart is one member cluster's part of a cross-cluster gang (package
// federation, docs/federation.md "Cross-cluster gangs"): a job of that
// cluster's stepper, not arrived yet, and its placement there.
type SpanPart struct {
	S     *Stepper
	Job   JobRef
	Nodes []NodeID
	GPUs  []GPUID
}

// StartSpan admits a cross-cluster gang atomically at time t: every part
// arrives and starts in its stepper at t (its policy observes the arrival and
// the start, as for a job started by another scheduler), all parts run at the
// slowest part's speed, so that they end together, and no part may be
// preempted by its cluster's policy (Job.Preemptible is false while it runs).
//
// Every stepper must be at or before t, with no event left before t, and t
// within the horizon. The parts are checked before anything is applied
// (stepper times, arrivals, placements' node and GPU counts); an error while
// applying a start (a placement the cluster cannot take) leaves the steppers
// unusable, as a *PlanError leaves an Engine.Run.
func StartSpan(t Time, parts []SpanPart) error {
	if len(parts) == 0 {
		return errors.New("sim: span start: no parts")
	}
	for i := range parts {
		p := &parts[i]
		s := p.S
		e := s.e
		switch n := s.Next(); {
		case s.done:
			return errors.New("sim: span start: stepper after Result")
		case t < e.now || t > n || t > s.horizon:
			return fmt.Errorf("sim: span start: part %d: start at %d (now %d, next event %d)", i, t, e.now, n)
		case p.Job < 0 || int(p.Job) >= len(e.jobs) || s.arrived[p.Job]:
			return fmt.Errorf("sim: span start: part %d: job ref %d unknown or already arrived", i, p.Job)
		}
		sp := &e.jobs[p.Job].Spec
		if len(p.Nodes) != int(sp.Replicas) || len(p.GPUs) != int(sp.TotalGPUs()) {
			return fmt.Errorf("sim: span start: part %d (job %s): %d nodes and %d GPUs for %d replicas x %d GPUs", i, sp.ID, len(p.Nodes), len(p.GPUs), sp.Replicas, sp.GPUsPerReplica)
		}
	}
	speed := 0.0
	for i := range parts {
		p := &parts[i]
		e := p.S.e
		e.advance(t)
		p.S.arrived[p.Job] = true
		j := &e.jobs[p.Job]
		e.arrive(j)
		if err := e.applyStart(&Start{Job: p.Job, Nodes: p.Nodes, GPUs: p.GPUs}); err != nil {
			return fmt.Errorf("sim: span start: part %d (job %s): %w", i, j.Spec.ID, err)
		}
		if i == 0 || j.speed < speed {
			speed = j.speed
		}
	}
	for i := range parts {
		e := parts[i].S.e
		j := &e.jobs[parts[i].Job]
		j.protectedUntil = Never
		if j.speed != speed {
			j.speed = speed
			e.queueEnd(j) // the earlier end is stale (its generation is superseded)
		}
	}
	return nil
}
