package kueue

import (
	"cmp"
	"slices"

	"github.com/gpusim/gpusim/sim"
)

// waitForPodsReady (Kueue workload_controller.go). In the simulator a workload's
// pods are ready when it starts: "admitted but not yet placed" is "not PodsReady".

type podsReadyState struct {
	cfg      *PodsReadyConfig
	backoff  []*workload // evicted for PodsReady timeout, waiting for requeueAt
	inactive []*workload // deactivated (backoffLimitCount exceeded)
	blocked  bool        // blockAdmission held an admission back in this pass
}

// onArrive initialises a new workload's extra state.
func (k *Kueue) onArrive(w *workload) {
	w.qts = w.job.Spec.Submit
	if k.afs.cfg != nil {
		w.lq = k.afs.lqs[k.lqKeyOf(w.job)]
	}
}

// onAdmit records the admission time (PodsReady deadline) and the AFS penalty.
func (k *Kueue) onAdmit(w *workload) {
	w.admittedAt = k.now
	k.afsOnAdmit(w)
}

// beginPoint runs at the start of every scheduling point: the current time, due
// AFS samples, and workloads whose requeue backoff is over return to their queue.
func (k *Kueue) beginPoint(v *sim.View) {
	k.now = v.Now()
	if k.prd.cfg == nil && k.m.Config != nil {
		k.prd.cfg = k.m.Config.WaitForPodsReady
	}
	k.afsAdvance(k.now)
	k.requeueDue()
}

// requeueDue returns workloads whose backoff is over to their queue.
func (k *Kueue) requeueDue() {
	i := 0
	for ; i < len(k.prd.backoff) && k.prd.backoff[i].requeueAt <= k.now; i++ {
		w := k.prd.backoff[i]
		w.inBackoff = false
		if w.state == wlPending {
			k.push(w)
		}
	}
	k.prd.backoff = slices.Delete(k.prd.backoff, 0, i)
}

// admissionBlocked reports whether blockAdmission holds back admissions: some
// admitted workload is not PodsReady (admitted, not yet placed).
func (k *Kueue) admissionBlocked() bool {
	if c := k.prd.cfg; c == nil || !c.BlockAdmission || len(k.pendingPl) == 0 {
		return false
	}
	k.prd.blocked = true
	return true
}

// afterPlacement evicts admitted workloads that did not become ready within the
// timeout and reports whether admission cycles should run again at this time
// (quota was freed, or admissions held back by blockAdmission may now proceed).
func (k *Kueue) afterPlacement(p *sim.Plan) bool {
	c := k.prd.cfg
	if c == nil {
		return false
	}
	again := k.prd.blocked && len(k.pendingPl) == 0
	k.prd.blocked = false
	for _, w := range slices.Clone(k.pendingPl) {
		if w.admittedAt.Add(c.Timeout) > k.now {
			continue
		}
		k.podsReadyTimeout(p, w)
		again = true
	}
	k.requeueDue() // a zero backoff requeues at once
	return again
}

// podsReadyTimeout evicts w (admitted, never placed) and requeues it with backoff,
// or deactivates it once backoffLimitCount is exceeded. With the Eviction
// timestamp the workload queues behind newer ones; with Creation it keeps its
// place.
func (k *Kueue) podsReadyTimeout(p *sim.Plan, w *workload) {
	c := k.prd.cfg
	k.release(w)
	w.state = wlPending
	k.unpark(w.cq)
	p.Wait(w.job.Ref, sim.ReasonBlocked)
	if c.BackoffLimitCount != nil && w.requeues+1 > *c.BackoffLimitCount {
		w.inactive = true
		k.prd.inactive = append(k.prd.inactive, w)
		return
	}
	w.requeues++
	w.requeueAt = k.now.Add(c.Backoff(w.requeues))
	w.inBackoff = true
	if c.Timestamp == TimestampEviction {
		w.qts = k.now
	}
	i, _ := slices.BinarySearchFunc(k.prd.backoff, w, func(a, b *workload) int {
		if a.requeueAt != b.requeueAt {
			return cmp.Compare(a.requeueAt, b.requeueAt)
		}
		return int(a.job.Ref - b.job.Ref)
	})
	k.prd.backoff = slices.Insert(k.prd.backoff, i, w)
}

// podsReadyWakes asks for scheduling points at the next PodsReady deadline and
// the next backoff expiry (only while such workloads exist, so runs end).
func (k *Kueue) podsReadyWakes(p *sim.Plan) {
	c := k.prd.cfg
	if c == nil {
		return
	}
	for _, w := range k.pendingPl {
		p.Wake(w.admittedAt.Add(c.Timeout))
	}
	if len(k.prd.backoff) > 0 {
		p.Wake(k.prd.backoff[0].requeueAt)
	}
}

// Deactivated lists the jobs Kueue deactivated after backoffLimitCount PodsReady
// requeues: they stay pending (unfinished) for the rest of the run.
func (k *Kueue) Deactivated() []sim.JobID {
	var out []sim.JobID
	for _, w := range k.prd.inactive {
		out = append(out, w.job.Spec.ID)
	}
	return out
}
