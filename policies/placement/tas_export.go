package placement

import "github.com/gpusim/gpusim/sim"

// This file exports the tas placement's domain search (topology_tas.go) for
// policies outside this package that compute Kueue TAS assignments themselves
// (policies/kueue), including on what-if copies of the cluster.

// TASMode is the kind of a Kueue PodSet topology request.
type TASMode uint8

// Topology request kinds (policies.md 1.10).
const (
	TASUnconstrained TASMode = iota // podset-unconstrained-topology (and Kueue's implied default)
	TASRequired                     // podset-required-topology: one domain of the level, or no placement
	TASPreferred                    // podset-preferred-topology: the level, else coarser ones, else spread
)

// LevelCluster stands for the whole cluster (Kueue's topology.kubernetes.io/zone:
// a simulated cluster is one zone) in TASRequest.Levels.
const LevelCluster = sim.NumLevels

// TASRequest is one workload's topology request.
type TASRequest struct {
	Mode TASMode
	// Levels are the Topology's levels from the requested one (Levels[0]) to the
	// coarsest, tightest first; a preferred request climbs them in order, a
	// required one uses Levels[0] only. LevelCluster means the whole cluster.
	// Unused for unconstrained requests.
	Levels []sim.Level
	// LeastFreeCapacity fills domains smallest-capacity first (Kueue's
	// LeastFreeCapacity, used for unconstrained requests under TASProfileMixed);
	// otherwise BestFit: the fitting domain with the smallest capacity, children
	// largest first with the last one best-fitted.
	LeastFreeCapacity bool
}

// TASPlacer computes Kueue TAS placements for whole-GPU gangs, counting
// capacity in replicas per node summed up the tree (the tas placement of
// docs/topology.md). Fractional and CPU-only jobs are placed as by best-fit.
// The zero value is ready to use; it is not safe for concurrent use.
type TASPlacer struct {
	p    tasPlacer
	base *sim.Cluster
}

// Place writes a placement of j satisfying r on cluster c into out and reports
// whether one exists. c must be base or a Clone of base (a what-if copy with
// other allocations): the static topology index is built once per base and
// shared by its clones. The placement uses only GPU models j allows.
func (t *TASPlacer) Place(base, c *sim.Cluster, j *sim.Job, r *TASRequest, out *Placement) bool {
	p := &t.p
	p.fallback.mode = bestFit
	s := &j.Spec
	if whole, ok := startWholeGPU(c, j, out, &p.fallback); !whole || !ok {
		return ok
	}
	if t.base != base || p.ti == nil {
		p.ti = newTopoIndex(base)
		t.base = base
	}
	p.s = s
	p.order = fillLargest
	if r.LeastFreeCapacity {
		p.order = fillSmallest
	}
	ok := false
	eachAllowedModel(c, s, func(m int) bool {
		p.m = m
		if replicaSlots(c, m, s.GPUsPerReplica, s.Replicas) < int64(s.Replicas) {
			return true
		}
		if ok = t.placeModel(c, r, out); !ok {
			out.reset()
		}
		return !ok
	})
	return ok
}

func (t *TASPlacer) placeModel(c *sim.Cluster, r *TASRequest, out *Placement) bool {
	p := &t.p
	if r.Mode == TASUnconstrained || len(r.Levels) == 0 {
		p.kind = tasUnconstrained
		return p.placeModel(c, out)
	}
	for _, l := range r.Levels {
		if l >= sim.NumLevels {
			break // the whole cluster
		}
		if d := p.smallestFitting(c, l); d >= 0 {
			return p.place(c, l, d, p.s.Replicas, p.order, out)
		}
		if r.Mode == TASRequired {
			return false
		}
	}
	// required at the cluster level, or preferred and no single domain of the
	// coarsest level fits: spread over spine blocks, leaves and nodes.
	return p.placeCluster(c, p.s.Replicas, p.order, out)
}
