package kueue

import "cmp"

// classicalCandCmp is the classical preemption candidate order (targets):
// workloads already being evicted first (Kueue's NewCandidateIterator lists
// the evicted hierarchical, other cross-queue and same-queue candidates before
// the others; they are candidates only with preemptorReservation false), then
// the variant's candidate list (hierarchical, other cross-queue, same queue),
// then (Admission Fair Sharing) higher LocalQueue usage, lower priority, most
// recently admitted, JobRef.
func (k *Kueue) classicalCandCmp(x, y *workload) int {
	if x.evicting != y.evicting {
		if x.evicting {
			return -1
		}
		return 1
	}
	if gx, gy := x.pv.group(), y.pv.group(); gx != gy {
		return cmp.Compare(gx, gy)
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
}

// candItem is a candidate with its order key: classicalCandCmp without the AFS
// term, as (a, b, JobRef) compared lexicographically. a holds "not being
// evicted" above the group above the priority (offset to compare unsigned), b
// the admission sequence inverted (most recent first).
type candItem struct {
	a, b uint64
	w    *workload
}

func candKey(x *workload) candItem {
	return candItem{
		a: notEvicting(x)<<34 | uint64(x.pv.group())<<32 | uint64(uint32(x.prio)^1<<31),
		b: ^uint64(x.admitSeq),
		w: x,
	}
}

// notEvicting is 0 for a workload being evicted, else 1 (candKey).
func notEvicting(x *workload) uint64 {
	if x.evicting {
		return 0
	}
	return 1
}

// candSortMax is the most candidates candOrder sorts outright (insertion sort)
// rather than heapifying: most preemptions look at a few candidates and try all.
const candSortMax = 24

// candOrder hands out candidates in ascending order lazily: a binary heap whose
// pops are kept, so at(i) costs O(log n) amortized per new element. Up to
// candSortMax candidates are sorted at once instead. With a nil cmp it compares
// precomputed keys (candKey); otherwise cmp, which must be a total order.
type candOrder struct {
	h, out []candItem
	cmp    func(x, y *workload) int
}

func (o *candOrder) less(x, y *candItem) bool {
	if o.cmp != nil {
		return o.cmp(x.w, y.w) < 0
	}
	if x.a != y.a {
		return x.a < y.a
	}
	if x.b != y.b {
		return x.b < y.b
	}
	return x.w.job.Ref < y.w.job.Ref
}

// reset orders c (cmp nil: by candKey).
func (o *candOrder) reset(c []*workload, cmp func(x, y *workload) int) {
	o.cmp = cmp
	o.h, o.out = o.h[:0], o.out[:0]
	if len(c) <= candSortMax {
		// Backwards: a queue's candidates come in admission order and sort most
		// recent first, so the insertion sort mostly appends.
		for i := len(c) - 1; i >= 0; i-- {
			it := candKey(c[i])
			j := len(o.out)
			o.out = append(o.out, it)
			for ; j > 0 && o.less(&it, &o.out[j-1]); j-- {
				o.out[j] = o.out[j-1]
			}
			o.out[j] = it
		}
		return
	}
	for _, x := range c {
		o.h = append(o.h, candKey(x))
	}
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
		o.h = o.h[:n-1]
		o.down(0)
	}
	return o.out[i].w
}

func (o *candOrder) down(i int) {
	h := o.h
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && o.less(&h[r], &h[l]) {
			m = r
		}
		if !o.less(&h[m], &h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// fitsWithout reports whether e fits (fitsEntry with allowBorrow) with the usage
// of every candidate removed, leaving out, when exclWB is set, other queues'
// candidates of variant pvWithoutBorrowing. Usage is removed summed per run of
// same-queue candidates, one addUsage per flavor-resource: a Cohort's usage is
// a function of its ClusterQueues' usage (addUsage keeps Usage(Coh) =
// sum_children max(0, Usage(child) - localQuota(child))), so the tree ends in
// the same state as removing them one by one. The tree is restored before
// returning. Not for TAS (no what-if cluster is kept).
func (k *Kueue) fitsWithout(e *entry, cands []*workload, allowBorrow, exclWB bool) bool {
	sums, runs := k.sumBuf[:0], k.runBuf[:0]
	for _, x := range cands {
		if exclWB && x.cq != e.w.cq && x.pv == pvWithoutBorrowing {
			continue
		}
		if len(runs) == 0 || runs[len(runs)-1].cq != x.cq {
			runs = append(runs, sumRun{cq: x.cq, lo: len(sums)})
		}
		r := &runs[len(runs)-1]
	next:
		for _, a := range x.assign {
			for i := r.lo; i < len(sums); i++ {
				if sums[i].fr == a.fr {
					sums[i].q += a.q
					continue next
				}
			}
			sums = append(sums, a)
		}
	}
	apply := func(sign int64) {
		for i, r := range runs {
			hi := len(sums)
			if i+1 < len(runs) {
				hi = runs[i+1].lo
			}
			for _, a := range sums[r.lo:hi] {
				r.cq.node.addUsage(a.fr, sign*a.q)
			}
		}
	}
	apply(-1)
	fit := k.fitsEntry(e, allowBorrow)
	apply(+1)
	clear(runs)
	k.sumBuf, k.runBuf = sums[:0], runs[:0]
	return fit
}

// sumRun is a run of same-queue candidates in fitsWithout: its summed usage is
// sums[lo:] up to the next run's lo.
type sumRun struct {
	cq *clusterQueue
	lo int
}
