package pollux

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/policies/rounds"
	"github.com/gpusim/gpusim/sim"
	pm "github.com/gpusim/gpusim/workloads/pollux"
)

// PolluxParams are the engine Pollux policy's parameters.
type PolluxParams struct {
	// Round is the round length (default 60s, the artifact's --interval and
	// adaptdl's scheduling interval).
	Round *policies.Dur `yaml:"round"`
	// P is the fairness power of the objective's generalised mean (Pollux
	// §4.2; default −1, the artifact's).
	P *float64 `yaml:"p"`
	// RestartPenalty is the restart cost in the objective's restart factor
	// max(age − penalty·restarts, 0)/(age + penalty) (default 30s, the
	// artifact's). The engine's actual cost of a resize is the scenario's
	// rescaleDelay.
	RestartPenalty *policies.Dur `yaml:"restartPenalty"`
}

func init() {
	policies.RegisterDecoded[PolluxParams](policies.Info{
		Name:    "pollux",
		Summary: "Pollux (OSDI'21) as in its artifact: rounds of 60 s; each job's goodput model fitted from its observed step times, allocations by a greedy optimiser of the power-mean speedup with restart penalty (in place of NSGA-II); each job re-picks its batch size every round and epoch (Plan.AddRate). Jobs: trace format pollux-adaptive (docs/pollux.md).",
		Params:  "round (60s); p (fairness power, -1); restartPenalty (30s)",
	}, NewEnginePollux)
}

// polluxKnobs checks and fills the shared knobs (round, p, restart penalty).
func polluxKnobs(p PolluxParams) (round sim.Duration, pol *polluxPolicy, err error) {
	round = 60 * sim.Second
	pol = newPolluxPolicy()
	var errs []error
	if p.Round != nil {
		if round = sim.Duration(*p.Round); round < sim.Second {
			errs = append(errs, errors.New("round: must be at least 1s"))
		}
	}
	if p.P != nil {
		if pol.p = *p.P; math.IsNaN(pol.p) || pol.p > 1 || pol.p < -10 {
			errs = append(errs, fmt.Errorf("p: must be in -10..1, got %v", pol.p))
		}
	}
	if p.RestartPenalty != nil {
		if pol.restart = sim.Duration(*p.RestartPenalty).Seconds(); pol.restart < 0 {
			errs = append(errs, errors.New("restartPenalty: must be >= 0"))
		}
	}
	if len(errs) > 0 {
		return 0, nil, &policies.ConfigError{Err: errors.Join(errs...)}
	}
	return round, pol, nil
}

// NewEnginePollux builds the engine's Pollux: a rounds.Driver around the
// standalone reproduction's optimiser (pollux.go) over per-job agents
// (enginePollux) that fit each job's goodput model from the step times it
// observes and re-pick its batch size.
func NewEnginePollux(p PolluxParams) (*rounds.Driver, error) {
	round, pol, err := polluxKnobs(p)
	if err != nil {
		return nil, err
	}
	d, err := rounds.New("pollux", round, &enginePollux{agents: agents{name: "pollux", every: round}, pol: pol})
	if err != nil {
		return nil, err
	}
	d.Repack = true // changed jobs go where the optimiser placed them (Placer)
	return d, nil
}

// agent is one job's PolluxAgent (adaptdl's sched_hints and the artifact's
// simulator.py:Job): the standalone job state (fitted model, attained
// service, restarts, batch size) of an engine job.
type agent struct {
	j     *job
	m     *pm.ElasticModel
	nodes []sim.NodeID // sorted placement at the last Rerate (nil: not running)
	place []int
	live  bool
}

// rate is the job's AdaptiveRate at its batch size on its placement in
// epoch. Where the profiles give no step time for that batch on that
// placement (a spread the artifact's placements.csv lacks, outside the
// interpolation's hull), the job runs the smallest batch instead
// (min_local_bsz per replica), as pm.AdaptiveModel.Rate does.
func (g *agent) rate(epoch int) (rate, step, sync float64, err error) {
	jb := g.j
	rate, step, sync, err = g.m.AdaptiveRate(g.place, jb.atomic, jb.accum, epoch)
	if err == nil {
		return rate, step, sync, nil
	}
	reps := 0
	for _, v := range g.place {
		reps += v
	}
	jb.atomic, jb.accum = jb.app.FixedBatch(min(jb.app.MinLocalBsz*reps, jb.app.MaxBatchSize), reps)
	return g.m.AdaptiveRate(g.place, jb.atomic, jb.accum, epoch)
}

