package pollux

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpusim/gpusim/sim"
)

// Placement appends to dst[:0] the GPUs per node of a gang whose replicas run
// on nodes (one GPU each), in the order the nodes first appear: the
// placement of the artifact's Throughput.
func Placement(nodes []sim.NodeID, dst []int) []int {
	dst = dst[:0]
	for i, n := range nodes {
		first := true
		for _, o := range nodes[:i] {
			if o == n {
				first = false
				break
			}
		}
		if !first {
			continue
		}
		c := 0
		for _, o := range nodes[i:] {
			if o == n {
				c++
			}
		}
		dst = append(dst, c)
	}
	return dst
}

// ProfiledNodeGPUs is the most GPUs per node of the artifact's profiles
// (AWS g4dn.12xlarge, 4 T4).
const ProfiledNodeGPUs = 4

// Profiled rewrites placement in place so that no node holds more than
// ProfiledNodeGPUs (a node of 8 counts as two of 4, and so on): the
// profiles know nothing larger, so the engine models a job on bigger nodes
// as if on nodes of 4 (docs/pollux.md, known differences). It returns the
// rewritten slice.
func Profiled(placement []int) []int {
	for i := 0; i < len(placement); i++ {
		if v := placement[i]; v > ProfiledNodeGPUs {
			placement[i] = ProfiledNodeGPUs
			placement = slices.Insert(placement, i+1, v-ProfiledNodeGPUs)
		}
	}
	return placement
}

// AdaptiveRate is the job's rate (work units per µs of wall time, the
// sim.ElasticRate scale) while it runs local batch atomic with accum
// accumulation steps on placement (GPUs per node) in epoch `epoch`, as a
// Pollux job that picks its own batch size does (simulator.py:Job.step):
// its goodput gain(batch, epoch) / T(placement) over that of the tuned
// configuration in the same epoch. Work units are µs of the tuned
// configuration, so that a job's Duration is the same for every policy. It
// also returns the observed step and sync times (the point the job's agent
// reports, simulator.py:Job.update_params).
func (m *ElasticModel) AdaptiveRate(placement []int, atomic, accum, epoch int) (rate, step, sync float64, err error) {
	reps := 0
	for _, v := range placement {
		reps += v
	}
	st, sy, err := m.App.throughputAnywhere(placement, atomic)
	if err != nil {
		return 0, 0, 0, err
	}
	t := st + (st-sy)*float64(accum)
	if !(t > 0) {
		return 0, 0, 0, fmt.Errorf("pollux: %s: step time %v on %v", m.App.Name, t, placement)
	}
	g, err := m.gain(float64(reps*atomic*(accum+1)), epoch)
	if err != nil {
		return 0, 0, 0, err
	}
	ref, err := m.gain(m.refBatch, epoch)
	if err != nil {
		return 0, 0, 0, err
	}
	return g * m.refT / (t * ref), st, sy, nil
}

// gain is the statistical efficiency gain of total batch b in epoch e
// (simulator.py:Job.step: (var + sqr) / (var/scale + sqr)).
func (m *ElasticModel) gain(b float64, e int) (float64, error) {
	sqr, vr, err := m.App.GradStats(b, e)
	if err != nil {
		return 0, err
	}
	scale := b / float64(m.App.InitBatchSize)
	return (vr + sqr) / (vr/scale + sqr), nil
}

// EpochEnd is the work (µs of the tuned configuration) at the end of epoch e
// (0-based; the job's Duration for the last).
func (m *ElasticModel) EpochEnd(e int) sim.Duration { return m.epochEnd[min(e, len(m.epochEnd)-1)] }

// AdaptiveModel is the rate model of trace format pollux-adaptive: an
// ElasticModel for jobs whose policy picks their batch size (and sets their
// rate with sim.Plan.AddRate). Its Rate, which the engine uses at a start or
// resize until the policy re-rates the job, is the fixed-batch Rate where the
// profiles give the tuned batch a step time on that placement, else the rate
// at the smallest batch (min_local_bsz per replica, at most max_batch_size)
// in epoch 0; either on nodes of at most ProfiledNodeGPUs (Profiled).
type AdaptiveModel struct{ *ElasticModel }

// Rate implements sim.ElasticRate.
func (m AdaptiveModel) Rate(nodes []sim.NodeID) float64 {
	p := Profiled(Placement(nodes, nil))
	if r := m.rateOn(p); r > 0 {
		return r
	}
	a := m.App
	reps := len(nodes)
	batch := min(a.MinLocalBsz*reps, a.MaxBatchSize)
	atomic, accum := a.FixedBatch(batch, reps)
	r, _, _, err := m.AdaptiveRate(p, atomic, accum, 0)
	if err != nil || !(r > 0) {
		return math.NaN()
	}
	return r
}
