package placement

import (
	"cmp"
	"math"
	"slices"

	"github.com/gpusim/gpusim/sim"
)

// This file holds the topology index shared by the topology-aware placements
// (topology-best-fit, tas, hived) and the topology-best-fit placer itself. See
// docs/topology.md for how sim levels map to Kueue Topology levels, Volcano
// HyperNode tiers and Slurm switches/blocks.

// topoIndex is static per-cluster data (rebuilt when a placer sees another
// *sim.Cluster): for each level, which domains lie inside one node, which are made
// of whole nodes, and the node lists of multi-node domains.
type topoIndex struct {
	c  *sim.Cluster
	lv [sim.NumLevels]levelIndex
	// spineLeaves lists, per spine domain, its leaf domains (CSR).
	spineStart  []int32
	spineLeaves []int32
	// chain is the HiveD cell hierarchy above single GPUs: levels whose domains
	// nest, strictly growing (duplicates of a smaller level's partition dropped).
	chain []sim.Level
}

type levelIndex struct {
	// nodeLevel: every domain is exactly the GPUs of one node (the node level;
	// NVLink on HGX/DGX servers). Such levels are searched through the cluster's
	// per-model free-count buckets.
	nodeLevel bool
	single    []sim.NodeID // per domain: its node when it lies within one node, else -1
	whole     []bool       // per domain: it is made of whole nodes
	firstGPU  []sim.GPUID  // per domain: its lowest GPU
	maxGPUs   int32        // GPUs of the largest domain
	multi     []int32      // domains spanning several nodes (NVL72 racks, leaves, spines), ascending
	start     []int32      // CSR over domains: nodes of multi-node domains, ascending
	nodes     []sim.NodeID
}

func newTopoIndex(c *sim.Cluster) *topoIndex {
	t := &topoIndex{c: c}
	for l := sim.Level(0); l < sim.NumLevels; l++ {
		doms := c.Domains(l)
		li := &t.lv[l]
		li.single = make([]sim.NodeID, len(doms))
		li.whole = make([]bool, len(doms))
		li.firstGPU = make([]sim.GPUID, len(doms))
		span := make([]int32, len(doms)) // nodes touched
		last := make([]sim.NodeID, len(doms))
		for d := range doms {
			li.single[d] = -1
			li.firstGPU[d] = -1
			last[d] = -1
		}
		for n := sim.NodeID(0); int(n) < c.NumNodes(); n++ {
			first, end := c.NodeGPUs(n)
			for g := first; g < end; g++ {
				d := c.GPUDomain(g, l)
				if li.firstGPU[d] < 0 {
					li.firstGPU[d] = g
				}
				if last[d] != n {
					last[d] = n
					span[d]++
				}
			}
		}
		li.nodeLevel = true
		for d := range doms {
			if li.firstGPU[d] < 0 {
				continue // no GPUs (a leaf or node of CPU-only machines): never a candidate
			}
			li.maxGPUs = max(li.maxGPUs, doms[d].GPUs)
			n := c.GPUNode(li.firstGPU[d])
			if span[d] == 1 {
				li.single[d] = n
				f, e := c.NodeGPUs(n)
				li.whole[d] = doms[d].GPUs == int32(e-f)
			} else {
				li.whole[d] = true
				li.multi = append(li.multi, int32(d))
			}
			if !li.whole[d] || li.single[d] < 0 {
				li.nodeLevel = false
			}
		}
		// node lists of multi-node domains
		li.start = make([]int32, len(doms)+1)
		cnt := make([]int32, len(doms))
		for n := sim.NodeID(0); int(n) < c.NumNodes(); n++ {
			if f, e := c.NodeGPUs(n); e > f {
				if d := c.GPUDomain(f, l); li.single[d] < 0 {
					cnt[d]++
				}
			}
		}
		for d := range doms {
			li.start[d+1] = li.start[d] + cnt[d]
		}
		li.nodes = make([]sim.NodeID, li.start[len(doms)])
		fill := append([]int32(nil), li.start[:len(doms)]...)
		for n := sim.NodeID(0); int(n) < c.NumNodes(); n++ {
			if f, e := c.NodeGPUs(n); e > f {
				if d := c.GPUDomain(f, l); li.single[d] < 0 {
					li.nodes[fill[d]] = n
					fill[d]++
				}
			}
		}
	}
	// spine -> leaves
	leaves := c.Domains(sim.LevelLeaf)
	ns := len(c.Domains(sim.LevelSpine))
	t.spineStart = make([]int32, ns+1)
	for _, lf := range leaves {
		if lf.Parent >= 0 && lf.GPUs > 0 {
			t.spineStart[lf.Parent+1]++
		}
	}
	for i := 0; i < ns; i++ {
		t.spineStart[i+1] += t.spineStart[i]
	}
	t.spineLeaves = make([]int32, t.spineStart[ns])
	fill := append([]int32(nil), t.spineStart[:ns]...)
	for i, lf := range leaves {
		if lf.Parent >= 0 && lf.GPUs > 0 {
			t.spineLeaves[fill[lf.Parent]] = int32(i)
			fill[lf.Parent]++
		}
	}
	t.chain = buddyChain(c)
	return t
}

