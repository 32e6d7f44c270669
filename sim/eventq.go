package sim

// qitem is an entry of the engine's event queue. Arrivals are not queued: they are
// streamed from the sorted job list and merged with the queue by (time, kind).
type qitem struct {
	t    Time
	kind uint8 // qEnd < (arrivals) < qWake
	seq  uint64
	job  JobRef
	gen  int32
}

const (
	qEnd     uint8 = 0
	qArrival uint8 = 1
	qWake    uint8 = 2
	qReconf  uint8 = 3 // a MIG reconfiguration completes (job = the GPU)
)

func (a *qitem) less(b *qitem) bool {
	if a.t != b.t {
		return a.t < b.t
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	return a.seq < b.seq
}

// eventQueue is a binary min-heap of qitems ordered by (t, kind, seq): a total order,
// so equal-time events pop in a fixed order regardless of heap internals.
type eventQueue struct{ h []qitem }

func (q *eventQueue) Len() int { return len(q.h) }

func (q *eventQueue) top() *qitem { return &q.h[0] }

func (q *eventQueue) push(it qitem) {
	q.h = append(q.h, it)
	i := len(q.h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !q.h[i].less(&q.h[p]) {
			break
		}
		q.h[i], q.h[p] = q.h[p], q.h[i]
		i = p
	}
}

func (q *eventQueue) pop() qitem {
	it := q.h[0]
	n := len(q.h) - 1
	q.h[0] = q.h[n]
	q.h = q.h[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && q.h[r].less(&q.h[l]) {
			m = r
		}
		if !q.h[m].less(&q.h[i]) {
			break
		}
		q.h[i], q.h[m] = q.h[m], q.h[i]
		i = m
	}
	return it
}