// observe reports the step time and gradient statistics the job saw in
// epoch ran at its batch size and placement (refitting its model when the
// point is new, simulator.py:Job.update_params) and re-picks its batch size
// (Job.update_local_bsz).
func (g *agent) observe(j *sim.Job, ran int) error {
	jb := g.j
	_, st, sy, err := g.rate(ran)
	if err != nil {
		return fmt.Errorf("job %s: %w", j, err)
	}
	batch := float64(len(j.Nodes) * jb.atomic * (jb.accum + 1))
	sqr, vr, err := jb.app.GradStats(batch, ran)
	if err != nil {
		return fmt.Errorf("job %s: %w", j, err)
	}
	jb.updateParams(len(g.place), len(j.Nodes), jb.atomic, st, sy, sqr, vr)
	jb.updateLocalBsz()
	return nil
}

// report is the agents' part of a round before the optimiser runs: every
// running job past its restart reports what it observed since the last
// call and re-picks its batch size (simulator.py runs every job's step for
// the interval before the policy's optimize).
func (a *agents) report(v *sim.View) error {
	now := v.Now()
	for _, j := range v.Running() {
		g, err := a.get(j)
		if err != nil {
			return err
		}
		if !j.Resizable(now) || g.nodes == nil {
			continue
		}
		epoch := g.m.Epoch(v.WorkDone(j.Ref))
		g.j.epoch = epoch
		if err := g.observe(j, epoch); err != nil {
			return fmt.Errorf("%s: %w", a.name, err)
		}
	}
	return nil
}

// agents keeps the engine jobs' agents (indexed by JobRef) and their
// attained service.
type agents struct {
	name  string
	all   []*agent
	last  sim.Time     // attained service counted up to here
	round sim.Time     // time of the last Allocate
	every sim.Duration // round length
	tmp   []sim.NodeID
}

// get returns job j's agent, made on first use.
func (a *agents) get(j *sim.Job) (*agent, error) {
	for int(j.Ref) >= len(a.all) {
		a.all = append(a.all, nil)
	}
	if g := a.all[j.Ref]; g != nil {
		return g, nil
	}
	el := j.Spec.Elastic
	var m *pm.ElasticModel
	if el != nil {
		switch r := el.Rate.(type) {
		case *pm.ElasticModel:
			m = r
		case pm.AdaptiveModel:
			m = r.ElasticModel
		}
	}
	if m == nil || j.Spec.GPUsPerReplica != 1 {
		return nil, fmt.Errorf("%s: job %s has no Pollux goodput model (read the trace with format pollux-adaptive)", a.name, j)
	}
	s := pm.Job{Name: string(j.Spec.ID), Submit: sim.Duration(j.Spec.Submit).Seconds(), App: m.App.Name, Replicas: int(j.Spec.Replicas), BatchSize: m.BatchSize}
	g := &agent{j: &job{idx: int(j.Ref), spec: s, app: m.App, restarts: -1, fit: true, maxRepCap: int(el.Max)}, m: m}
	if m.App.Name == "ncf" {
		g.j.targetBsz = 32768 // simulator.py: Pollux runs ncf at a fixed batch
	}
	a.all[j.Ref] = g
	return g, nil
}

// account adds the running jobs' GPU time since the last call to their
// attained service (simulator.py:Job.step counts the restart delay too).
func (a *agents) account(v *sim.View) error {
	now := v.Now()
	dt := sim.Duration(now - a.last).Seconds()
	for _, j := range v.Running() {
		g, err := a.get(j)
		if err != nil {
			return err
		}
		g.j.attained += dt * float64(len(j.Nodes))
	}
	a.last = now
	return nil
}

