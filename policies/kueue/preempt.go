package kueue

import (
	"cmp"
	"slices"
)

// targets chooses victims for a preempting entry with Kueue's classical algorithm:
// candidates from the preemptor's own ClusterQueue (withinClusterQueue) and from
// borrowing ClusterQueues of its cohort tree (reclaimWithinCohort,
// borrowWithinCohort), ordered other-queue first, lower priority first, most
// recently admitted first, then id; removed one by one until the preemptor fits;
// then a reverse fill-back pass drops victims that turned out unnecessary. The
// quota tree is restored before returning.
func (k *Kueue) targets(e *entry) []*workload {
	if k.fairOn() {
		return k.fairTargets(e)
	}
	w := e.w
	C := w.cq
	defer k.tasWhatIf(e)() // TAS: candidates are also released on a copy of the cluster
	need := e.needFRs()
	needs := func(x *workload) bool {
		for _, a := range x.assign {
			for _, b := range need {
				if a.fr == b.fr {
					return true
				}
			}
		}
		return false
	}
	cands := k.candBuf[:0]
	defer func() { k.candBuf = cands[:0] }()
	cross := false
	for _, cq := range C.peers {
		own := cq == C
		if own && C.within == "Never" {
			continue
		}
		if !own && (C.reclaim == "Never" || C.node.parent == nil || !k.borrowingOn(cq, need)) {
			continue // only ClusterQueues above their nominal quota on what needs preemption lose workloads
		}
		for _, x := range cq.admitted {
			if x.evicting || !needs(x) || !k.preemptible(x) {
				continue
			}
			if own {
				switch C.within {
				case "LowerPriority":
					if x.prio >= w.prio {
						continue
					}
				case "LowerOrNewerEqualPriority":
					if !(x.prio < w.prio || x.prio == w.prio && x.job.Spec.Submit > w.job.Spec.Submit) {
						continue
					}
				default:
					continue
				}
			} else {
				if C.reclaim == "LowerPriority" && x.prio >= w.prio {
					continue
				}
				cross = true
			}
			cands = append(cands, x)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	// Quota is monotone in removals: if the preemptor does not fit even with every
	// candidate gone, no subset works and the candidates need no ordering.
	if k.tas == nil {
		for _, x := range cands {
			k.take(x, -1)
		}
		ok := k.fitsEntry(e, true)
		for _, x := range cands {
			k.take(x, +1)
		}
		if !ok {
			return nil
		}
	}
	// Candidates are taken in order until the preemptor fits, usually after a
	// few: a lazily popped heap instead of sorting them all. The order is total
	// (it ends with the JobRef), so the result is the sorted order's.
	ord := &k.candOrd
	ord.reset(cands, func(x, y *workload) int {
		if (x.cq != C) != (y.cq != C) {
			if x.cq != C {
				return -1
			}
			return 1
		}
		if c := k.afsCandCmp(x, y); c != 0 {
			return c
		}
		if x.prio != y.prio {
			return cmp.Compare(x.prio, y.prio)
		}
		if x.admitSeq != y.admitSeq {
			return cmp.Compare(y.admitSeq, x.admitSeq)
		}
		return cmp.Compare(x.job.Ref, y.job.Ref)
	})
	attempts := []bool{true}
	if cross {
		if C.bwc == "LowerPriority" {
			attempts = []bool{true, false}
		} else {
			attempts = []bool{false, true}
		}
	}
	for _, allowBorrow := range attempts {
		removed := k.remBuf[:0]
		found := false
		for i := 0; ; i++ {
			x := ord.at(i)
			if x == nil {
				break
			}
			if x.cq != C {
				if !k.borrowingOn(x.cq, need) {
					continue // no longer above its nominal quota on what we need
				}
				if allowBorrow && !k.mayReclaimWhileBorrowing(C, w, x) {
					continue
				}
			}
			k.take(x, -1)
			removed = append(removed, x)
			if k.fitsEntry(e, allowBorrow) {
				found = true
				break
			}
		}
		if found {
			// Fill-back: re-add victims in reverse order (except the last one);
			// keep those the preemptor does not need gone.
			for i := len(removed) - 2; i >= 0; i-- {
				x := removed[i]
				k.take(x, +1)
				if k.fitsEntry(e, allowBorrow) {
					removed = slices.Delete(removed, i, i+1)
					continue
				}
				k.take(x, -1)
			}
		}
		for _, x := range removed {
			k.take(x, +1)
		}
		k.remBuf = removed[:0]
		if found {
			return removed // valid until the next targets call
		}
	}
	return nil
}

// candOrder hands out candidates in ascending order lazily: a binary heap whose
// pops are kept, so at(i) costs O(log n) amortized per new element.
type candOrder struct {
	h, out []*workload
	cmp    func(x, y *workload) int
}

func (o *candOrder) reset(c []*workload, cmp func(x, y *workload) int) {
	o.h = append(o.h[:0], c...)
	o.out = o.out[:0]
	o.cmp = cmp
	for i := len(o.h)/2 - 1; i >= 0; i-- {
		o.down(i)
	}
}

// at returns the i-th smallest candidate, or nil past the end.
func (o *candOrder) at(i int) *workload {
	for len(o.out) <= i {
		n := len(o.h)
		if n == 0 {
			return nil
		}
		o.out = append(o.out, o.h[0])
		o.h[0] = o.h[n-1]
		o.h[n-1] = nil
		o.h = o.h[:n-1]
		o.down(0)
	}
	return o.out[i]
}

func (o *candOrder) down(i int) {
	h := o.h
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && o.cmp(h[r], h[l]) < 0 {
			m = r
		}
		if o.cmp(h[m], h[i]) >= 0 {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// take adds (sign +1) or removes (-1) x's usage in the quota tree (what-if).
func (k *Kueue) take(x *workload, sign int64) {
	for _, a := range x.assign {
		x.cq.node.addUsage(a.fr, sign*a.q)
	}
	k.tasTake(x, sign)
}

func (k *Kueue) borrowingOn(cq *clusterQueue, assign []frQ) bool {
	for _, a := range assign {
		if cq.node.borrowing(a.fr) {
			return true
		}
	}
	return false
}

// mayReclaimWhileBorrowing: borrowWithinCohort lets a preemptor that will borrow
// evict lower-priority workloads of other queues (at most maxPriorityThreshold).
func (k *Kueue) mayReclaimWhileBorrowing(C *clusterQueue, w, x *workload) bool {
	if C.bwc != "LowerPriority" || x.prio >= w.prio {
		return false
	}
	return C.bwcThresh == nil || x.prio <= *C.bwcThresh
}
