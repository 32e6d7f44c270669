package sim

import (
	"cmp"
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// DistKind is the family of a failure or repair time distribution.
type DistKind uint8

// Distribution families.
const (
	DistExponential DistKind = iota // memoryless; Mean is the mean
	DistWeibull                     // Shape k and Scale λ: mean = λ·Γ(1+1/k)
	DistFixed                       // always Mean
)

// Dist is a distribution of a duration (time to failure, time to repair).
type Dist struct {
	Kind  DistKind
	Mean  Duration // exponential and fixed
	Shape float64  // Weibull k (> 0; < 1: infant mortality, > 1: wear-out)
	Scale Duration // Weibull λ
}

// MeanValue returns the distribution's mean.
func (d Dist) MeanValue() Duration {
	if d.Kind == DistWeibull {
		return Duration(float64(d.Scale) * math.Gamma(1+1/d.Shape))
	}
	return d.Mean
}

// Sample draws one value (at least 1 µs) from r by inversion: exponential
// −mean·ln(U), Weibull λ·(−ln U)^(1/k).
func (d Dist) Sample(r *rand.Rand) Duration {
	var x float64
	switch d.Kind {
	case DistFixed:
		return max(1, d.Mean)
	case DistWeibull:
		u := 1 - r.Float64() // (0, 1]
		x = float64(d.Scale) * math.Pow(-math.Log(u), 1/d.Shape)
	default:
		u := 1 - r.Float64()
		x = -float64(d.Mean) * math.Log(u)
	}
	if x > float64(math.MaxInt64/4) {
		return Duration(math.MaxInt64 / 4)
	}
	return max(1, Duration(x))
}

// FailureTarget is one independent unit of a failure process: a GPU, or a set of
// nodes that fail together (one node, a rack, a leaf switch's nodes, a PDU's).
type FailureTarget struct {
	GPU   GPUID    // the GPU (GPU processes); -1 for node sets
	Nodes []NodeID // the nodes (node-set processes)
	TTF   Dist     // time to failure, measured from the end of its last repair
}

// FailureProcess is a renewal process over targets: each target fails after a
// draw of its TTF, is repaired after a draw of Repair, and fails again after a
// fresh TTF. Draws come from the process's own RNG stream, in event order.
type FailureProcess struct {
	Name    string // names the RNG stream ("failures/<name>") and Incident.Cause
	Targets []FailureTarget
	Repair  Dist
	Planned bool
}

// FailureSource yields incidents in nondecreasing time order. Next returns false
// when there are no more.
type FailureSource interface {
	Next() (Incident, bool)
}

// IncidentList is a FailureSource over a fixed list (sorted by NewIncidentList).
type IncidentList struct {
	inc []Incident
	i   int
}

// NewIncidentList sorts a copy of inc by (At, input order) and serves it.
func NewIncidentList(inc []Incident) *IncidentList {
	l := &IncidentList{inc: append([]Incident(nil), inc...)}
	sortIncidents(l.inc)
	return l
}

// Next returns the next incident.
func (l *IncidentList) Next() (Incident, bool) {
	if l.i >= len(l.inc) {
		return Incident{}, false
	}
	l.i++
	return l.inc[l.i-1], true
}

func sortIncidents(inc []Incident) {
	slices.SortStableFunc(inc, func(a, b Incident) int { return cmp.Compare(a.At, b.At) })
}

// Generator merges renewal processes and fixed incident lists into one
// FailureSource. It is deterministic: ties in time go to the lower process
// index, then the lower target index.
type Generator struct {
	per   []periodic
	procs []FailureProcess
	rng   []*rand.Rand
	h     genHeap
	fixed []Incident
	fi    int
}

type genItem struct {
	t    Time
	p, k int32
}

type genHeap []genItem

func (h genHeap) Len() int { return len(h) }
func (h genHeap) Less(a, b int) bool {
	if h[a].t != h[b].t {
		return h[a].t < h[b].t
	}
	if h[a].p != h[b].p {
		return h[a].p < h[b].p
	}
	return h[a].k < h[b].k
}
func (h genHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *genHeap) Push(x any)   { *h = append(*h, x.(genItem)) }
func (h *genHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

// NewGenerator builds a generator over procs (streams from seed) and fixed
// incidents (a failure log, maintenance windows), merged by time; at equal times
// fixed incidents come first.
func NewGenerator(seed uint64, procs []FailureProcess, fixed []Incident) (*Generator, error) {
	g := &Generator{procs: procs, fixed: append([]Incident(nil), fixed...)}
	sortIncidents(g.fixed)
	for p := range procs {
		pr := &procs[p]
		if pr.Name == "" {
			return nil, fmt.Errorf("failure process %d: no name", p)
		}
		r := Stream(seed, "failures/"+pr.Name)
		g.rng = append(g.rng, r)
		for k := range pr.Targets {
			g.h = append(g.h, genItem{t: Time(pr.Targets[k].TTF.Sample(r)), p: int32(p), k: int32(k)})
		}
	}
	heap.Init(&g.h)
	return g, nil
}

// periodic is a rolling schedule: window k begins at start + k·every and
// takes groups[k mod len(groups)] down for dur.
type periodic struct {
	groups [][]NodeID
	next   Time
	every  Duration
	dur    Duration
	k      int
}

// AddPeriodic adds a rolling planned-maintenance schedule (Incident.Planned,
// Cause "maintenance"): window k at start + k·every takes groups[k mod
// len(groups)] down for dur. At equal times it comes after fixed incidents and
// before random ones.
func (g *Generator) AddPeriodic(groups [][]NodeID, start Time, every, dur Duration) {
	if len(groups) == 0 || every <= 0 {
		return
	}
	g.per = append(g.per, periodic{groups: groups, next: start, every: every, dur: dur})
}

// Next returns the next incident in time order.
func (g *Generator) Next() (Incident, bool) {
	tr := Never
	if len(g.h) > 0 {
		tr = g.h[0].t
	}
	pi := -1
	for i := range g.per {
		if pi < 0 || g.per[i].next < g.per[pi].next {
			pi = i
		}
	}
	tp := Never
	if pi >= 0 {
		tp = g.per[pi].next
	}
	if g.fi < len(g.fixed) && g.fixed[g.fi].At <= min(tr, tp) {
		g.fi++
		return g.fixed[g.fi-1], true
	}
	if pi >= 0 && tp <= tr && tp != Never {
		p := &g.per[pi]
		inc := Incident{At: p.next, Repair: p.dur, GPU: -1, Nodes: p.groups[p.k%len(p.groups)], Planned: true, Cause: "maintenance"}
		p.k++
		p.next = p.next.Add(p.every)
		return inc, true
	}
	if len(g.h) == 0 {
		return Incident{}, false
	}
	it := &g.h[0]
	pr := &g.procs[it.p]
	r := g.rng[it.p]
	tg := &pr.Targets[it.k]
	inc := Incident{At: it.t, Repair: pr.Repair.Sample(r), GPU: tg.GPU, Nodes: tg.Nodes, Planned: pr.Planned, Cause: pr.Name}
	next := it.t.Add(inc.Repair).Add(tg.TTF.Sample(r))
	if next < it.t { // overflow
		next = Never
	}
	it.t = next
	heap.Fix(&g.h, 0)
	return inc, true
}