// buddyChain orders the levels into a chain of strictly coarser partitions, each
// nesting in the next (pcie -> socket -> node -> leaf -> spine on a DGX, where
// the NVLink island is the node; pcie -> node -> NVLink rack -> leaf on NVL72).
// A level that does not nest in the last kept one is left out.
func buddyChain(c *sim.Cluster) []sim.Level {
	type lvl struct {
		l    sim.Level
		doms int
	}
	var ls []lvl
	for l := sim.Level(0); l < sim.NumLevels; l++ {
		n := 0
		for _, d := range c.Domains(l) {
			if d.GPUs > 0 {
				n++
			}
		}
		ls = append(ls, lvl{l, n})
	}
	// finer partitions (more domains) first; ties by level
	slices.SortStableFunc(ls, func(a, b lvl) int { return cmp.Compare(b.doms, a.doms) })
	nests := func(fine, coarse sim.Level) bool {
		up := make(map[int32]int32)
		for g := sim.GPUID(0); int64(g) < c.NumGPUs(); g++ {
			f, k := c.GPUDomain(g, fine), c.GPUDomain(g, coarse)
			if p, ok := up[f]; ok && p != k {
				return false
			}
			up[f] = k
		}
		return true
	}
	var chain []sim.Level
	prevDoms := 0
	for _, x := range ls {
		if len(chain) > 0 {
			prev := chain[len(chain)-1]
			if prevDoms <= x.doms || !nests(prev, x.l) {
				continue // same partition as a finer kept level (NVLink = node), or not nested
			}
		}
		chain = append(chain, x.l)
		prevDoms = x.doms
	}
	return chain
}

// cand is a candidate domain (or node) with its free GPUs and replica capacity;
// take is what a greedy fill assigns to it.
type cand struct {
	id   int32
	free int32
	cap  int32
	take int32
}

// fillOrder is how a greedy fill orders candidates.
type fillOrder uint8

const (
	fillLargest  fillOrder = iota // capacity descending, best-fit the last one (Kueue BestFit)
	fillSmallest                  // capacity ascending (Kueue LeastFreeCapacity: fill gaps)
	fillByID                      // id ascending (HiveD buddy split: lowest cells first)
)

// greedyFill assigns rem replicas over cs (sorted in place by the order, ties by
// lowest id) and returns what could not be placed. With fillLargest the last
// candidate used is best-fitted: the smallest capacity that holds the remainder.
func greedyFill(cs []cand, rem int32, o fillOrder) int32 {
	switch o {
	case fillLargest:
		slices.SortFunc(cs, func(a, b cand) int {
			if a.cap != b.cap {
				return cmp.Compare(b.cap, a.cap)
			}
			return cmp.Compare(a.id, b.id)
		})
	case fillSmallest:
		slices.SortFunc(cs, func(a, b cand) int {
			if a.cap != b.cap {
				return cmp.Compare(a.cap, b.cap)
			}
			return cmp.Compare(a.id, b.id)
		})
	default:
		slices.SortFunc(cs, func(a, b cand) int { return cmp.Compare(a.id, b.id) })
	}
	for i := range cs {
		cs[i].take = 0
	}
	for i := 0; i < len(cs) && rem > 0; i++ {
		if o == fillLargest && cs[i].cap >= rem {
			j := i
			for k := i + 1; k < len(cs) && cs[k].cap >= rem; k++ {
				if cs[k].cap < cs[j].cap {
					j = k
				}
			}
			cs[j].take = rem
			return 0
		}
		t := min(cs[i].cap, rem)
		cs[i].take = t
		rem -= t
	}
	return rem
}

// topo is the per-placer working state: the index and reusable scratch buffers
// (Place allocates nothing once the buffers have grown).
type topo struct {
	ti     *topoIndex
	s      *sim.JobSpec
	m      int // GPU model index of the placement being built
	depth  [3][]cand
	domCap []int32 // scratch per domain
	domSet []int32 // domains touched in domCap
	cands  []cand
}

