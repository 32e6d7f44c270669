package placement

import "github.com/gpusim/gpusim/sim"

// UsedEarlier reports whether replica r's node already appeared in an earlier replica.
func (pl *Placement) UsedEarlier(r int) bool {
	for i := 0; i < r; i++ {
		if pl.Nodes[i] == pl.Nodes[r] {
			return true
		}
	}
	return false
}

// QuickFit is an O(1) necessary condition for s to fit now: enough whole free GPUs
// (for whole-GPU jobs), CPU and memory in the cluster as a whole.
func QuickFit(c *sim.Cluster, s *sim.JobSpec) bool {
	if !s.Fractional() && int64(s.TotalGPUs()) > c.FreeGPUs() && !(s.Accepts() != sim.AcceptExclusive && c.NextOpenShared(0) >= 0) {
		return false
	}
	return int64(s.Replicas)*s.CPUMilli <= c.FreeCPU() && int64(s.Replicas)*s.MemoryMiB <= c.FreeMemory()
}

// WhyNot classifies why job j cannot be placed now: not enough free capacity of an
// allowed model, or enough in total but not placeable per node (fragmentation).
func WhyNot(c *sim.Cluster, j *sim.Job) sim.Reason {
	s := &j.Spec
	if !QuickFit(c, s) || s.GPUsPerReplica == 0 || s.Fractional() {
		return sim.ReasonNoCapacity
	}
	for m, model := range c.Models() {
		if s.AllowsModel(model) && c.ModelFree(m) >= int64(s.TotalGPUs()) {
			return sim.ReasonTopology
		}
	}
	return sim.ReasonNoCapacity
}
