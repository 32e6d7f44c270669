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
	"math"
	"slices"

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
	// Prewarm, when set, holds GPUs for predicted successors (see Prewarm).
	Prewarm *Prewarm `yaml:"prewarm"`
}

// Prewarm holds capacity for the imminent successors of running jobs
// (prospective reservation, docs/dag.md "Pre-warming"). A successor is
// imminent when its only unfinished predecessor is a running job predicted
// to end within Horizon; it holds its GPU count, and a pending job of lower
// rank starts only if it leaves the held GPUs free or is predicted to end
// before the successor's predicted release. When the predecessor overruns
// its predicted end, the hold decays linearly to zero over Decay (0: it is
// dropped at once).
type Prewarm struct {
	Horizon policies.Dur `yaml:"horizon"`
	Decay   policies.Dur `yaml:"decay"`
}

func init() {
	policies.RegisterDecoded[Params](policies.Info{
		Name:    "dag-critical-path",
		Summary: "DAG pipelines: longest remaining (predicted) path first, list scheduling (HLFET); non-preemptive.",
		Params:  "placement (best-fit); strict (false); prewarm {horizon, decay} (off)",
	}, New)
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

	pre   *Prewarm
	ids   map[sim.JobID]sim.JobRef // for Prewarm: dependency IDs to refs
	holds []hold
}

// hold is GPUs held for an imminent successor.
type hold struct {
	rank sim.Duration // the successor's rank
	eta  sim.Time     // its predicted release
	gpus int64
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
	if w := p.Prewarm; w != nil && (w.Horizon <= 0 || w.Decay < 0) {
		return nil, &policies.ConfigError{Err: fmt.Errorf("prewarm: horizon must be > 0 and decay >= 0 (got %s, %s)", sim.Duration(w.Horizon), sim.Duration(w.Decay))}
	}
	return &CP{strict: p.Strict, placer: pl, pre: p.Prewarm}, nil
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
	if c.pre != nil {
		c.findHolds(v, p)
	}
	for _, j := range c.pending {
		if len(c.holds) > 0 && !c.clearOfHolds(v, j) {
			p.Wait(j.Ref, sim.ReasonReservation)
			if c.strict {
				break
			}
			continue
		}
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

// findHolds lists the holds for imminent successors of running jobs and asks
// for a wake-up when a hold next shrinks.
func (c *CP) findHolds(v *sim.View, p *sim.Plan) {
	c.holds = c.holds[:0]
	if c.ids == nil {
		c.ids = make(map[sim.JobID]sim.JobRef, v.NumJobs())
		for r := range v.NumJobs() {
			c.ids[v.Job(sim.JobRef(r)).Spec.ID] = sim.JobRef(r)
		}
	}
	now := v.Now()
	horizon, decay := sim.Duration(c.pre.Horizon), sim.Duration(c.pre.Decay)
	for _, r := range v.Running() {
		succ := v.Successors(r.Ref)
		if len(succ) == 0 {
			continue
		}
		end := r.LastStart.Add(max(v.PredictedDuration(r.Ref)-r.Done, 0))
		if end.Sub(now) > horizon {
			continue
		}
		w := 1.0
		if now > end {
			over := now.Sub(end)
			if over >= decay {
				continue
			}
			w = 1 - float64(over)/float64(decay)
		}
		for _, s := range succ {
			sj := v.Job(s)
			if sj.State != sim.StatePending || !c.onlyWaitsFor(v, sj, r.Ref) {
				continue
			}
			g := int64(sj.Spec.TotalGPUs())
			held := int64(math.Ceil(w*float64(g) - 1e-9))
			if held <= 0 {
				continue
			}
			c.holds = append(c.holds, hold{rank: c.Rank(v, s), eta: max(end, now), gpus: held})
			// The hold shrinks by one GPU at end + decay·(1 − (held−1)/g),
			// and starts decaying at end.
			next := end
			if now >= end {
				next = end.Add(sim.Duration(math.Ceil(float64(decay) * (1 - float64(held-1)/float64(g)))))
			}
			if next > now {
				p.Wake(next)
			}
		}
	}
}

// onlyWaitsFor reports whether every predecessor of s other than r has
// completed.
func (c *CP) onlyWaitsFor(v *sim.View, s *sim.Job, r sim.JobRef) bool {
	for _, id := range s.Spec.DAG.Deps {
		if q := c.ids[id]; q != r && v.Job(q).State != sim.StateCompleted {
			return false
		}
	}
	return true
}

// clearOfHolds reports whether j may start without taking GPUs held for
// successors of higher rank that it would not finish before.
func (c *CP) clearOfHolds(v *sim.View, j *sim.Job) bool {
	var need int64
	end := v.Now().Add(max(v.PredictedDuration(j.Ref)-j.Done, 1))
	for _, h := range c.holds {
		if h.rank > c.rank[j.Ref] && end > h.eta {
			need += h.gpus
		}
	}
	return need == 0 || v.Cluster().FreeGPUs()-int64(j.Spec.TotalGPUs()) >= need
}