func (t *topo) index(c *sim.Cluster) *topoIndex {
	if t.ti == nil || t.ti.c != c {
		t.ti = newTopoIndex(c)
	}
	return t.ti
}

// nodeCap is how many replicas of t.s node n can take on free GPUs f (0 for other models).
func (t *topo) nodeCap(c *sim.Cluster, n sim.NodeID, f int32) int32 {
	if c.NodeModel(n) != t.m {
		return 0
	}
	return hostable(c, n, t.s, f, 0)
}

// domainCap is the replica capacity of domain d of level l for model t.m; it
// stops counting at limit (> 0).
func (t *topo) domainCap(c *sim.Cluster, l sim.Level, d int32, limit int32) int32 {
	li := &t.ti.lv[l]
	if n := li.single[d]; n >= 0 {
		return t.nodeCap(c, n, c.DomainFree(l, d))
	}
	var k int32
	for _, n := range li.nodes[li.start[d]:li.start[d+1]] {
		if f := c.NodeFreeGPUs(n); f >= t.s.GPUsPerReplica {
			k += t.nodeCap(c, n, f)
			if k >= limit {
				return k
			}
		}
	}
	return k
}

// place writes r replicas into domain d of level l (whose capacity is known to
// suffice) using the fill order o at every step down the tree.
func (t *topo) place(c *sim.Cluster, l sim.Level, d int32, r int32, o fillOrder, out *Placement) bool {
	li := &t.ti.lv[l]
	if n := li.single[d]; n >= 0 {
		if li.whole[d] {
			return t.takeNode(c, n, sim.NumLevels, -1, r, out)
		}
		return t.takeNode(c, n, l, d, r, out)
	}
	if l == sim.LevelSpine {
		return t.placeLeaves(c, t.ti.spineLeaves[t.ti.spineStart[d]:t.ti.spineStart[d+1]], r, o, 1, out)
	}
	return t.placeNodes(c, li.nodes[li.start[d]:li.start[d+1]], r, o, 2, out)
}

// placeLeaves spreads r replicas over leaf domains (then their nodes).
func (t *topo) placeLeaves(c *sim.Cluster, leaves []int32, r int32, o fillOrder, depth int, out *Placement) bool {
	cs := t.depth[depth][:0]
	for _, lf := range leaves {
		if c.DomainFree(sim.LevelLeaf, lf) < t.s.GPUsPerReplica {
			continue
		}
		if k := t.domainCap(c, sim.LevelLeaf, lf, math.MaxInt32); k > 0 {
			cs = append(cs, cand{id: lf, free: c.DomainFree(sim.LevelLeaf, lf), cap: k})
		}
	}
	t.depth[depth] = cs
	if greedyFill(cs, r, o) > 0 {
		return false
	}
	for i := range cs {
		if cs[i].take > 0 && !t.place(c, sim.LevelLeaf, cs[i].id, cs[i].take, o, out) {
			return false
		}
	}
	return true
}

// placeNodes spreads r replicas over the given nodes.
func (t *topo) placeNodes(c *sim.Cluster, nodes []sim.NodeID, r int32, o fillOrder, depth int, out *Placement) bool {
	cs := t.depth[depth][:0]
	for _, n := range nodes {
		if f := c.NodeFreeGPUs(n); f >= t.s.GPUsPerReplica {
			if k := t.nodeCap(c, n, f); k > 0 {
				cs = append(cs, cand{id: int32(n), free: f, cap: k})
			}
		}
	}
	t.depth[depth] = cs
	if greedyFill(cs, r, o) > 0 {
		return false
	}
	for i := range cs {
		if cs[i].take > 0 && !t.takeNode(c, sim.NodeID(cs[i].id), sim.NumLevels, -1, cs[i].take, out) {
			return false
		}
	}
	return true
}

// placeCluster spreads r replicas over the whole cluster: spines, leaves, nodes.
func (t *topo) placeCluster(c *sim.Cluster, r int32, o fillOrder, out *Placement) bool {
	cs := t.depth[0][:0]
	ns := int32(len(c.Domains(sim.LevelSpine)))
	for sp := int32(0); sp < ns; sp++ {
		if c.DomainFree(sim.LevelSpine, sp) < t.s.GPUsPerReplica {
			continue
		}
		if k := t.domainCap(c, sim.LevelSpine, sp, math.MaxInt32); k > 0 {
			cs = append(cs, cand{id: sp, free: c.DomainFree(sim.LevelSpine, sp), cap: k})
		}
	}
	t.depth[0] = cs
	if greedyFill(cs, r, o) > 0 {
		return false
	}
	for i := range cs {
		if cs[i].take > 0 && !t.place(c, sim.LevelSpine, cs[i].id, cs[i].take, o, out) {
			return false
		}
	}
	return true
}

