package kueue

import "github.com/gpusim/gpusim/sim"

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
