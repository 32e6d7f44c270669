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
	heap   []*workload // queued, sorted by k.less
	parked []*workload // inadmissible, sorted by k.less
}

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
	if w.queued {
		return
	}
	b := k.bucketFor(w)
	i := sort.Search(len(b.heap), func(i int) bool { return k.less(w, b.heap[i]) })
	b.heap = slices.Insert(b.heap, i, w)
	w.queued = true
	w.cq.nQueued++
}

// removeFromQueue takes w out of its queue or the inadmissible set.
func (k *Kueue) removeFromQueue(w *workload) {
	b := w.bk
	if w.queued {
		i := sort.Search(len(b.heap), func(i int) bool { return !k.less(b.heap[i], w) })
		if i < len(b.heap) && b.heap[i] == w {
			b.heap = slices.Delete(b.heap, i, i+1)
		}
		w.queued = false
		w.cq.nQueued--
	}
	if w.parked {
		i := sort.Search(len(b.parked), func(i int) bool { return !k.less(b.parked[i], w) })
		if i < len(b.parked) && b.parked[i] == w {
			b.parked = slices.Delete(b.parked, i, i+1)
		}
		w.parked = false
		w.cq.nParked--
	}
}

// minHead returns the first queued workload of cq in queue order, or nil.
func (k *Kueue) minHead(cq *clusterQueue) *workload {
	var best *workload
	for _, b := range cq.buckets {
		if len(b.heap) > 0 && (best == nil || k.less(b.heap[0], best)) {
			best = b.heap[0]
		}
	}
	return best
}

// park moves w (just found inadmissible) and every queued workload of its bucket
// with no higher priority to the inadmissible set.
func (k *Kueue) park(w *workload) {
	k.removeFromQueue(w)
	b := w.bk
	cq := w.cq
	i := sort.Search(len(b.heap), func(i int) bool { return b.heap[i].prio <= w.prio })
	batch := append(k.parkBuf[:0], b.heap[i:]...)
	for _, o := range batch {
		o.queued, o.parked = false, true
	}
	cq.nQueued -= len(batch)
	clear(b.heap[i:])
	b.heap = b.heap[:i]
	// w may be a sticky head that is not its bucket's minimum: insert it in order.
	j := sort.Search(len(batch), func(j int) bool { return k.less(w, batch[j]) })
	batch = slices.Insert(batch, j, w)
	w.parked = true
	cq.nParked += len(batch)
	b.parked = k.mergeInto(b.parked, batch)
	k.parkBuf = batch[:0]
}

// unpark returns every parked workload of the cohort tree containing cq to its
// queue (BestEffortFIFO requeues inadmissible workloads on relevant events).
func (k *Kueue) unpark(cq *clusterQueue) {
	for _, c := range cq.peers {
		if c.nParked == 0 {
			continue
		}
		for _, b := range c.buckets {
			if len(b.parked) == 0 {
				continue
			}
			for _, w := range b.parked {
				w.parked, w.queued = false, true
			}
			if len(b.heap) == 0 {
				b.heap, b.parked = b.parked, b.heap[:0]
			} else {
				b.heap = k.mergeInto(b.heap, b.parked)
				clear(b.parked)
				b.parked = b.parked[:0]
			}
		}
		c.nQueued += c.nParked
		c.nParked = 0
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
