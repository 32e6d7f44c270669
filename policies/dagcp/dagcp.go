// Package dagcp is the dag-critical-path policy: list scheduling of DAG
// pipelines by longest remaining path (the "HLFET" / critical-path-first rule
// of DAG list scheduling, Adam, Chandy and Dickson, CACM 1974; Kwok and Ahmad,
// ACM Computing Surveys 1999, §4.1). A pending job's rank is its predicted
// duration plus the largest rank among its successors, with durations from the
// engine's history-based predictor (sim.View.PredictedDuration, docs/dag.md);
// pending jobs start in descending rank, ties in submit order. Jobs without
// dependencies rank by their own predicted duration (longest first). See
// docs/dag.md.
package dagcp

import (
	"cmp"
	"fmt"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/policies/placement"
	"github.com/gpusim/gpusim/sim"
)

// Params are the policy's parameters.
type Params struct {
	// Placement places the jobs (default best-fit).
	Placement string `yaml:"placement"`
	// Strict stops at the first job in rank order that does not fit (no
	// skipping ahead); the default false tries the next jobs (greedy list
	// scheduling).
	Strict bool `yaml:"strict"`
}

func init() {
	policies.Register(policies.Info{
		Name:    "dag-critical-path",
		Summary: "DAG pipelines: longest remaining (predicted) path first, list scheduling (HLFET); non-preemptive.",
		Params:  "placement (best-fit); strict (false)",
	}, func(n *yaml.Node, _ policies.Env) (sim.Policy, error) {
		var p Params
		if err := policies.DecodeParams(n, &p); err != nil {
			return nil, err
		}
		return New(p)
	})
}

// CP is the dag-critical-path policy.
type CP struct {
	strict   bool
	placer   placement.Placer
	prepared *sim.Cluster
	pl       placement.Placement
	pending  []*sim.Job
	rank     []sim.Duration
	stamp    []uint32
	epoch    uint32
}

// New builds the policy.
func New(p Params) (*CP, error) {
	name := p.Placement
	if name == "" {
		name = "best-fit"
	}
	pl, err := placement.New(name)
	if err != nil {
		return nil, &policies.ConfigError{Err: fmt.Errorf("placement: %w", err)}
	}
	return &CP{strict: p.Strict, placer: pl}, nil
}

// Name returns "dag-critical-path".
func (c *CP) Name() string { return "dag-critical-path" }

// Rank is job r's longest remaining path at this scheduling point: its
// predicted remaining duration plus the largest Rank of its successors that
// have not ended. Values are memoised per scheduling point.
func (c *CP) Rank(v *sim.View, r sim.JobRef) sim.Duration {
	if c.stamp[r] == c.epoch {
		return c.rank[r]
	}
	j := v.Job(r)
	own := max(v.PredictedDuration(r)-j.Done, 1)
	var tail sim.Duration
	for _, s := range v.Successors(r) {
		if st := v.Job(s).State; st == sim.StateCompleted || st == sim.StateKilled || st == sim.StateTimeout {
			continue
		}
		tail = max(tail, c.Rank(v, s))
	}
	c.stamp[r], c.rank[r] = c.epoch, own+tail
	return own + tail
}

// Schedule starts pending jobs in descending Rank (ties: submit order),
// skipping those that do not fit unless strict.
func (c *CP) Schedule(v *sim.View, p *sim.Plan) error {
	cl := v.Cluster()
	if c.prepared != cl {
		if err := placement.Prepare(c.placer, v); err != nil {
			return err
		}
		c.prepared = cl
		c.rank = make([]sim.Duration, v.NumJobs())
		c.stamp = make([]uint32, v.NumJobs())
	}
	c.epoch++
	c.pending = c.pending[:0]
	for j := range v.Pending() {
		c.Rank(v, j.Ref)
		c.pending = append(c.pending, j)
	}
	slices.SortFunc(c.pending, func(a, b *sim.Job) int {
		if x := cmp.Compare(c.rank[b.Ref], c.rank[a.Ref]); x != 0 {
			return x
		}
		return cmp.Compare(a.Ref, b.Ref)
	})
	for _, j := range c.pending {
		if !c.placer.Place(cl, j, &c.pl) {
			p.Wait(j.Ref, placement.WhyNot(cl, j))
			if c.strict {
				break
			}
			continue
		}
		if err := p.AddStart(j.Ref, c.pl.Nodes, c.pl.GPUs); err != nil {
			return err
		}
	}
	return nil
}