// rerate is the agents' part of a scheduling point after the round's
// decisions (rounds.Rater): each running job whose placement changed
// restarts (restarts+1, batch size re-picked for it,
// simulator.py:Job.reallocate); between rounds, a job that crossed an epoch
// boundary reports and re-picks (simulator.py:Job.step calls
// update_local_bsz at every epoch boundary and at the end of every
// interval; the end of an interval is report, before the optimiser). Each job's rate is
// then its goodput at that batch size (ElasticModel.AdaptiveRate), and a
// scheduling point is asked for at its next epoch boundary.
func (a *agents) rerate(v *sim.View, p *sim.Plan, running []*sim.Job, next sim.Time) error {
	if err := a.account(v); err != nil {
		return err
	}
	now := v.Now()
	for _, g := range a.all {
		if g != nil {
			g.live = false
		}
	}
	for _, j := range running {
		g, err := a.get(j)
		if err != nil {
			return err
		}
		g.live = true
		jb := g.j
		done := v.WorkDone(j.Ref)
		epoch := g.m.Epoch(done)
		g.place = pm.Profiled(pm.Placement(j.Nodes, g.place))
		a.tmp = append(a.tmp[:0], j.Nodes...)
		slices.Sort(a.tmp)
		changed := g.nodes == nil || !slices.Equal(a.tmp, g.nodes)
		ran := jb.epoch // the epoch the job ran in since the last call
		crossed := epoch != ran
		jb.epoch = epoch
		jb.placement = g.place
		switch {
		case changed:
			g.nodes = append(g.nodes[:0], a.tmp...)
			jb.restarts++
			jb.updateLocalBsz()
		case crossed:
			// at an epoch boundary: report the step time and gradient
			// statistics of the epoch just finished and re-pick, as
			// Job.step's loop does
			if err := g.observe(j, ran); err != nil {
				return fmt.Errorf("%s: %w", a.name, err)
			}
		}
		rate, _, _, err := g.rate(epoch)
		if err != nil {
			return fmt.Errorf("%s: job %s: %w", a.name, j, err)
		}
		if err := p.AddRate(j.Ref, rate); err != nil {
			return err
		}
		// the next epoch boundary, if before the next round (at least 1 ms on)
		if end := g.m.EpochEnd(epoch); end < j.Spec.Duration {
			at := now.Add(sim.Duration(float64(end-done)/rate) + sim.Millisecond)
			if at < next {
				p.Wake(at)
			}
		}
	}
	for _, g := range a.all {
		if g != nil && !g.live {
			g.nodes = nil // its next start is a restart
		}
	}
	return nil
}

// enginePollux is PolluxPolicy.optimize as a rounds.Allocator and Rater.
type enginePollux struct {
	agents
	pol    *polluxPolicy
	active []*job
	prev   [][]int
	out    [][]int // the last round's nodes per active job
	place  []sim.NodeID
}

// Place implements rounds.Placer: the nodes the optimiser gave active job i.
func (o *enginePollux) Place(i int) []sim.NodeID {
	o.place = o.place[:0]
	for _, n := range o.out[i] {
		o.place = append(o.place, sim.NodeID(n))
	}
	return o.place
}

// Allocate implements rounds.Allocator: the standalone optimiser on the
// cluster's nodes, each job's current nodes as its previous allocation. On
// nodes of different sizes each keeps its own capacity and the dominant
// share uses the largest; GPU models are ignored (Pollux is
// heterogeneity-unaware, as Sia's pollux_unaware.py).
func (o *enginePollux) Allocate(v *sim.View, active []*sim.Job, want []int32) error {
	if err := o.account(v); err != nil {
		return err
	}
	if err := o.report(v); err != nil {
		return err
	}
	o.round = v.Now()
	c := v.Cluster()
	per := int(c.MaxGPUsPerNode())
	var caps []int
	for n := range c.NumNodes() {
		if f, e := c.NodeGPUs(sim.NodeID(n)); int(e-f) != per && caps == nil {
			caps = make([]int, c.NumNodes())
			for m := range caps {
				f, e := c.NodeGPUs(sim.NodeID(m))
				caps[m] = int(e - f)
			}
		}
	}
	o.active, o.prev = o.active[:0], o.prev[:0]
	for _, j := range active {
		g, err := o.get(j)
		if err != nil {
			return err
		}
		o.active = append(o.active, g.j)
		var prev []int
		if j.State == sim.StateRunning {
			for _, n := range j.Nodes {
				prev = append(prev, int(n))
			}
		}
		o.prev = append(o.prev, prev)
	}
	out, err := o.pol.optimize(sim.Duration(o.round).Seconds(), o.active, o.prev, Config{Nodes: c.NumNodes(), GPUsPerNode: per, NodeGPUs: caps})
	if err != nil {
		return fmt.Errorf("pollux: %w", err)
	}
	for i, j := range active {
		want[i] = min(int32(len(out[i])), j.Spec.Elastic.Max)
	}
	o.out = out
	return nil
}

// Rerate implements rounds.Rater.
func (o *enginePollux) Rerate(v *sim.View, p *sim.Plan, running []*sim.Job) error {
	return o.rerate(v, p, running, o.round.Add(o.every))
}
