package placement

import (
	"math"

	"github.com/gpusim/gpusim/sim"
)

// hivedPlacer is HiveD-style buddy cell allocation (policies.md 4.11) on the
// physical cluster, without virtual clusters. Cells form a chain GPU -> PCIe
// switch / NVLink island -> socket -> node -> leaf -> spine (the levels whose
// domains nest; see topoIndex.chain). A gang of T GPUs takes a free cell (all its
// GPUs free) at the lowest level whose cells hold T GPUs and the gang's replicas;
// among free cells it prefers the buddies of used cells: the cell whose highest
// wholly free ancestor is lowest (so a free cell under a split parent goes before
// splitting a larger free cell); ties go to the cell on the node with the fewest
// free GPUs, then the lowest id (cells spanning nodes after single-node ones). Inside the cell replicas fill
// nodes and GPUs in id order (the buddy split). When no free cell holds the gang,
// strict=true leaves it waiting (ReasonTopology); the default (strict=false) packs
// it onto free GPUs of used cells as topology-best-fit does.
type hivedPlacer struct {
	topo
	strict   bool
	packed   *topologyBestFit
	fallback bucketPlacer
}

func newHived(a *placerArgs) (Placer, error) {
	strict, err := a.boolean("strict", false)
	if err != nil {
		return nil, err
	}
	return &hivedPlacer{strict: strict, packed: newTopologyBestFit(), fallback: bucketPlacer{mode: bestFit}}, a.done()
}

func (p *hivedPlacer) Name() string { return "hived" }

// Place implements Placer.
func (p *hivedPlacer) Place(c *sim.Cluster, j *sim.Job, out *Placement) bool {
	s := &j.Spec
	if whole, ok := startWholeGPU(c, j, out, &p.fallback); !whole || !ok {
		return ok
	}
	p.index(c)
	p.s = s
	ok := false
	eachAllowedModel(c, s, func(m int) bool {
		p.m = m
		ok = p.placeModel(c, out)
		if !ok {
			out.reset()
		}
		return !ok
	})
	if ok || p.strict {
		return ok
	}
	return p.packed.Place(c, j, out)
}

// height is the chain index of the highest wholly free ancestor of the cell at
// chain index ci that contains GPU g (ci itself when its parent is in use).
func (p *hivedPlacer) height(c *sim.Cluster, ci int, g sim.GPUID) int {
	ch := p.ti.chain
	h := ci
	for cj := ci + 1; cj < len(ch); cj++ {
		l := ch[cj]
		d := c.GPUDomain(g, l)
		if c.DomainFree(l, d) != c.Domains(l)[d].GPUs {
			break
		}
		h = cj
	}
	return h
}

func (p *hivedPlacer) placeModel(c *sim.Cluster, out *Placement) bool {
	s := p.s
	T := s.TotalGPUs()
	ch := p.ti.chain
	// Candidates are visited by (free GPUs of their node, node id, id), so the
	// first with the lowest possible height wins and ends the search.
	if T == 1 {
		// single-GPU cells: any free GPU, preferring one whose parent cell is used
		bestG, bestH := sim.GPUID(-1), math.MaxInt
	search:
		for k := int32(1); k <= c.MaxGPUsPerNode(); k++ {
			for n := c.NextNodeWithFree(p.m, k, 0); n >= 0; n = c.NextNodeWithFree(p.m, k, n+1) {
				if hostable(c, n, s, k, 0) == 0 {
					continue
				}
				first, end := c.NodeGPUs(n)
				for g := first; g < end; g++ {
					if c.GPUUsed(g) != 0 {
						continue
					}
					h := -1
					if len(ch) > 0 {
						l := ch[0]
						if d := c.GPUDomain(g, l); c.DomainFree(l, d) == c.Domains(l)[d].GPUs {
							h = p.height(c, 0, g)
						}
					}
					if h < bestH {
						bestG, bestH = g, h
						if h == -1 {
							break search
						}
					}
				}
			}
		}
		if bestG < 0 {
			return false
		}
		out.GPUs = append(out.GPUs, bestG)
		out.Nodes = append(out.Nodes, c.GPUNode(bestG))
		return true
	}
	for ci, l := range ch {
		li := &p.ti.lv[l]
		if li.maxGPUs < T {
			continue // cells too small
		}
		doms := c.Domains(l)
		bestD, bestH := int32(-1), math.MaxInt
		consider := func(d int32) {
			if doms[d].GPUs < T || c.DomainFree(l, d) != doms[d].GPUs {
				return
			}
			if h := p.height(c, ci, li.firstGPU[d]); h < bestH && p.domainCap(c, l, d, s.Replicas) >= s.Replicas {
				bestD, bestH = d, h
			}
		}
	cells:
		for k := T; k <= c.MaxGPUsPerNode(); k++ {
			for n := c.NextNodeWithFree(p.m, k, 0); n >= 0; n = c.NextNodeWithFree(p.m, k, n+1) {
				first, end := c.NodeGPUs(n)
				prev := int32(-1)
				for g := first; g < end; g++ {
					if d := c.GPUDomain(g, l); d != prev {
						prev = d
						if li.single[d] >= 0 {
							consider(d)
							if bestH == ci {
								break cells
							}
						}
					}
				}
			}
		}
		if bestH > ci {
			for _, d := range li.multi { // cells spanning nodes come after single-node ones
				consider(d)
			}
		}
		if bestD >= 0 {
			return p.place(c, l, bestD, s.Replicas, fillByID, out)
		}
	}
	return false
}
