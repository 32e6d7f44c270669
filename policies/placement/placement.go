package placement

import (
	"fmt"
	"strings"

	"github.com/gpusim/gpusim/sim"
)

// Placer chooses where a job's gang would run on the cluster's current free
// capacity. Place must not modify the cluster; it writes the placement into out
// (reusing out's buffers) and reports whether the whole gang fits. Every replica of
// a gang uses GPUs of one model. Ties are broken by the lowest node id, then the
// lowest GPU index, so placement is deterministic.
type Placer interface {
	Name() string
	Place(c *sim.Cluster, j *sim.Job, out *Placement) bool
}

// Placement is a candidate placement: replica r on Nodes[r] with
// GPUs[r*g:(r+1)*g] (sim.ReplicaSlice: an unequal gang's last replica is cut
// short at the end of GPUs).
type Placement struct {
	Nodes []sim.NodeID
	GPUs  []sim.GPUID
	// Allow, when set by the caller before Place, restricts the placement to the
	// nodes for which it returns true (a Slurm partition's free nodes, the nodes a
	// Volcano predicate admits). Place never returns a node it refuses. The
	// bucket placements and the FGD family search only allowed nodes
	// (HonoursAllow); the topology-aware ones search as usual and refuse a result
	// that uses a refused node (they may then miss a placement a restricted
	// search would find).
	Allow func(sim.NodeID) bool
	used  []nodeUse // scratch: replicas already put on a node during this Place
}

func (p *Placement) allowed(n sim.NodeID) bool { return p.Allow == nil || p.Allow(n) }

// HonoursAllow reports whether p searches only the nodes Placement.Allow admits
// (first-fit, best-fit, spread and the FGD family), so that a restricted search
// finds a placement whenever one exists among them. The topology-aware
// placements do not: a policy that must restrict nodes (a Slurm partition, a
// Volcano HyperNode) accepts only placements for which this is true.
func HonoursAllow(p Placer) bool {
	switch q := p.(type) {
	case *bucketPlacer:
		return true
	case *coLocating:
		_, ok := q.Placer.(*fgdPlacer)
		return ok
	}
	return false
}

// allAllowed reports whether every node of the placement is allowed.
func (p *Placement) allAllowed() bool {
	if p.Allow == nil {
		return true
	}
	for _, n := range p.Nodes {
		if !p.Allow(n) {
			return false
		}
	}
	return true
}

type nodeUse struct {
	node sim.NodeID
	n    int32
}

func (p *Placement) reset() {
	p.Nodes = p.Nodes[:0]
	p.GPUs = p.GPUs[:0]
	p.used = p.used[:0]
}

// Names lists the built-in placements (docs/topology.md describes the
// topology-aware ones and their arguments, docs/packer.md "pack").
var Names = []string{"first-fit", "best-fit", "spread", "topology-best-fit", "tas", "hived", "binpack", "fgd", "pack"}

// New returns a built-in placement by name. A placement with arguments is
// written "NAME:key=value,key=value" (e.g. "tas:required=leaf",
// "binpack:gpu=2,cpu=1"); unknown or malformed arguments are an error naming them.
func New(name string) (Placer, error) {
	base, rawArgs, hasArgs := strings.Cut(name, ":")
	args, err := parsePlacerArgs(rawArgs)
	if err != nil {
		return nil, fmt.Errorf("placement %q: %w", name, err)
	}
	var p Placer
	switch base {
	case "", "first-fit":
		p = &bucketPlacer{mode: firstFit}
	case "best-fit":
		p = &bucketPlacer{mode: bestFit}
	case "spread":
		p = &bucketPlacer{mode: spread}
	default:
		f, ok := topologyPlacers[base]
		if !ok {
			return nil, fmt.Errorf("unknown placement %q (want one of %s)", base, strings.Join(Names, ", "))
		}
		if p, err = f(args); err != nil {
			return nil, fmt.Errorf("placement %q: %w", name, err)
		}
		if _, ok := p.(*packPlacer); ok {
			return p, nil // decides co-location itself
		}
		return &coLocating{Placer: p, shared: bucketPlacer{mode: bestFit}}, nil
	}
	if hasArgs {
		return nil, fmt.Errorf("placement %q: %s takes no arguments", name, p.Name())
	}
	return p, nil
}

