package volcano

import (
	"math"

	"github.com/gpusim/gpusim/sim"
)

// initHyperNodes maps every node to its HyperNode at each configured tier (a
// topology domain at the tier's sim level; CPU-only nodes are their own
// HyperNode below the leaf level).
func (s *Volcano) initHyperNodes(c *sim.Cluster) {
	nt := s.cfg.netTopo
	if nt == nil {
		return
	}
	s.nodeDom = make([][]int32, len(nt.tiers))
	for t, l := range nt.tiers {
		s.nodeDom[t] = make([]int32, c.NumNodes())
		for n := range c.NumNodes() {
			ns := c.Node(sim.NodeID(n))
			switch {
			case ns.GPUs > 0:
				first, _ := c.NodeGPUs(sim.NodeID(n))
				s.nodeDom[t][n] = c.GPUDomain(first, l)
			case l == sim.LevelLeaf:
				s.nodeDom[t][n] = ns.Leaf
			case l == sim.LevelSpine:
				s.nodeDom[t][n] = ns.Spine
			default:
				s.nodeDom[t][n] = -1 - int32(n)
			}
		}
	}
}

// topoJob reports whether vj carries the networkTopology constraint.
func (s *Volcano) topoJob(vj *vjob) bool {
	nt := s.cfg.netTopo
	return nt != nil && vj.j.Spec.Replicas >= nt.minReplicas
}

// placeTopo is allocate for a job with a network topology (network-topology-aware
// plugin, hard mode): tiers are tried tightest first up to highestTierAllowed; at a
// tier, every HyperNode whose future-idle resources cover the job's minResources is
// dry-run; the first tier with a feasible HyperNode places the job in the one with
// the best HyperNode score (Σ_r (used_r + req_r)/allocatable_r / #r over the job's
// total request, ×100; ties: lowest domain id). Soft mode falls back to the whole
// cluster when no HyperNode fits. On success the job's tasks are charged as by
// tryPlace.
func (s *Volcano) placeTopo(vj *vjob) bool {
	nt := s.cfg.netTopo
	c := s.v.Cluster()
	defer func() { s.restrictTier = -1 }()
	for t := 0; t < nt.highest && t < len(nt.tiers); t++ {
		// Aggregate capacity, use and future-idle resources per HyperNode.
		type agg struct {
			capR, used, fut res
		}
		doms := map[int32]*agg{}
		var order []int32
		for n := sim.NodeID(0); int(n) < c.NumNodes(); n++ {
			if !s.predicate(vj, n) {
				continue
			}
			d := s.nodeDom[t][n]
			a := doms[d]
			if a == nil {
				a = &agg{}
				doms[d] = a
				order = append(order, d)
			}
			a.capR = add(a.capR, s.nodeCap[n])
			a.used = add(a.used, s.used(n))
			a.fut = add(a.fut, s.future(n))
		}
		best, bestScore := int32(0), math.Inf(-1)
		found := false
		for _, d := range order {
			a := doms[d]
			if !lessEqualOn(vj.min, a.fut, vj.min) {
				continue
			}
			s.restrictTier, s.restrictDom = t, d
			if !s.tryPlace(vj) {
				continue
			}
			s.unplace(vj)
			var sc float64
			var k int
			for r := range numDims {
				if vj.min[r] == 0 || a.capR[r] == 0 {
					continue
				}
				f := (a.used[r] + vj.min[r]) / a.capR[r]
				if f > 1+eps {
					sc, k = 0, 1
					break
				}
				sc += f
				k++
			}
			if k > 0 {
				sc = sc / float64(k) * 100
			}
			if !found || sc > bestScore+eps || math.Abs(sc-bestScore) <= eps && d < best {
				best, bestScore, found = d, sc, true
			}
		}
		if found {
			s.restrictTier, s.restrictDom = t, best
			return s.tryPlace(vj)
		}
	}
	s.restrictTier = -1
	if nt.soft {
		return s.tryPlace(vj)
	}
	vj.reason = sim.ReasonTopology
	return false
}
