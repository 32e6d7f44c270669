// Package tiresias is Tiresias's discretized two-dimensional least-attained-
// service scheduler (Gu et al., NSDI'19; SymbioticLab/Tiresias
// simulator/run_sim.py dlas_sim_jobs and simulator/jobs.py): jobs move down
// priority queues as their attained service (GPU-time, or time) crosses the
// queue thresholds, queues are served in order and FIFO within a queue without
// head-of-line blocking, and running jobs that lose their place are preempted
// (they keep their progress). See docs/tiresias.md.
package tiresias

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/policies/placement"
	"github.com/gpusim/gpusim/sim"
)

// Params are the tiresias policy's parameters.
type Params struct {
	// Thresholds are the attained-service limits of the queues, ascending
	// (K thresholds make K+1 queues); default the simulator's [3250s, 7200s]
	// (jobs.py queue_limit; its third value is unused). In GPU-seconds for
	// service gpu-time.
	Thresholds []policies.Dur `yaml:"thresholds"`
	// Service is what a job attains: gpu-time (default; "dlas-gpu", the
	// two-dimensional LAS) or time ("dlas").
	Service string `yaml:"service"`
	// PromoteKnob P: a job below the top queue that has run and has waited at
	// least P x its executed time since it last ran goes back to the top queue
	// with its executed time reset (starvation avoidance); 0 (default) = off.
	PromoteKnob float64 `yaml:"promoteKnob"`
	// Placement places the jobs a pass starts (default best-fit, consolidating
	// like the simulator's yarn scheme).
	Placement string `yaml:"placement"`
}

func init() {
	policies.Register(policies.Info{
		Name:    "tiresias",
		Summary: "Tiresias (NSDI'19): discretized 2D-LAS: jobs demoted through priority queues by attained GPU-time, queues in order, FIFO within a queue, no head-of-line blocking; preempted jobs keep their progress.",
		Params:  "thresholds ([3250s, 7200s]); service: gpu-time|time; promoteKnob (0 = off); placement (best-fit)",
	}, func(n *yaml.Node, _ policies.Env) (sim.Policy, error) {
		var p Params
		if err := policies.DecodeParams(n, &p); err != nil {
			return nil, err
		}
		return New(p)
	})
}

