package pollux

import (
	"fmt"
	"math"
	"sort"

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
	epochEnd  []sim.Duration // reference work at the end of each epoch
}

// NewElasticModel builds job's model on nodes of perNode GPUs.
func NewElasticModel(job Job, perNode int) (*ElasticModel, error) {
	apps, err := Apps()
	if err != nil {
		return nil, err
	}
	a, ok := apps[job.App]
	if !ok {
		return nil, fmt.Errorf("pollux: unknown application %q", job.App)
	}
	ep, err := tunedEpochs(job, perNode)
	if err != nil {
		return nil, err
	}
	refT, _, err := fixedStepTime(a, job.BatchSize, PackedPlacement(job.Replicas, perNode))
	if err != nil {
		return nil, err
	}
	m := &ElasticModel{App: a, BatchSize: job.BatchSize, PerNode: perNode, refT: refT, epochEnd: make([]sim.Duration, len(ep))}
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
	var ids []sim.NodeID
	var p []int
	for _, n := range nodes {
		i := 0
		for i < len(ids) && ids[i] != n {
			i++
		}
		if i == len(ids) {
			ids, p = append(ids, n), append(p, 0)
		}
		p[i]++
	}
	t, _, err := fixedStepTime(m.App, m.BatchSize, p)
	if err != nil || !(t > 0) {
		return math.NaN()
	}
	return m.refT / t
}

// Epoch is the epoch a job that has done `done` of work is in (0-based,
// at most MaxEpochs−1).
func (m *ElasticModel) Epoch(done sim.Duration) int {
	e := sort.Search(len(m.epochEnd), func(i int) bool { return m.epochEnd[i] > done })
	return min(e, len(m.epochEnd)-1)
}