type fitMode uint8

const (
	firstFit fitMode = iota // lowest node id that has room
	bestFit                 // node with the fewest free GPUs that still has room
	spread                  // node with the most free GPUs; one replica per node first
)

// bucketPlacer places whole-GPU gangs through the cluster's per-model free-count
// buckets (no scan over all nodes) and fractional / CPU-only jobs by a node scan.
type bucketPlacer struct{ mode fitMode }

func (b *bucketPlacer) Name() string {
	switch b.mode {
	case bestFit:
		return "best-fit"
	case spread:
		return "spread"
	}
	return "first-fit"
}

// hostable returns how many replicas of s node n can still take, given the GPUs
// already free on it (freeGPU), counting CPU and memory.
func hostable(c *sim.Cluster, n sim.NodeID, s *sim.JobSpec, freeGPU int32, already int32) int32 {
	g := s.GPUsPerReplica
	k := int32(1 << 30)
	if g > 0 {
		k = freeGPU / g
	}
	if s.CPUMilli > 0 {
		k = min(k, int32(min(c.NodeFreeCPU(n)/s.CPUMilli, 1<<30)))
	}
	if s.MemoryMiB > 0 {
		k = min(k, int32(min(c.NodeFreeMemory(n)/s.MemoryMiB, 1<<30)))
	}
	return max(k-already, 0)
}

func (b *bucketPlacer) Place(c *sim.Cluster, j *sim.Job, out *Placement) bool {
	s := &j.Spec
	out.reset()
	if !QuickFit(c, s) {
		return false
	}
	switch {
	case s.GPUsPerReplica == 0:
		return b.placeNoGPU(c, s, out)
	case s.Fractional() && !c.SharingOn():
		return b.placeFractional(c, s, out)
	}
	colocate := c.SharingOn() && s.Accepts() != sim.AcceptExclusive
	if colocate && b.mode != spread && b.placeShared(c, s, out) {
		return true
	}
	if s.Fractional() {
		return b.placeFractional(c, s, out)
	}
	if int64(s.TotalGPUs()) > c.FreeGPUs() {
		return colocate && b.mode == spread && b.placeShared(c, s, out)
	}
	for m, model := range c.Models() {
		if !s.AllowsModel(model) || c.ModelFree(m) < int64(s.TotalGPUs()) {
			continue
		}
		if s.Unequal() && b.placeUnequal(c, s, m, out) || !s.Unequal() && b.placeWhole(c, s, m, out) {
			return true
		}
		out.reset()
	}
	return colocate && b.mode == spread && b.placeShared(c, s, out)
}

// placeShared co-locates a shareable 1-GPU job on a GPU that already has sharers
// (device-level sharing, see docs/sharing.md): first-fit takes the lowest GPU id
// the engine would accept (Cluster.CanShare) on a node with the CPU and memory;
// best-fit the one with the most jobs, then the most GPU memory used (the fullest
// that still fits). Spread tries it only when no whole GPU is free. Empty GPUs are
// left to the whole-GPU search, so a shareable job lands on a free GPU when no
// shared one has room.
func (b *bucketPlacer) placeShared(c *sim.Cluster, s *sim.JobSpec, out *Placement) bool {
	best := sim.GPUID(-1)
	bestN, bestMem := 0, int64(0)
	for g := c.NextOpenShared(0); g >= 0; g = c.NextOpenShared(g + 1) {
		n := c.GPUNode(g)
		if !s.AllowsModel(c.Node(n).GPUModel) || !c.CanShare(s, g) || hostable(c, n, s, 1, 0) == 0 || !out.allowed(n) {
			continue
		}
		k, mem := c.Sharers(g), c.SharedMemUsed(g)
		if best < 0 || b.mode == bestFit && (k > bestN || k == bestN && mem > bestMem) {
			best, bestN, bestMem = g, k, mem
		}
		if b.mode != bestFit {
			break
		}
	}
	if best < 0 {
		return false
	}
	out.Nodes = append(out.Nodes, c.GPUNode(best))
	out.GPUs = append(out.GPUs, best)
	return true
}