// takeNode puts r replicas on node n, choosing their GPUs inside domain rd of
// level rl (rl = NumLevels: anywhere on the node): the smallest in-node domain
// (NVLink island, PCIe switch, socket) holding all r x g GPUs, with the fewest
// free GPUs, else the lowest-index free GPUs.
func (t *topo) takeNode(c *sim.Cluster, n sim.NodeID, rl sim.Level, rd int32, r int32, out *Placement) bool {
	need := r * t.s.GPUsPerReplica
	first, end := c.NodeGPUs(n)
	in := func(g sim.GPUID) bool { return rl == sim.NumLevels || c.GPUDomain(g, rl) == rd }
	bestL, bestD := sim.NumLevels, int32(-1)
	var bestSize, bestFree int32 = math.MaxInt32, math.MaxInt32
	for l := sim.Level(0); l < sim.LevelNode; l++ {
		// runs of GPUs sharing a domain of level l (in-node domains are contiguous)
		for g := first; g < end; {
			d := c.GPUDomain(g, l)
			var free int32
			h := g
			for ; h < end && c.GPUDomain(h, l) == d; h++ {
				if in(h) && c.GPUUsed(h) == 0 {
					free++
				}
			}
			size := c.Domains(l)[d].GPUs
			if free >= need && (size < bestSize || size == bestSize && free < bestFree) {
				bestL, bestD, bestSize, bestFree = l, d, size, free
			}
			g = h
		}
	}
	took := int32(0)
	for g := first; g < end && took < need; g++ {
		if c.GPUUsed(g) != 0 || !in(g) || bestL < sim.NumLevels && c.GPUDomain(g, bestL) != bestD {
			continue
		}
		out.GPUs = append(out.GPUs, g)
		took++
	}
	if took < need {
		return false
	}
	for i := int32(0); i < r; i++ {
		out.Nodes = append(out.Nodes, n)
	}
	return true
}

// eachAllowedModel calls f for every GPU model index the job may use that has
// enough whole free GPUs for the gang; f returns false to stop.
func eachAllowedModel(c *sim.Cluster, s *sim.JobSpec, f func(m int) bool) {
	for m, model := range c.Models() {
		if s.AllowsModel(model) && c.ModelFree(m) >= int64(s.TotalGPUs()) {
			if !f(m) {
				return
			}
		}
	}
}

// topologyBestFit packs a whole-GPU gang into the smallest topology domain that
// holds it: the tightest level first (NVLink island, PCIe switch, socket, node,
// leaf, spine, then the whole cluster) and, at that level, the fitting domain
// with the fewest free GPUs (ties: lowest domain id). Inside the domain it fills
// children largest-capacity first and best-fits the last one (fewest nodes and
// leaves used). Fractional and CPU-only jobs are placed as by best-fit.
type topologyBestFit struct {
	topo
	fallback bucketPlacer
}

func newTopologyBestFit() *topologyBestFit {
	return &topologyBestFit{fallback: bucketPlacer{mode: bestFit}}
}

func (p *topologyBestFit) Name() string { return "topology-best-fit" }

