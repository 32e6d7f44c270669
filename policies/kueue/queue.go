package kueue

import (
	"slices"
	"sort"
	"strings"

	"github.com/gpusim/gpusim/sim"
)

// A ClusterQueue's queue is split into buckets of workloads that are equivalent
// for scheduling: same requests, allowed models and topology request (Kueue's
// SchedulingEquivalenceHashing). Each bucket keeps its queued and its parked
// (inadmissible) workloads as two lists sorted in Kueue's queue order (k.less).
// The queue head is the smallest bucket head; parking a head also parks every
// equivalent workload of no higher priority — a suffix of its bucket — and
// unparking merges each bucket's two lists. So a park or an unpark costs
// O(buckets + moved workloads), not O(queue length), which matters when long
// queues bounce between the queue and the inadmissible set on every event.
type bucket struct {
	lists [2][]*workload // one is the queue (sorted by k.less), the other the inadmissible set (sorted)
	q     uint8          // index of the queue list; unparking an empty queue flips it in O(1)
}

func (b *bucket) heap() *[]*workload   { return &b.lists[b.q] }
func (b *bucket) parked() *[]*workload { return &b.lists[b.q^1] }

// queued reports whether w is in its ClusterQueue's queue.
func (w *workload) queued() bool { return w.side != 0 && w.side-1 == w.bk.q }

// parked reports whether w is in the inadmissible set.
func (w *workload) parked() bool { return w.side != 0 && w.side-1 != w.bk.q }

// eqKey identifies a bucket: what makes two workloads fail admission alike.
type eqKey struct {
	replicas, gpusPerReplica int32
	milli                    sim.MilliGPU
	cpu, mem                 int64
	models                   string
	tas                      *tasRule
}

// bucketFor returns w's bucket, creating it on first use.
func (k *Kueue) bucketFor(w *workload) *bucket {
	if w.bk != nil {
		return w.bk
	}
	s := &w.job.Spec
	key := eqKey{replicas: s.Replicas, gpusPerReplica: s.GPUsPerReplica, milli: s.GPUMilli, cpu: s.CPUMilli, mem: s.MemoryMiB,
		models: strings.Join(s.GPUModels, "\x00")}
	if k.tas != nil {
		key.tas = k.tasRule(w)
	}
	cq := w.cq
	if cq.bucketOf == nil {
		cq.bucketOf = map[eqKey]*bucket{}
	}
	b := cq.bucketOf[key]
	if b == nil {
		b = &bucket{}
		cq.bucketOf[key] = b
		cq.buckets = append(cq.buckets, b)
	}
	w.bk = b
	return b
}

// push inserts w into its queue (kept sorted by Kueue's order).
func (k *Kueue) push(w *workload) {
	b := k.bucketFor(w)
	if w.queued() {
		return
	}
	h := b.heap()
	i := sort.Search(len(*h), func(i int) bool { return k.less(w, (*h)[i]) })
	*h = slices.Insert(*h, i, w)
	w.side = b.q + 1
	w.cq.nQueued++
	k.markActive(w.cq)
}

// removeFromQueue takes w out of its queue or the inadmissible set.
func (k *Kueue) removeFromQueue(w *workload) {
	if w.side == 0 {
		return
	}
	if w.queued() {
		w.cq.nQueued--
	} else {
		w.cq.nParked--
	}
	l := &w.bk.lists[w.side-1]
	i := 0 // usually the head
	if len(*l) == 0 || (*l)[0] != w {
		i = sort.Search(len(*l), func(i int) bool { return !k.less((*l)[i], w) })
	}
	if i < len(*l) && (*l)[i] == w {
		*l = slices.Delete(*l, i, i+1)
	}
	w.side = 0
}

// minHead returns the first queued workload of cq in queue order, or nil.
func (k *Kueue) minHead(cq *clusterQueue) *workload {
	var best *workload
	for _, b := range cq.buckets {
		if h := *b.heap(); len(h) > 0 && (best == nil || k.less(h[0], best)) {
			best = h[0]
		}
	}
	return best
}

// park moves w (just found inadmissible) and every queued workload of its bucket
// with no higher priority to the inadmissible set. When that is the whole queue
// list (w being the ClusterQueue's head, it usually is), the two lists swap roles
// instead of moving workloads.
func (k *Kueue) park(w *workload) {
	if k.replay != nil {
		k.parkOne(w)
		return
	}
	if !k.parkWholeBucket(w) {
		k.parkGeneral(w)
	}
}