// take puts k replicas on node n (whole GPUs), picking the lowest-index free GPUs.
func take(c *sim.Cluster, s *sim.JobSpec, n sim.NodeID, k int32, out *Placement) {
	g := s.GPUsPerReplica
	need := k * g
	first, end := c.NodeGPUs(n)
	skip := int32(0)
	for _, u := range out.used {
		if u.node == n {
			skip = u.n * g
		}
	}
	out.GPUs = appendFreeGPUs(c, first, end, skip, need, out.GPUs)
	for i := int32(0); i < k; i++ {
		out.Nodes = append(out.Nodes, n)
	}
	for i := range out.used {
		if out.used[i].node == n {
			out.used[i].n += k
			return
		}
	}
	out.used = append(out.used, nodeUse{n, k})
}

func (p *Placement) usedOn(n sim.NodeID) int32 {
	for _, u := range p.used {
		if u.node == n {
			return u.n
		}
	}
	return 0
}

func (b *bucketPlacer) placeWhole(c *sim.Cluster, s *sim.JobSpec, m int, out *Placement) bool {
	g := s.GPUsPerReplica
	rem := s.Replicas
	maxK := c.MaxGPUsPerNode()
	switch b.mode {
	case firstFit:
		from := sim.NodeID(0)
		for rem > 0 {
			best := sim.NodeID(-1)
			for k := g; k <= maxK; k++ {
				n := c.NextNodeWithFree(m, k, from)
				if n >= 0 && (best < 0 || n < best) {
					best = n
				}
			}
			if best < 0 {
				return false
			}
			if !out.allowed(best) {
				from = best + 1
				continue
			}
			if h := min(hostable(c, best, s, c.NodeFreeGPUs(best), 0), rem); h > 0 {
				take(c, s, best, h, out)
				rem -= h
			}
			from = best + 1
		}
		return true
	case bestFit:
		for k := g; k <= maxK && rem > 0; k++ {
			for n := c.NextNodeWithFree(m, k, 0); n >= 0 && rem > 0; n = c.NextNodeWithFree(m, k, n+1) {
				if !out.allowed(n) {
					continue
				}
				if h := min(hostable(c, n, s, k, 0), rem); h > 0 {
					take(c, s, n, h, out)
					rem -= h
				}
			}
		}
		return rem == 0
	default: // spread: one replica per node, emptiest nodes first; then fill up
		for pass := 0; pass < 2 && rem > 0; pass++ {
			for k := maxK; k >= g && rem > 0; k-- {
				for n := c.NextNodeWithFree(m, k, 0); n >= 0 && rem > 0; n = c.NextNodeWithFree(m, k, n+1) {
					already := out.usedOn(n)
					if pass == 0 && already > 0 || !out.allowed(n) {
						continue
					}
					h := hostable(c, n, s, k, already)
					if pass == 0 {
						h = min(h, 1)
					}
					if h = min(h, rem); h > 0 {
						take(c, s, n, h, out)
						rem -= h
					}
				}
			}
		}
		return rem == 0
	}
}

