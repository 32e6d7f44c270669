package placement

import (
	"github.com/gpusim/gpusim/sim"
)

// Fragmentation metrics for whole-GPU clusters. They read the cluster's live
// state and do not modify it, so they can be sampled at any time (between
// scheduling points, from an Observer, or on Result.Cluster at the end of a run);
// see docs/topology.md for how to sample them over time.

// FreeDomains appends to buf (reset to length 0) the ids of the domains of level
// l that have at least minFree whole free GPUs, in ascending id order, and
// returns it. It reads the cluster's incremental per-domain counters: O(domains).
func FreeDomains(c *sim.Cluster, l sim.Level, minFree int32, buf []int32) []int32 {
	buf = buf[:0]
	if l >= sim.NumLevels {
		return buf
	}
	for d := range c.Domains(l) {
		if c.DomainFree(l, int32(d)) >= minFree {
			buf = append(buf, int32(d))
		}
	}
	return buf
}

// LargestPlaceable is the largest number of GPUs a gang of replicas with
// perReplica GPUs each (every replica on one node; 1 = single GPUs) could get
// inside one domain of level l right now: the maximum over domains of the sum
// over their nodes of whole free GPUs rounded down to a multiple of perReplica.
// With perReplica 1 it is the largest free NVLink island / PCIe switch / node /
// leaf ... in GPUs; with perReplica 8 on 8-GPU nodes it counts only wholly free
// nodes. CPU, memory and GPU models are ignored (a capacity bound, not a
// placement). perReplica < 1 is treated as 1. O(GPUs) for levels inside nodes,
// O(nodes) above.
func LargestPlaceable(c *sim.Cluster, l sim.Level, perReplica int32) int32 {
	if l >= sim.NumLevels {
		return 0
	}
	g := max(perReplica, 1)
	if g == 1 {
		var best int32
		for d := range c.Domains(l) {
			best = max(best, c.DomainFree(l, int32(d)))
		}
		return best
	}
	acc := make([]int32, len(c.Domains(l)))
	var best int32
	for n := sim.NodeID(0); int(n) < c.NumNodes(); n++ {
		first, end := c.NodeGPUs(n)
		nf := c.NodeFreeGPUs(n)
		if nf < g {
			continue
		}
		// Domains of l that hold the whole node take the node's count once.
		if d := c.GPUDomain(first, l); c.GPUDomain(end-1, l) == d {
			acc[d] += nf / g * g
			best = max(best, acc[d])
			continue
		}
		prev := int32(-1)
		for gpu := first; gpu < end; gpu++ {
			d := c.GPUDomain(gpu, l)
			if d == prev {
				continue
			}
			prev = d
			acc[d] += c.DomainFree(l, d) / g * g
			best = max(best, acc[d])
		}
	}
	return best
}

// Fragmentation is a whole-GPU fragmentation profile: Largest[l] is
// LargestPlaceable(c, l, PerReplica) for every level, Free the cluster's whole
// free GPUs. Largest[l] < the GPUs a gang needs means that gang cannot be placed
// inside one domain of level l, however many GPUs are free in total.
type Fragmentation struct {
	PerReplica int32
	Free       int64
	Largest    [sim.NumLevels]int32
}

// FragmentationProfile computes the profile for replicas of perReplica GPUs.
func FragmentationProfile(c *sim.Cluster, perReplica int32) Fragmentation {
	f := Fragmentation{PerReplica: max(perReplica, 1), Free: c.FreeGPUs()}
	for l := sim.Level(0); l < sim.NumLevels; l++ {
		f.Largest[l] = LargestPlaceable(c, l, perReplica)
	}
	return f
}

// StrandedGPUs counts the whole free GPUs that lie in domains of level l with
// fewer than gang free GPUs: capacity a gang of that size cannot use if it must
// stay inside one domain of l (Kueue required topology, Slurm one leaf switch).
// O(domains).
func StrandedGPUs(c *sim.Cluster, l sim.Level, gang int32) int64 {
	if l >= sim.NumLevels {
		return 0
	}
	var n int64
	for d := range c.Domains(l) {
		if f := c.DomainFree(l, int32(d)); f < gang {
			n += int64(f)
		}
	}
	return n
}
