package workloads

import (
	"math"

	"github.com/gpusim/gpusim/sim"
)

// PlacementSpan is the tightest topology level at which all the given GPUs share
// one domain: sim.LevelNVLink for a single GPU or a gang inside one NVLink
// island, ..., sim.LevelSpine for a gang inside one spine block, and
// sim.NumLevels ("core") for a gang across spines. An empty list spans
// sim.LevelNVLink. GPU ids must be valid for c.
func PlacementSpan(c *sim.Cluster, gpus []sim.GPUID) sim.Level {
	if len(gpus) == 0 {
		return sim.LevelNVLink
	}
	return sim.Level(actualLevel(c, gpus))
}

// SpanName is the name of a PlacementSpan level ("core" for sim.NumLevels).
func SpanName(l sim.Level) string {
	if l >= sim.NumLevels {
		return LevelCore
	}
	return l.String()
}

// Slowdown is the communication slowdown of job j on its current placement: the
// iteration time on this placement divided by the iteration time on the same GPU
// models with the best all-reduce the gang's size allows (see Speed). It isolates
// the placement effect from GPU-model throughput: 1 for a packed gang, a job
// without GPUs, a 1-GPU job or a class without communication; > 1 when the gang
// crosses slower levels than necessary. Always finite and >= 1.
func (m *SpeedModel) Slowdown(c *sim.Cluster, j *sim.Job) float64 {
	p := len(j.GPUs)
	cc := m.classes[j.Spec.Class]
	if p < 2 || cc.ComputeS <= 0 || cc.MBPerIter == 0 {
		return 1
	}
	ref, minT := m.slowestThroughput(c, j)
	compute := float64(cc.ComputeS) * ref / minT
	actual := compute + m.allreduce(actualLevel(c, j.GPUs), p, cc.MBPerIter)
	comm := math.Inf(1)
	for l := referenceLevel(c, j.GPUs[0], p); l <= int(sim.NumLevels); l++ {
		comm = min(comm, m.allreduce(l, p, cc.MBPerIter))
	}
	s := actual / (compute + comm)
	if !(s >= 1) || math.IsInf(s, 0) {
		return 1
	}
	return s
}
