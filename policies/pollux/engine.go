package pollux

import (
	"errors"
	"fmt"
	"math"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/policies/rounds"
	"github.com/gpusim/gpusim/sim"
	pm "github.com/gpusim/gpusim/workloads/pollux"
)

// EngineParams are the engine Optimus policy's parameters.
type EngineParams struct {
	// Round is the round length (default 60s, the artifact's --interval).
	Round *policies.Dur `yaml:"round"`
	// PerNode is the GPUs per node of predict_step_time's packed placements
	// (default: the cluster's largest node).
	PerNode int `yaml:"perNode"`
}

func init() {
	policies.RegisterDecoded[EngineParams](policies.Info{
		Name:    "optimus",
		Summary: "Optimus (EuroSys'18) as in the Pollux OSDI'21 artifact (Optimus+Oracle+TunedJobs): rounds of 60 s; one GPU per job in order, then one GPU at a time to the largest (t(k) − t(k+1)) × remaining iterations; resizes elastic gangs (trace format pollux-elastic, or any elastic jobs by remaining work / rate; docs/elastic.md).",
		Params:  "round (60s); perNode (GPUs per node of the step-time model; default the cluster's largest node)",
	}, NewEngineOptimus)
}

// NewEngineOptimus builds the engine's Optimus: a rounds.Driver around
// OptimusCounts, the same marginal-gain code as the standalone reproduction
// (optimus.go), over the jobs' pollux.ElasticModel (or, for other elastic
// jobs, the same rule on remaining work and their rate model).
func NewEngineOptimus(p EngineParams) (*rounds.Driver, error) {
	round := 60 * sim.Second
	var errs []error
	if p.Round != nil {
		if round = sim.Duration(*p.Round); round < sim.Second {
			errs = append(errs, errors.New("round: must be at least 1s"))
		}
	}
	if p.PerNode < 0 || p.PerNode > 9 {
		errs = append(errs, fmt.Errorf("perNode: must be in 1..9 (the profiles' placements), got %d", p.PerNode))
	}
	if len(errs) > 0 {
		return nil, &policies.ConfigError{Err: errors.Join(errs...)}
	}
	d, err := rounds.New("optimus", round, &engineOptimus{perNode: p.PerNode})
	if err != nil {
		return nil, err
	}
	d.Repack = true // optimus.py places every job whose count changes anew
	return d, nil
}

// engineOptimus is OptimusPolicy.optimize's GPU counts as a rounds.Allocator.
type engineOptimus struct {
	perNode int
	jobs    []OptimusJob
	rem     []float64
	nodes   []sim.NodeID
}

// Allocate implements rounds.Allocator. With Pollux jobs (format
// pollux-elastic) it is the artifact's Optimus: a job's epoch comes from its
// work done (sim.View.WorkDone, the oracle progress of Optimus+Oracle)
// through its ElasticModel. With other elastic jobs it is allocateGeneric.
// A workload mixing both, or with rigid jobs, is an error.
func (o *engineOptimus) Allocate(v *sim.View, active []*sim.Job, want []int32) error {
	c := v.Cluster()
	perNode := o.perNode
	if perNode == 0 {
		perNode = int(c.MaxGPUsPerNode())
	}
	o.jobs = o.jobs[:0]
	generic := 0
	for _, j := range active {
		el := j.Spec.Elastic
		if el == nil {
			return fmt.Errorf("optimus: job %s is not elastic (give its class an elastic: block, or read the trace with format pollux-elastic)", j)
		}
		m, _ := el.Rate.(*pm.ElasticModel)
		if a, ok := el.Rate.(pm.AdaptiveModel); ok {
			m = a.ElasticModel // format pollux-adaptive: the same model
		}
		if m == nil || j.Spec.GPUsPerReplica != 1 {
			generic++
			continue
		}
		o.jobs = append(o.jobs, OptimusJob{App: m.App, Batch: m.BatchSize, Epoch: m.Epoch(v.WorkDone(j.Ref))})
	}
	switch generic {
	case len(active):
		return o.allocateGeneric(v, active, want, perNode)
	case 0:
	default:
		return errors.New("optimus: the workload mixes Pollux elastic jobs (format pollux-elastic) with other elastic jobs")
	}
	reps, err := OptimusCounts(o.jobs, int(c.NumGPUs()), perNode)
	if err != nil {
		return fmt.Errorf("optimus: %w", err)
	}
	for i, j := range active {
		want[i] = min(int32(reps[i]), j.Spec.Elastic.Max)
	}
	return nil
}

// allocateGeneric is Optimus's marginal-gain allocation for elastic jobs
// without a Pollux model: a job's remaining time on k replicas is its
// remaining work (Job.Estimate − work done) over its rate on k replicas
// packed perNode GPUs to a node; every job first gets its minimum size in job
// order while GPUs last, then the next size step goes, one at a time, to the
// job whose remaining time falls most per GPU added (the first job on ties).
func (o *engineOptimus) allocateGeneric(v *sim.View, active []*sim.Job, want []int32, perNode int) error {
	left := v.Cluster().NumGPUs()
	o.rem = o.rem[:0]
	for i, j := range active {
		o.rem = append(o.rem, float64(max(j.Estimate-v.WorkDone(j.Ref), 1)))
		if g := int64(j.Spec.Elastic.Min * j.Spec.GPUsPerReplica); g <= left {
			want[i], left = j.Spec.Elastic.Min, left-g
		}
	}
	for {
		best, bestGain := -1, 0.0
		for i, j := range active {
			el := j.Spec.Elastic
			k := want[i]
			g := int64(el.Step * j.Spec.GPUsPerReplica)
			if k == 0 || k+el.Step > el.Max || g > left {
				continue
			}
			a, err := o.remTime(j, k, perNode, o.rem[i])
			if err != nil {
				return err
			}
			b, err := o.remTime(j, k+el.Step, perNode, o.rem[i])
			if err != nil {
				return err
			}
			if gain := (a - b) / float64(g); gain > bestGain {
				best, bestGain = i, gain
			}
		}
		if best < 0 {
			return nil
		}
		j := active[best]
		want[best] += j.Spec.Elastic.Step
		left -= int64(j.Spec.Elastic.Step * j.Spec.GPUsPerReplica)
	}
}

// remTime is the remaining time of job j on k replicas: rem / its rate on k
// replicas packed perNode GPUs to a node.
func (o *engineOptimus) remTime(j *sim.Job, k int32, perNode int, rem float64) (float64, error) {
	el := j.Spec.Elastic
	if el.Rate == nil {
		return rem * float64(j.Spec.Replicas) / float64(k), nil
	}
	o.nodes = o.nodes[:0]
	per := max(1, int32(perNode)/max(j.Spec.GPUsPerReplica, 1))
	for r := range k {
		o.nodes = append(o.nodes, sim.NodeID(r/per))
	}
	x := el.Rate.Rate(o.nodes)
	if !(x > 0) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("optimus: job %s: rate model returned %v on %d replicas", j, x, k)
	}
	return rem / x, nil
}