// parkGeneral is park for any queued w (a sticky head need not be first in its
// bucket): w leaves its place and the workloads of its bucket from the first of
// no higher priority on move to the inadmissible set.
func (k *Kueue) parkGeneral(w *workload) {
	k.removeFromQueue(w)
	b := w.bk
	cq := w.cq
	h := b.heap()
	i := sort.Search(len(*h), func(i int) bool { return (*h)[i].prio <= w.prio })
	n := len(*h) - i
	cq.nQueued -= n
	cq.nParked += n
	if i == 0 && len(*b.parked()) <= n {
		// The queue list becomes the inadmissible set; the old (smaller) set is
		// merged into it and the queue list is left empty.
		old := b.q ^ 1
		b.q = old
		dst := &b.lists[old^1]
		side := old ^ 1 + 1
		for _, o := range b.lists[old] {
			o.side = side
		}
		*dst = k.mergeInto(*dst, b.lists[old])
		clear(b.lists[old])
		b.lists[old] = b.lists[old][:0]
	} else {
		batch := append(k.parkBuf[:0], (*h)[i:]...)
		clear((*h)[i:])
		*h = (*h)[:i]
		side := b.q ^ 1 + 1
		for _, o := range batch {
			o.side = side
		}
		p := b.parked()
		*p = k.mergeInto(*p, batch)
		k.parkBuf = batch[:0]
	}
	// w may be a sticky head that is not its bucket's minimum: insert it in order.
	p := b.parked()
	j := sort.Search(len(*p), func(j int) bool { return k.less(w, (*p)[j]) })
	*p = slices.Insert(*p, j, w)
	w.side = b.q ^ 1 + 1
	cq.nParked++
}

// parkOne moves w alone to the inadmissible set, as Kueue does with each
// head it finds inadmissible (requeueIfNotPresent in pkg/cache/queue/
// cluster_queue.go): the workloads behind it are popped, and parked, one
// per cycle. park's bucket-at-once move is the same when nothing changes
// between cycles (gpusim runs them in zero time); the fidelity replay's
// recorded cycles (replay.go) have time, and finishes, between them.
func (k *Kueue) parkOne(w *workload) {
	k.removeFromQueue(w)
	b := w.bk
	p := b.parked()
	j := sort.Search(len(*p), func(j int) bool { return k.less(w, (*p)[j]) })
	*p = slices.Insert(*p, j, w)
	w.side = b.q ^ 1 + 1
	w.cq.nParked++
}

// parkWholeBucket is park's usual case: w is the first of its bucket's queue
// list, so the whole list (w and every workload of no higher priority) moves to
// the inadmissible set. Both lists are sorted by the total order k.less, so
// merging the whole list at once gives the same inadmissible set as park's
// remove-merge-insert. It reports false, doing nothing, in any other case.
func (k *Kueue) parkWholeBucket(w *workload) bool {
	if !w.queued() {
		return false
	}
	b := w.bk
	h := b.heap()
	if (*h)[0] != w {
		return false
	}
	n := len(*h)
	w.cq.nQueued -= n
	w.cq.nParked += n
	if len(*b.parked()) <= n {
		// The queue list becomes the inadmissible set; the old (smaller) set is
		// merged into it and the queue list is left empty.
		old := b.q ^ 1
		b.q = old
		dst := &b.lists[old^1]
		side := old ^ 1 + 1
		for _, o := range b.lists[old] {
			o.side = side
		}
		*dst = k.mergeInto(*dst, b.lists[old])
		clear(b.lists[old])
		b.lists[old] = b.lists[old][:0]
		return true
	}
	side := b.q ^ 1 + 1
	for _, o := range *h {
		o.side = side
	}
	p := b.parked()
	*p = k.mergeInto(*p, *h)
	clear(*h)
	*h = (*h)[:0]
	return true
}

// unpark returns every parked workload of the cohort tree containing cq to its
// queue (BestEffortFIFO requeues inadmissible workloads on relevant events).
// A bucket whose queue is empty just swaps its two lists.
func (k *Kueue) unpark(cq *clusterQueue) {
	for _, c := range cq.peers {
		if c.nParked == 0 {
			continue
		}
		for _, b := range c.buckets {
			p := b.parked()
			if len(*p) == 0 {
				continue
			}
			h := b.heap()
			if len(*h) == 0 {
				b.q ^= 1 // the inadmissible set becomes the queue, O(1)
				continue
			}
			side := b.q + 1
			for _, w := range *p {
				w.side = side
			}
			*h = k.mergeInto(*h, *p)
			clear(*p)
			*p = (*p)[:0]
		}
		c.nQueued += c.nParked
		c.nParked = 0
		k.markActive(c)
	}
}

// mergeInto merges the sorted list src into the sorted list dst in place (from
// the back, growing dst once) and returns it.
func (k *Kueue) mergeInto(dst, src []*workload) []*workload {
	if len(src) == 0 {
		return dst
	}
	if len(dst) == 0 || k.less(dst[len(dst)-1], src[0]) {
		return append(dst, src...)
	}
	n, m := len(dst), len(src)
	dst = slices.Grow(dst, m)[:n+m]
	i, j := n-1, m-1
	for o := n + m - 1; j >= 0; o-- {
		if i >= 0 && k.less(src[j], dst[i]) {
			dst[o] = dst[i]
			i--
		} else {
			dst[o] = src[j]
			j--
		}
	}
	return dst
}
