package pollux

import (
	"errors"
	"fmt"

	"gopkg.in/yaml.v3"

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
	policies.Register(policies.Info{
		Name:    "optimus",
		Summary: "Optimus (EuroSys'18) as in the Pollux OSDI'21 artifact (Optimus+Oracle+TunedJobs): rounds of 60 s; one GPU per job in order, then one GPU at a time to the largest (t(k) − t(k+1)) × remaining iterations; resizes elastic gangs (trace format pollux-elastic; docs/elastic.md).",
		Params:  "round (60s); perNode (GPUs per node of the step-time model; default the cluster's largest node)",
	}, func(n *yaml.Node, _ policies.Env) (sim.Policy, error) {
		var p EngineParams
		if err := policies.DecodeParams(n, &p); err != nil {
			return nil, err
		}
		return NewEngineOptimus(p)
	})
}

// NewEngineOptimus builds the engine's Optimus: a rounds.Driver around
// OptimusCounts, the same marginal-gain code as the standalone reproduction
// (optimus.go), over the jobs' pollux.ElasticModel.
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
}

// Allocate implements rounds.Allocator. A job's epoch comes from its work
// done (sim.View.WorkDone, the oracle progress of Optimus+Oracle) through its
// ElasticModel; every job must have one (trace format pollux-elastic).
func (o *engineOptimus) Allocate(v *sim.View, active []*sim.Job, want []int32) error {
	c := v.Cluster()
	perNode := o.perNode
	if perNode == 0 {
		perNode = int(c.MaxGPUsPerNode())
	}
	o.jobs = o.jobs[:0]
	for _, j := range active {
		var m *pm.ElasticModel
		if el := j.Spec.Elastic; el != nil {
			m, _ = el.Rate.(*pm.ElasticModel)
		}
		if m == nil || j.Spec.GPUsPerReplica != 1 {
			return fmt.Errorf("optimus: job %s is not a Pollux elastic job (read the trace with format pollux-elastic)", j)
		}
		o.jobs = append(o.jobs, OptimusJob{App: m.App, Batch: m.BatchSize, Epoch: m.Epoch(v.WorkDone(j.Ref))})
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
