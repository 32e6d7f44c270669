package placement

import (
	"fmt"
	"math"

	"github.com/gpusim/gpusim/sim"
)

// tasKind is a Kueue TAS PodSet topology request.
type tasKind uint8

const (
	tasUnconstrained tasKind = iota // podset-unconstrained-topology (and the implied default)
	tasRequired                     // podset-required-topology: one domain of the level, or wait
	tasPreferred                    // podset-preferred-topology: that level, else one level up, ..., else spread
)

// tasPlacer emulates Kueue Topology Aware Scheduling (policies.md 1.10) for
// whole-GPU gangs: capacity is counted in replicas (pods) per domain, summed up the
// tree; at the requested level BestFit picks the fitting domain with the smallest
// capacity and descends filling children largest-first and best-fitting the last;
// LeastFreeCapacity fills children smallest-first. Every job gets the request
// given in the placement arguments (per-job annotations are not modelled yet).
// Fractional and CPU-only jobs are placed as by best-fit.
type tasPlacer struct {
	topo
	kind     tasKind
	level    sim.Level
	order    fillOrder
	fallback bucketPlacer
}

// newTAS parses "tas:required=LEVEL|preferred=LEVEL|unconstrained=true,algorithm=best-fit|least-free-capacity".
func newTAS(a *placerArgs) (Placer, error) {
	p := &tasPlacer{kind: tasUnconstrained, level: sim.LevelNode, fallback: bucketPlacer{mode: bestFit}}
	req, hasReq, err := a.level("required")
	if err != nil {
		return nil, err
	}
	pref, hasPref, err := a.level("preferred")
	if err != nil {
		return nil, err
	}
	unc, err := a.boolean("unconstrained", false)
	if err != nil {
		return nil, err
	}
	n := 0
	for _, b := range []bool{hasReq, hasPref, unc} {
		if b {
			n++
		}
	}
	if n > 1 {
		return nil, fmt.Errorf("required, preferred and unconstrained: give at most one")
	}
	switch {
	case hasReq:
		p.kind, p.level = tasRequired, req
	case hasPref:
		p.kind, p.level = tasPreferred, pref
	}
	p.order = fillLargest
	if p.kind == tasUnconstrained {
		p.order = fillSmallest
	}
	if alg, ok := a.str("algorithm"); ok {
		switch alg {
		case "best-fit":
			p.order = fillLargest
		case "least-free-capacity":
			p.order = fillSmallest
		default:
			return nil, fmt.Errorf("algorithm: want best-fit or least-free-capacity, got %q", alg)
		}
	}
	return p, a.done()
}

func (p *tasPlacer) Name() string { return "tas" }

// Place implements Placer.
func (p *tasPlacer) Place(c *sim.Cluster, j *sim.Job, out *Placement) bool {
	s := &j.Spec
	if whole, ok := startWholeGPU(c, j, out, &p.fallback); !whole || !ok {
		return ok
	}
	p.index(c)
	p.s = s
	ok := false
	eachAllowedModel(c, s, func(m int) bool {
		p.m = m
		if replicaSlots(c, m, s.GPUsPerReplica, s.Replicas) < int64(s.Replicas) {
			return true
		}
		if ok = p.placeModel(c, out); !ok {
			out.reset()
		}
		return !ok
	})
	return ok
}

func (p *tasPlacer) placeModel(c *sim.Cluster, out *Placement) bool {
	s := p.s
	if p.kind == tasUnconstrained {
		// Any nodes, no compactness: greedy over all nodes of the model.
		cs := p.depth[2][:0]
		for k := s.GPUsPerReplica; k <= c.MaxGPUsPerNode(); k++ {
			for n := c.NextNodeWithFree(p.m, k, 0); n >= 0; n = c.NextNodeWithFree(p.m, k, n+1) {
				if h := hostable(c, n, s, k, 0); h > 0 {
					cs = append(cs, cand{id: int32(n), free: k, cap: h})
				}
			}
		}
		p.depth[2] = cs
		if greedyFill(cs, s.Replicas, p.order) > 0 {
			return false
		}
		for i := range cs {
			if cs[i].take > 0 && !p.takeNode(c, sim.NodeID(cs[i].id), sim.NumLevels, -1, cs[i].take, out) {
				return false
			}
		}
		return true
	}
	for l := p.level; l < sim.NumLevels; l++ {
		if d := p.smallestFitting(c, l); d >= 0 {
			return p.place(c, l, d, s.Replicas, p.order, out)
		}
		if p.kind == tasRequired {
			return false
		}
	}
	// preferred, and no single top-level domain fits: spread over top-level domains.
	return p.placeCluster(c, s.Replicas, p.order, out)
}

// smallestFitting returns the domain of level l with the smallest replica
// capacity that still holds the gang (ties: lowest id), or -1.
func (p *tasPlacer) smallestFitting(c *sim.Cluster, l sim.Level) int32 {
	s := p.s
	li := &p.ti.lv[l]
	if len(p.domCap) < len(c.Domains(l)) {
		p.domCap = make([]int32, len(c.Domains(l)))
	}
	p.domSet = p.domSet[:0]
	add := func(d, k int32) {
		if p.domCap[d] == 0 {
			p.domSet = append(p.domSet, d)
		}
		p.domCap[d] += k
	}
	for k := s.GPUsPerReplica; k <= c.MaxGPUsPerNode(); k++ {
		for n := c.NextNodeWithFree(p.m, k, 0); n >= 0; n = c.NextNodeWithFree(p.m, k, n+1) {
			first, end := c.NodeGPUs(n)
			if d := c.GPUDomain(first, l); li.single[d] < 0 || li.whole[d] {
				if h := hostable(c, n, s, k, 0); h > 0 {
					add(d, h)
				}
				continue
			}
			prev := int32(-1)
			for g := first; g < end; g++ {
				d := c.GPUDomain(g, l)
				if d == prev {
					continue
				}
				prev = d
				if f := c.DomainFree(l, d); f >= s.GPUsPerReplica {
					if h := hostable(c, n, s, f, 0); h > 0 {
						add(d, h)
					}
				}
			}
		}
	}
	best, bestCap := int32(-1), int32(math.MaxInt32)
	for _, d := range p.domSet {
		if k := p.domCap[d]; k >= s.Replicas && (k < bestCap || k == bestCap && d < best) {
			best, bestCap = d, k
		}
		p.domCap[d] = 0
	}
	return best
}
