package placement

import "github.com/gpusim/gpusim/sim"

// placeUnequal places an unequal gang (sim.JobSpec.LastReplicaGPUs > 0, the
// "full nodes plus a remainder" shape of docs/shapes.md) on GPUs of model m:
// first its Replicas-1 full replicas exactly as placeWhole places an equal gang
// of that many, then the remainder replica of LastReplicaGPUs GPUs on the node
// the mode picks among those with room left (first-fit: the lowest node id;
// best-fit: the fewest free GPUs left; spread: the most, preferring a node the
// gang does not use yet). The gang stays all-or-nothing: out is complete or
// Place reports false. Greedy, like the equal case: the full replicas are not
// moved to make room for the remainder.
func (b *bucketPlacer) placeUnequal(c *sim.Cluster, s *sim.JobSpec, m int, out *Placement) bool {
	full := *s
	full.Replicas--
	full.LastReplicaGPUs = 0
	if !b.placeWhole(c, &full, m, out) {
		return false
	}
	g, last := s.GPUsPerReplica, s.LastReplicaGPUs
	best, bestFree := sim.NodeID(-1), int32(0)
	bestFresh := false
	for k := last; k <= c.MaxGPUsPerNode(); k++ {
		for n := c.NextNodeWithFree(m, k, 0); n >= 0; n = c.NextNodeWithFree(m, k, n+1) {
			if !out.allowed(n) {
				continue
			}
			already := out.usedOn(n)
			free := k - already*g // GPUs left after the full replicas put here
			if free < last || hostable(c, n, s, 1<<20, already) == 0 {
				continue
			}
			better := best < 0
			switch b.mode {
			case firstFit:
				better = better || n < best
			case bestFit:
				better = better || free < bestFree || free == bestFree && n < best
			default: // spread
				fresh := already == 0
				better = better || fresh && !bestFresh || fresh == bestFresh && (free > bestFree || free == bestFree && n < best)
			}
			if better {
				best, bestFree, bestFresh = n, free, already == 0
			}
		}
	}
	if best < 0 {
		return false
	}
	takeLast(c, best, out.usedOn(best)*g, last, out)
	return true
}

// takeLast appends the remainder replica on node n: its lowest-index free GPUs
// after skipping the skip free GPUs already given to full replicas on n.
func takeLast(c *sim.Cluster, n sim.NodeID, skip, need int32, out *Placement) {
	first, end := c.NodeGPUs(n)
	out.GPUs = appendFreeGPUs(c, first, end, skip, need, out.GPUs)
	out.Nodes = append(out.Nodes, n)
	for i := range out.used {
		if out.used[i].node == n {
			out.used[i].n++
			return
		}
	}
	out.used = append(out.used, nodeUse{n, 1})
}

// placeOverAsked places an unequal gang with a placement that knows equal
// gangs only (the topology-aware ones and the FGD family): it asks p for
// Replicas full replicas and gives back the GPUs the remainder does not need
// (the last GPUs of the last replica). Conservative: the remainder waits for a
// node with a full replica's free GPUs, and topology scores count them
// (docs/shapes.md). It allocates a copy of the job (unequal gangs only).
func placeOverAsked(p Placer, c *sim.Cluster, j *sim.Job, out *Placement) bool {
	eq := *j
	eq.Spec.LastReplicaGPUs = 0
	if !p.Place(c, &eq, out) {
		return false
	}
	out.GPUs = out.GPUs[:len(out.GPUs)-int(j.Spec.GPUsPerReplica-j.Spec.LastReplicaGPUs)]
	return true
}

// appendFreeGPUs appends to gpus the first need free GPUs of [first, end),
// after passing over skip free ones (already given to earlier replicas).
func appendFreeGPUs(c *sim.Cluster, first, end sim.GPUID, skip, need int32, gpus []sim.GPUID) []sim.GPUID {
	for gpu := first; gpu < end && need > 0; gpu++ {
		if c.GPUUsed(gpu) != 0 {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		gpus = append(gpus, gpu)
		need--
	}
	return gpus
}
