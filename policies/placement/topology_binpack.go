package placement

import (
	"github.com/gpusim/gpusim/sim"
)

// binpackPlacer is Volcano's binpack node scoring (policies.md 2.3) applied per
// replica: for each resource the replica requests that has a weight,
// score_r = w_r x (used_r + req_r) / allocatable_r; the node score is
// sum(score_r) / sum(w_r) x 100 (a node where any weighted resource would
// overflow scores 0 and is not used). Each replica goes to the feasible node with
// the highest score, ties lowest node id; replicas already placed in the same gang
// count as used. Like Volcano, a resource without a weight is ignored: GPUs count
// only with gpu=W > 0 (Volcano's binpack.resources), CPU and memory default to
// weight 1. Every replica of a gang uses one GPU model (tried in model order).
// Fractional and CPU-only jobs are placed as by best-fit.
type binpackPlacer struct {
	wCPU, wMem, wGPU float64
	fallback         bucketPlacer
}

func newBinpack(a *placerArgs) (Placer, error) {
	p := &binpackPlacer{fallback: bucketPlacer{mode: bestFit}}
	var err error
	if p.wCPU, err = a.weight("cpu", 1); err != nil {
		return nil, err
	}
	if p.wMem, err = a.weight("memory", 1); err != nil {
		return nil, err
	}
	if p.wGPU, err = a.weight("gpu", 0); err != nil {
		return nil, err
	}
	return p, a.done()
}

func (p *binpackPlacer) Name() string { return "binpack" }

// score is node n's binpack score for one more replica of s given the replicas
// of this gang already put there (already).
func (p *binpackPlacer) score(c *sim.Cluster, n sim.NodeID, s *sim.JobSpec, already int32) float64 {
	spec := c.Node(n)
	var sum, wsum float64
	add := func(w float64, used, req, alloc int64) {
		if req <= 0 || w <= 0 || alloc <= 0 {
			return
		}
		sum += w * float64(used+req) / float64(alloc)
		wsum += w
	}
	add(p.wCPU, spec.CPUMilli-c.NodeFreeCPU(n)+int64(already)*s.CPUMilli, s.CPUMilli, spec.CPUMilli)
	add(p.wMem, spec.MemoryMiB-c.NodeFreeMemory(n)+int64(already)*s.MemoryMiB, s.MemoryMiB, spec.MemoryMiB)
	g := int64(s.GPUsPerReplica)
	add(p.wGPU, int64(spec.GPUs-c.NodeFreeGPUs(n))+int64(already)*g, g, int64(spec.GPUs))
	if wsum == 0 {
		return 0
	}
	return sum / wsum * 100
}

// Place implements Placer.
func (p *binpackPlacer) Place(c *sim.Cluster, j *sim.Job, out *Placement) bool {
	s := &j.Spec
	if whole, ok := startWholeGPU(c, j, out, &p.fallback); !whole || !ok {
		return ok
	}
	g := s.GPUsPerReplica
	ok := false
	eachAllowedModel(c, s, func(m int) bool {
		if replicaSlots(c, m, g, s.Replicas) < int64(s.Replicas) {
			return true
		}
		ok = true
		for r := int32(0); r < s.Replicas; r++ {
			best, bestScore := sim.NodeID(-1), -1.0
			for k := g; k <= c.MaxGPUsPerNode(); k++ {
				for n := c.NextNodeWithFree(m, k, 0); n >= 0; n = c.NextNodeWithFree(m, k, n+1) {
					already := out.usedOn(n)
					if hostable(c, n, s, k, already) == 0 {
						continue
					}
					if sc := p.score(c, n, s, already); sc > bestScore || sc == bestScore && n < best {
						best, bestScore = n, sc
					}
				}
			}
			if best < 0 {
				ok = false
				break
			}
			take(c, s, best, 1, out)
		}
		if !ok {
			out.reset()
		}
		return !ok
	})
	return ok
}