// Place implements Placer.
func (p *topologyBestFit) Place(c *sim.Cluster, j *sim.Job, out *Placement) bool {
	s := &j.Spec
	if whole, ok := startWholeGPU(c, j, out, &p.fallback); !whole || !ok {
		return ok
	}
	ti := p.index(c)
	p.s = s
	T := s.TotalGPUs()
	// O(max GPUs per node) upper bound through the buckets: enough replica slots
	// on nodes of one allowed model (ignores CPU/memory)?
	room := false
	eachAllowedModel(c, s, func(m int) bool {
		room = replicaSlots(c, m, s.GPUsPerReplica, s.Replicas) >= int64(s.Replicas)
		return !room
	})
	if !room {
		return false
	}
	// Best-fitting single node (fewest free GPUs, lowest id) over allowed models,
	// through the free-count buckets.
	bestN, bestK, bestM := sim.NodeID(-1), int32(math.MaxInt32), -1
	if T <= c.MaxGPUsPerNode() {
		eachAllowedModel(c, s, func(m int) bool {
			p.m = m
			for k := T; k <= c.MaxGPUsPerNode() && k <= bestK; k++ {
				for n := c.NextNodeWithFree(m, k, 0); n >= 0; n = c.NextNodeWithFree(m, k, n+1) {
					if k == bestK && n > bestN {
						break
					}
					if hostable(c, n, s, k, 0) >= s.Replicas {
						bestN, bestK, bestM = n, k, m
						break
					}
				}
			}
			return true
		})
	}
	if bestN < 0 && s.Replicas == 1 {
		return false // one replica needs one node
	}
	for l := sim.Level(0); l < sim.NumLevels; l++ {
		li := &ti.lv[l]
		bd, bf, bm := int32(-1), int32(math.MaxInt32), -1
		better := func(d, f int32) bool { return f < bf || f == bf && d < bd }
		if bestN >= 0 {
			if li.nodeLevel {
				first, _ := c.NodeGPUs(bestN)
				bd, bf, bm = c.GPUDomain(first, l), bestK, bestM
			} else {
				p.bestSubNode(c, l, func(d, f int32, m int) {
					if better(d, f) {
						bd, bf, bm = d, f, m
					}
				})
			}
		}
		// Multi-node domains at this level, fewest free first.
		cs := p.cands[:0]
		for _, d := range li.multi {
			if f := c.DomainFree(l, d); f >= T && better(d, f) {
				cs = append(cs, cand{id: d, free: f})
			}
		}
		p.cands = cs
		if len(cs) > 0 {
			slices.SortFunc(cs, func(a, b cand) int {
				if a.free != b.free {
					return cmp.Compare(a.free, b.free)
				}
				return cmp.Compare(a.id, b.id)
			})
			found := false
			for _, x := range cs {
				eachAllowedModel(c, s, func(m int) bool {
					p.m = m
					if p.domainCap(c, l, x.id, s.Replicas) >= s.Replicas {
						bd, bf, bm, found = x.id, x.free, m, true
					}
					return !found
				})
				if found {
					break
				}
			}
		}
		if bd >= 0 {
			p.m = bm
			if p.place(c, l, bd, s.Replicas, fillLargest, out) {
				return true
			}
			out.reset()
		}
	}
	ok := false
	eachAllowedModel(c, s, func(m int) bool {
		p.m = m
		if ok = p.placeCluster(c, s.Replicas, fillLargest, out); !ok {
			out.reset()
		}
		return !ok
	})
	return ok
}

// bestSubNode reports, for every node that could hold the gang (free-count
// buckets, T and up), its in-node domains of level l with at least T free GPUs
// and room for the gang.
func (t *topo) bestSubNode(c *sim.Cluster, l sim.Level, f func(d, free int32, m int)) {
	s := t.s
	T := s.TotalGPUs()
	li := &t.ti.lv[l]
	eachAllowedModel(c, s, func(m int) bool {
		t.m = m
		for k := T; k <= c.MaxGPUsPerNode(); k++ {
			for n := c.NextNodeWithFree(m, k, 0); n >= 0; n = c.NextNodeWithFree(m, k, n+1) {
				first, end := c.NodeGPUs(n)
				prev := int32(-1)
				for g := first; g < end; g++ {
					d := c.GPUDomain(g, l)
					if d == prev || li.single[d] < 0 {
						continue
					}
					prev = d
					if fr := c.DomainFree(l, d); fr >= T && hostable(c, n, s, fr, 0) >= s.Replicas {
						f(d, fr, m)
					}
				}
			}
		}
		return true
	})
}

// replicaSlots is an upper bound on the replicas of g GPUs the nodes of model m
// can take now (whole free GPUs only), counted through the free-count buckets;
// it stops at limit.
func replicaSlots(c *sim.Cluster, m int, g int32, limit int32) int64 {
	var k int64
	for f := c.MaxGPUsPerNode(); f >= g && f > 0; f-- {
		k += int64(c.CountNodesWithFree(m, f)) * int64(f/g)
		if k >= int64(limit) {
			return k
		}
	}
	return k
}

// startWholeGPU is the common start of the topology placers: fractional and
// CPU-only jobs go to the best-fit fallback (whole is false, ok its result); for a
// whole-GPU gang it resets out and applies the O(1) capacity check (whole is true,
// ok false when the gang cannot fit now).
func startWholeGPU(c *sim.Cluster, j *sim.Job, out *Placement, fallback *bucketPlacer) (whole, ok bool) {
	s := &j.Spec
	if s.GPUsPerReplica == 0 || s.Fractional() {
		return false, fallback.Place(c, j, out)
	}
	out.reset()
	return true, QuickFit(c, s)
}
