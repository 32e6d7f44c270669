package pollux

import (
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/gpusim/gpusim/sim"
)

// ElasticModel is an artifact workload job as an elastic gang of the event
// engine (sim.ElasticSpec, trace format pollux-elastic, docs/elastic.md): one
// GPU per replica, work in µs at its TunedJobs configuration (Replicas GPUs
// packed PerNode to a node, total batch BatchSize), and a throughput on any
// placement from the artifact's profiles at the same fixed batch. It is
// immutable and safe for concurrent use (App memoises the profiles).
type ElasticModel struct {
	App       *App
	BatchSize int
	PerNode   int
	refT      float64        // optimizer step time of the tuned configuration
	refBatch  float64        // total batch the tuned configuration runs
	epochEnd  []sim.Duration // reference work at the end of each epoch
}

// NewElasticModel builds job's model on nodes of perNode GPUs.
func NewElasticModel(job Job, perNode int) (*ElasticModel, error) {
	a, err := appOf(job)
	if err != nil {
		return nil, err
	}
	ep, err := tunedEpochs(job, perNode)
	if err != nil {
		return nil, err
	}
	refT, refBatch, err := fixedStepTime(a, job.BatchSize, PackedPlacement(job.Replicas, perNode))
	if err != nil {
		return nil, err
	}
	m := &ElasticModel{App: a, BatchSize: job.BatchSize, PerNode: perNode, refT: refT, refBatch: refBatch, epochEnd: make([]sim.Duration, len(ep))}
	total := 0.0
	for e, d := range ep {
		total += d
		m.epochEnd[e] = sim.Seconds(total)
	}
	return m, nil
}

// Duration is the job's work: TunedRunTime.
func (m *ElasticModel) Duration() sim.Duration { return m.epochEnd[len(m.epochEnd)-1] }

// Rate implements sim.ElasticRate: T_tuned / T(placement), the optimizer step
// time of the tuned configuration over that of the placement (GPUs per node
// in the order the nodes first appear), both under the fixed-batch rule of
// simulator.py:Job.update_local_bsz. NaN when the profiles give no step time.
func (m *ElasticModel) Rate(nodes []sim.NodeID) float64 {
	return m.rateOn(Placement(nodes, nil))
}

// rateOn is Rate on placement p (GPUs per node).
func (m *ElasticModel) rateOn(p []int) float64 {
	reps := 0
	for _, v := range p {
		reps += v
	}
	atomic, accum := m.App.FixedBatch(m.BatchSize, reps)
	st, sy, err := m.App.throughputAnywhere(p, atomic)
	t := st + (st-sy)*float64(accum)
	if err != nil || !(t > 0) {
		return math.NaN()
	}
	return m.refT / t
}

// ndKey is a query of throughputAnywhere's interpolation.
type ndKey struct {
	app                 *App
	nodes, reps, atomic int
}

// ndMemo memoises throughputAnywhere's interpolated step times.
var ndMemo sync.Map // ndKey -> [2]float64

// throughputAnywhere is Throughput for the placements the engine's elastic
// gangs take (any spread over nodes, docs/elastic.md): a placement of
// placements.csv is the same exact value; any other is interpolated as in
// Throughput but at (nodes, replicas, local batch) moved by about 1e-6 in a
// general direction. gonum's simplex can cycle forever on the degenerate
// lifting LP of a query on the profiles' lattice (bert at 7 nodes, 12 GPUs,
// local batch 10 does); the moved query lies inside one Delaunay cell, and
// the piecewise-linear value moves by about 1e-6 relative. Throughput
// itself (the standalone reproduction, format pollux) is unchanged.
func (a *App) throughputAnywhere(placement []int, localBsz int) (step, sync float64, err error) {
	canon := CanonicalPlacement(placement)
	if _, ok := a.placements[canon]; ok || len(canon) == 0 {
		return a.Throughput(placement, localBsz)
	}
	reps := 0
	for _, v := range placement {
		reps += v
	}
	k := ndKey{a, min(len(canon), 16), reps, localBsz}
	if v, ok := ndMemo.Load(k); ok {
		y := v.([2]float64)
		return y[0], y[1], nil
	}
	q := [3]float64{float64(k.nodes), float64(reps), float64(localBsz)}
	y, ok := [2]float64{}, false
	for i, p := range a.nd.pts {
		if p == q {
			y, ok = a.nd.vals[i], true
		}
	}
	// The first of the eight moves (all signs of the step) that lands inside
	// the profiles' convex hull.
	for m := 0; m < 8 && !ok; m++ {
		var q2 [3]float64
		for i, d := range [3]float64{1.1e-6, 0.7e-6, 1.3e-6} {
			if m>>i&1 == 1 {
				d = -d
			}
			q2[i] = q[i] + d
		}
		y, ok = a.nd.atAnywhere(q2)
	}
	if !ok {
		return 0, 0, fmt.Errorf("pollux: %s: (%d nodes, %d GPUs, local batch %d) outside the profiled shapes", a.Name, k.nodes, reps, localBsz)
	}
	ndMemo.Store(k, y)
	return y[0], y[1], nil
}

// Epoch is the epoch a job that has done `done` of work is in (0-based,
// at most MaxEpochs−1).
func (m *ElasticModel) Epoch(done sim.Duration) int {
	e := sort.Search(len(m.epochEnd), func(i int) bool { return m.epochEnd[i] > done })
	return min(e, len(m.epochEnd)-1)
}
