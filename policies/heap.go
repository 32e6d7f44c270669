package policies

import "github.com/gpusim/gpusim/sim"

// jobHeap is an indexed binary min-heap of jobs under a total order (less must end
// with a JobRef tie-break). It supports removal by job and in-order iteration of
// the first k elements in O(k log k) without modifying the heap.
type jobHeap struct {
	h    []*sim.Job
	pos  []int32 // by JobRef; -1 = absent
	less func(a, b *sim.Job) bool
	aux  []int32 // scratch for ordered iteration
}

func newJobHeap(n int, less func(a, b *sim.Job) bool) *jobHeap {
	pos := make([]int32, n)
	for i := range pos {
		pos[i] = -1
	}
	return &jobHeap{pos: pos, less: less}
}

func (q *jobHeap) Len() int { return len(q.h) }

func (q *jobHeap) push(j *sim.Job) {
	if int(j.Ref) >= len(q.pos) {
		// A job submitted after the policy's first call (live runs:
		// sim.Live.Submit) is beyond the table sized then.
		for len(q.pos) <= int(j.Ref) {
			q.pos = append(q.pos, -1)
		}
	}
	if q.pos[j.Ref] >= 0 {
		return
	}
	q.h = append(q.h, j)
	q.pos[j.Ref] = int32(len(q.h) - 1)
	q.up(len(q.h) - 1)
}

func (q *jobHeap) remove(j *sim.Job) {
	if int(j.Ref) >= len(q.pos) {
		return
	}
	i := int(q.pos[j.Ref])
	if i < 0 {
		return
	}
	last := len(q.h) - 1
	q.swap(i, last)
	q.h = q.h[:last]
	q.pos[j.Ref] = -1
	if i < last {
		q.down(i)
		q.up(i)
	}
}

func (q *jobHeap) swap(a, b int) {
	q.h[a], q.h[b] = q.h[b], q.h[a]
	q.pos[q.h[a].Ref] = int32(a)
	q.pos[q.h[b].Ref] = int32(b)
}

func (q *jobHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(q.h[i], q.h[p]) {
			return
		}
		q.swap(i, p)
		i = p
	}
}

func (q *jobHeap) down(i int) {
	n := len(q.h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && q.less(q.h[r], q.h[l]) {
			m = r
		}
		if !q.less(q.h[m], q.h[i]) {
			return
		}
		q.swap(i, m)
		i = m
	}
}

// each visits jobs in heap order (ascending by less) until f returns false. The
// heap must not be modified during the iteration; collect first if needed.
func (q *jobHeap) each(f func(*sim.Job) bool) {
	if len(q.h) == 0 {
		return
	}
	aux := q.aux[:0]
	aux = append(aux, 0)
	lessIdx := func(a, b int32) bool { return q.less(q.h[a], q.h[b]) }
	for len(aux) > 0 {
		// pop min of aux
		top := aux[0]
		last := len(aux) - 1
		aux[0] = aux[last]
		aux = aux[:last]
		for i := 0; ; {
			l := 2*i + 1
			if l >= len(aux) {
				break
			}
			m := l
			if r := l + 1; r < len(aux) && lessIdx(aux[r], aux[l]) {
				m = r
			}
			if !lessIdx(aux[m], aux[i]) {
				break
			}
			aux[i], aux[m] = aux[m], aux[i]
			i = m
		}
		if !f(q.h[top]) {
			break
		}
		for _, c := range [2]int32{2*top + 1, 2*top + 2} {
			if int(c) < len(q.h) {
				aux = append(aux, c)
				for i := len(aux) - 1; i > 0; {
					p := (i - 1) / 2
					if !lessIdx(aux[i], aux[p]) {
						break
					}
					aux[i], aux[p] = aux[p], aux[i]
					i = p
				}
			}
		}
	}
	q.aux = aux[:0]
}