// New builds the policy.
func New(p Params) (*Tiresias, error) {
	t := &Tiresias{gpuTime: true, knob: p.PromoteKnob}
	var errs []error
	if p.Thresholds == nil {
		t.limits = []float64{3250, 7200}
	}
	for i, d := range p.Thresholds {
		s := sim.Duration(d).Seconds()
		if s <= 0 || i > 0 && s <= t.limits[i-1] {
			errs = append(errs, fmt.Errorf("thresholds[%d]: must be > 0 and ascending", i))
		}
		t.limits = append(t.limits, s)
	}
	switch p.Service {
	case "", "gpu-time":
	case "time":
		t.gpuTime = false
	default:
		errs = append(errs, fmt.Errorf("service: unknown %q (want gpu-time or time)", p.Service))
	}
	if p.PromoteKnob < 0 {
		errs = append(errs, errors.New("promoteKnob: must be >= 0"))
	}
	name := p.Placement
	if name == "" {
		name = "best-fit"
	}
	var err error
	if t.placer, err = placement.New(name); err != nil {
		errs = append(errs, fmt.Errorf("placement: %w", err))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return t, nil
}

// tjob is the policy's state of one job.
type tjob struct {
	j        *sim.Job
	queue    int
	seq      int64    // order of entry into its queue
	executed float64  // seconds run since arrival or the last promotion
	stopped  sim.Time // when it last stopped running (pending since)
	ran      bool
}

// Tiresias is the tiresias policy. See the package documentation.
type Tiresias struct {
	limits  []float64
	gpuTime bool
	knob    float64
	placer  placement.Placer

	jobs     []*tjob // by ref; nil until arrival
	live     []*tjob // arrived and not ended
	seq      int64
	last     sim.Time
	prepared *sim.Cluster
	pl       placement.Placement
	order    []*tjob
	// Demotions and Promotions count queue moves (tests, explain).
	Demotions, Promotions int
}

// Name returns "tiresias".
func (t *Tiresias) Name() string { return "tiresias" }

// Observe tracks arrivals and ends.
func (t *Tiresias) Observe(v *sim.View, e sim.Event) {
	if t.jobs == nil {
		t.jobs = make([]*tjob, v.NumJobs())
	}
	switch e.Kind {
	case sim.EvArrive:
		tj := &tjob{j: v.Job(e.Job), seq: t.seq, stopped: v.Now()}
		t.seq++
		t.jobs[e.Job] = tj
		t.live = append(t.live, tj)
	case sim.EvFinish, sim.EvKill, sim.EvTimeout:
		if tj := t.jobs[e.Job]; tj != nil {
			t.account(v.Now())
			if i := slices.Index(t.live, tj); i >= 0 {
				t.live = slices.Delete(t.live, i, i+1)
			}
		}
	}
}

// service is a job's attained service for the queue thresholds.
func (t *Tiresias) service(tj *tjob) float64 {
	if t.gpuTime {
		return tj.executed * float64(tj.j.Spec.TotalGPUs())
	}
	return tj.executed
}

// account adds the time since the last scheduling point to every running job.
func (t *Tiresias) account(now sim.Time) {
	if now <= t.last {
		return
	}
	d := now.Sub(t.last).Seconds()
	for _, tj := range t.live {
		if tj.j.State == sim.StateRunning {
			tj.executed += d
		}
	}
	t.last = now
}

// Schedule re-runs the allocation: demotions and promotions, then the queues
// in order, FIFO within each, every job that fits the GPUs left (by count, as
// the simulator's resource counting) selected; running jobs not selected are
// preempted and pending selected ones placed and started.
func (t *Tiresias) Schedule(v *sim.View, p *sim.Plan) error {
	if t.jobs == nil {
		t.jobs = make([]*tjob, v.NumJobs())
	}
	c := v.Cluster()
	if t.prepared != c {
		if err := placement.Prepare(t.placer, v); err != nil {
			return err
		}
		t.prepared = c
	}
	now := v.Now()
	t.account(now)
	for _, tj := range t.live {
		for tj.queue < len(t.limits) && t.service(tj) >= t.limits[tj.queue]-1e-6 {
			tj.queue++
			tj.seq = t.seq
			t.seq++
			t.Demotions++
		}
		if t.knob > 0 && tj.queue > 0 && tj.ran && tj.j.State == sim.StatePending &&
			now.Sub(tj.stopped).Seconds() >= t.knob*tj.executed {
			tj.queue, tj.executed = 0, 0
			tj.seq = t.seq
			t.seq++
			t.Promotions++
		}
	}
	t.order = append(t.order[:0], t.live...)
	slices.SortFunc(t.order, func(a, b *tjob) int {
		if a.queue != b.queue {
			return a.queue - b.queue
		}
		return int(a.seq - b.seq)
	})
	free := c.NumGPUs()
	selected := make(map[*tjob]bool, len(t.order))
	for _, tj := range t.order {
		if g := int64(tj.j.Spec.TotalGPUs()); g <= free {
			free -= g
			selected[tj] = true
		}
	}
	for _, tj := range t.order {
		if tj.j.State == sim.StateRunning && !selected[tj] {
			if err := p.AddPreempt(tj.j.Ref, sim.PreemptLease, "tiresias: lower priority"); err != nil {
				return err
			}
			tj.stopped = now
		}
	}
	for _, tj := range t.order {
		if tj.j.State != sim.StatePending {
			continue
		}
		if !selected[tj] || !t.placer.Place(c, tj.j, &t.pl) {
			p.Wait(tj.j.Ref, sim.ReasonFairShare)
			continue
		}
		if err := p.AddStart(tj.j.Ref, t.pl.Nodes, t.pl.GPUs); err != nil {
			return err
		}
		tj.ran = true
	}
	// next demotion of a running job, next promotion of a waiting one
	next := sim.Never
	for _, tj := range t.live {
		switch {
		case tj.j.State == sim.StateRunning && tj.queue < len(t.limits):
			rate := 1.0
			if t.gpuTime {
				rate = float64(tj.j.Spec.TotalGPUs())
			}
			at := now + sim.Time(math.Ceil((t.limits[tj.queue]-t.service(tj))/rate*1e6))
			next = min(next, max(at, now+1))
		case t.knob > 0 && tj.j.State == sim.StatePending && tj.queue > 0 && tj.ran:
			at := tj.stopped + sim.Time(sim.Seconds(t.knob*tj.executed))
			next = min(next, max(at, now+1))
		}
	}
	if next != sim.Never {
		p.Wake(next)
	}
	return nil
}
