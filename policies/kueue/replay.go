package kueue

import (
	"slices"

	"github.com/gpusim/gpusim/sim"
)

// graceFor is the grace period of the eviction of victim w that Kueue decides
// at now: how long the victim keeps running, and holding its quota, before it
// terminates. It is the evictionGracePeriod parameter, except in the fidelity
// replay (policies/kueue/fidelity_test.go), which sets replayGrace to play the
// lag that the recording measured between each eviction and the driver's
// release of the victim (released_s - evicted_s), as the Slurm and Volcano
// replays play their recordings' measured timing. replayGrace is unexported
// and nil outside that test, so no scenario's output depends on it.
func (k *Kueue) graceFor(w *workload, now sim.Time) sim.Duration {
	if k.replayGrace != nil {
		return k.replayGrace(w.job, now)
	}
	return k.grace
}

// replayInstants, when set (the fidelity test only, fidelity_test.go, for a
// recording with the manager's cycles.csv and seen.csv), plays the real
// manager's timing of two things gpusim otherwise runs in zero time:
//
//   - Admission cycles run only at the recorded starts of Kueue's
//     scheduling cycles (pkg/scheduler/scheduler.go Scheduler.schedule),
//     one gpusim cycle per recorded one, instead of back to back until one
//     changes nothing. After the last recorded cycle the policy runs its
//     cycles as usual (a replay that diverged still ends).
//   - A finished workload gives its quota back, and starts its requeue
//     batch, when the manager saw it finish (seen: WorkloadReconciler.Update
//     in pkg/controller/core/workload_controller.go, which removes it from
//     the cache), not when the engine ends it, so that a cycle sees only the
//     finishes Kueue's cache had seen by its start (the snapshot,
//     s.cache.Snapshot).
//
// It is nil outside that test, so no scenario's output depends on it.
type replayInstants struct {
	cycles []sim.Time                              // recorded cycle starts not yet reached, ascending
	seen   func(j *sim.Job, now sim.Time) sim.Time // when the manager saw j finish; <= now: at once
	late   []lateEnd                               // finishes the manager has not seen yet
}

// lateEnd is a finished workload whose end Kueue sees at at.
type lateEnd struct {
	w  *workload
	at sim.Time
}

// setReplayInstants is replayInstants' setter for the fidelity test:
// cycles are the recorded cycle starts (any order), seen when the manager
// saw a job's finish.
func (k *Kueue) setReplayInstants(cycles []sim.Time, seen func(j *sim.Job, now sim.Time) sim.Time) {
	cs := slices.Clone(cycles)
	slices.Sort(cs)
	k.replay = &replayInstants{cycles: cs, seen: seen}
}

// finishLater defers w's end to when the manager saw it, and reports
// whether it did.
func (k *Kueue) finishLater(w *workload, now sim.Time) bool {
	if k.replay == nil {
		return false
	}
	at := k.replay.seen(w.job, now)
	if at <= now {
		return false
	}
	k.replay.late = append(k.replay.late, lateEnd{w, at})
	return true
}

// replaySeen ends the finished workloads that the manager has seen by now.
func (k *Kueue) replaySeen(now sim.Time) {
	if k.replay == nil {
		return
	}
	keep := k.replay.late[:0]
	for _, l := range k.replay.late {
		if l.at > now {
			keep = append(keep, l)
			continue
		}
		k.finish(l.w, l.at)
	}
	k.replay.late = keep
}

// replayCycles is how many admission cycles to run at now: one per
// recorded cycle start reached since the last point, and whether that
// count is exact (false once the recorded cycles are spent: run them as
// usual).
func (k *Kueue) replayCycles(now sim.Time) (n int, exact bool) {
	if k.replay == nil || len(k.replay.cycles) == 0 {
		return maxCyclesPerPoint, false
	}
	for len(k.replay.cycles) > 0 && k.replay.cycles[0] <= now {
		k.replay.cycles = k.replay.cycles[1:]
		n++
	}
	return n, true
}

// replayWakes asks for scheduling points at the next recorded cycle and
// when each deferred finish is seen: holds (Plan.Release), as nothing may
// be running while the policy waits for them.
func (k *Kueue) replayWakes(p *sim.Plan) {
	if k.replay == nil {
		return
	}
	if len(k.replay.cycles) > 0 {
		p.Release(k.replay.cycles[0])
	}
	for _, l := range k.replay.late {
		p.Release(l.at)
	}
}