// placeFractional puts a single shared-GPU replica on one GPU: first-fit = the first
// GPU (by id) with enough spare milli; best-fit = the GPU with the least spare milli
// that fits; spread = the most spare.
func (b *bucketPlacer) placeFractional(c *sim.Cluster, s *sim.JobSpec, out *Placement) bool {
	bestGPU, bestNode := sim.GPUID(-1), sim.NodeID(-1)
	var bestSpare sim.MilliGPU
	for n := sim.NodeID(0); int(n) < c.NumNodes(); n++ {
		spec := c.Node(n)
		if spec.GPUs == 0 || !s.AllowsModel(spec.GPUModel) || hostable(c, n, s, 1<<20, 0) == 0 || !out.allowed(n) {
			continue
		}
		first, end := c.NodeGPUs(n)
		for gpu := first; gpu < end; gpu++ {
			spare := sim.WholeGPU - c.GPUUsed(gpu)
			if spare < s.GPUMilli || c.GPUMode(gpu) != sim.ShareExclusive && !c.CanShare(s, gpu) {
				continue
			}
			better := bestGPU < 0
			switch b.mode {
			case bestFit:
				better = better || spare < bestSpare
			case spread:
				better = better || spare > bestSpare
			}
			if better {
				bestGPU, bestNode, bestSpare = gpu, n, spare
			}
			if b.mode == firstFit {
				break
			}
		}
		if b.mode == firstFit && bestGPU >= 0 {
			break
		}
	}
	if bestGPU < 0 {
		return false
	}
	out.Nodes = append(out.Nodes, bestNode)
	out.GPUs = append(out.GPUs, bestGPU)
	return true
}

// placeNoGPU places CPU-only replicas by CPU/memory (first-fit order; best-fit picks
// the least free CPU, spread the most).
func (b *bucketPlacer) placeNoGPU(c *sim.Cluster, s *sim.JobSpec, out *Placement) bool {
	for rem := s.Replicas; rem > 0; rem-- {
		best := sim.NodeID(-1)
		var bestCPU int64
		for n := sim.NodeID(0); int(n) < c.NumNodes(); n++ {
			if hostable(c, n, s, 0, out.usedOn(n)) == 0 || !out.allowed(n) {
				continue
			}
			cpu := c.NodeFreeCPU(n)
			better := best < 0
			switch b.mode {
			case bestFit:
				better = better || cpu < bestCPU
			case spread:
				better = better || cpu > bestCPU
			}
			if better {
				best, bestCPU = n, cpu
			}
			if b.mode == firstFit {
				break
			}
		}
		if best < 0 {
			return false
		}
		out.Nodes = append(out.Nodes, best)
		found := false
		for i := range out.used {
			if out.used[i].node == best {
				out.used[i].n++
				found = true
			}
		}
		if !found {
			out.used = append(out.used, nodeUse{best, 1})
		}
	}
	return true
}

// coLocating gives a placement that knows nothing of device-level sharing (the
// topology-aware ones and the FGD family) the one co-location rule of the bucket
// placements' best-fit: on a cluster with shared-mode pools (docs/sharing.md), a
// job that accepts sharing first joins the fullest shared GPU the engine accepts
// (Cluster.CanShare, the node's CPU and memory); otherwise, and always on a
// cluster without sharing, the wrapped placement decides. A gang or a multi-GPU
// job never co-locates (the engine's rule), so topology constraints are untouched.
type coLocating struct {
	Placer
	shared bucketPlacer
}

func (p *coLocating) Place(c *sim.Cluster, j *sim.Job, out *Placement) bool {
	if c.SharingOn() {
		s := &j.Spec
		if s.Replicas == 1 && s.GPUsPerReplica == 1 && s.Accepts() != sim.AcceptExclusive {
			out.reset()
			if QuickFit(c, s) && p.shared.placeShared(c, s, out) {
				return true
			}
		}
	}
	if j.Spec.Unequal() {
		if !placeOverAsked(p.Placer, c, j, out) {
			return false
		}
	} else if !p.Placer.Place(c, j, out) {
		return false
	}
	if !out.allAllowed() { // a topology-aware placement ignores Allow while searching
		out.reset()
		return false
	}
	return true
}

// Prepare passes Prepare on to the wrapped placement.
func (p *coLocating) Prepare(v *sim.View) error { return Prepare(p.Placer, v) }
