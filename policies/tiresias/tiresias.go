// Package tiresias is Tiresias's discretized two-dimensional least-attained-
// service scheduler (Gu et al., NSDI'19; SymbioticLab/Tiresias
// simulator/run_sim.py dlas_sim_jobs and simulator/jobs.py): jobs move down
// priority queues as their attained service (GPU-time, or time) crosses the
// queue thresholds, queues are served in order and FIFO within a queue without
// head-of-line blocking, and running jobs that lose their place are preempted
// (they keep their progress). Mode sjf is the simulator's preemptive
// smallest-job-first (smallest_first_sim_jobs); queueOrder running-first and
// accounting simulator reproduce dlas_sim_jobs's queue order and its
// whole-second, event-driven demotion and promotion checks, so that gpusim
// agrees with the simulator job for job. See docs/tiresias.md.
package tiresias

import (
	"errors"
	"fmt"
	"math"
	"slices"

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
	// Mode is dlas (default: the queues above) or sjf: the simulator's own
	// preemptive smallest-job-first (run_sim.py smallest_first_sim_jobs): jobs
	// by fewest GPUs, ties by arrival, every job that fits selected; Thresholds,
	// Service, PromoteKnob, QueueOrder and Accounting do not apply.
	Mode string `yaml:"mode"`
	// QueueOrder orders the jobs of one queue: entry (default: by entry into
	// the queue) or running-first (dlas_sim_jobs: after each pass the jobs left
	// waiting move, in order, behind the running ones).
	QueueOrder string `yaml:"queueOrder"`
	// Accounting is exact (default: demotion the microsecond the service
	// reaches a threshold; promotion after P x executed time waited since the
	// job last ran) or simulator (dlas_sim_jobs): a running job is demoted at
	// most one queue per scheduling point, when its whole seconds of service
	// reach the threshold, and the next check is the simulator's jump time;
	// the promotion clock is the time waited since the last promotion.
	Accounting string `yaml:"accounting"`
}

func init() {
	policies.RegisterDecoded[Params](policies.Info{
		Name:    "tiresias",
		Summary: "Tiresias (NSDI'19): discretized 2D-LAS: jobs demoted through priority queues by attained GPU-time, queues in order, FIFO within a queue, no head-of-line blocking; preempted jobs keep their progress.",
		Params:  "thresholds ([3250s, 7200s]); service: gpu-time|time; promoteKnob (0 = off); placement (best-fit); mode: dlas|sjf; queueOrder: entry|running-first; accounting: exact|simulator",
	}, New)
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
	if choice(&errs, "service", p.Service, "gpu-time", "time") {
		t.gpuTime = false
	}
	t.sjf = choice(&errs, "mode", p.Mode, "dlas", "sjf")
	t.runningFirst = choice(&errs, "queueOrder", p.QueueOrder, "entry", "running-first")
	t.simAcct = choice(&errs, "accounting", p.Accounting, "exact", "simulator")
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
	arrival  int64   // order of arrival (sjf ties)
	selected bool    // selected by the current pass
	waited   float64 // accounting simulator: seconds waited after running, since the last promotion
}

// Tiresias is the tiresias policy. See the package documentation.
type Tiresias struct {
	limits  []float64
	gpuTime bool
	knob    float64
	placer  placement.Placer
	// sjf, runningFirst and simAcct are Mode sjf, QueueOrder running-first
	// and Accounting simulator.
	sjf, runningFirst, simAcct bool
	// eventAt is the time of the last arrival or end, jump the simulator's
	// next_job_jump (accounting simulator: the only other scheduling point).
	eventAt, jump sim.Time

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
	if len(t.jobs) < v.NumJobs() { // first call, or jobs submitted since (live runs)
		t.jobs = append(t.jobs, make([]*tjob, v.NumJobs()-len(t.jobs))...)
	}
	switch e.Kind {
	case sim.EvArrive:
		t.eventAt = v.Now()
		tj := &tjob{j: v.Job(e.Job), seq: t.seq, arrival: t.seq, stopped: v.Now()}
		t.seq++
		t.jobs[e.Job] = tj
		t.live = append(t.live, tj)
	case sim.EvFinish, sim.EvKill, sim.EvTimeout:
		t.eventAt = v.Now()
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
		} else if tj.executed > 0 {
			tj.waited += d
		}
	}
	t.last = now
}

// Schedule re-runs the allocation: demotions and promotions, then the queues
// in order (FIFO within each, or running-first), every job that fits the GPUs
// left (by count, as the simulator's resource counting) selected; running jobs
// not selected are preempted and pending selected ones placed and started. In
// mode sjf the order is fewest GPUs first, then arrival, with no queues. With
// accounting simulator, a call that is neither at an arrival or end nor at
// the simulator's next check changes nothing.
func (t *Tiresias) Schedule(v *sim.View, p *sim.Plan) error {
	if len(t.jobs) < v.NumJobs() { // first call, or jobs submitted since (live runs)
		t.jobs = append(t.jobs, make([]*tjob, v.NumJobs()-len(t.jobs))...)
	}
	c := v.Cluster()
	if t.prepared != c {
		if err := placement.Prepare(t.placer, v); err != nil {
			return err
		}
		t.prepared = c
	}
	now := v.Now()
	if t.simAcct && now != t.eventAt && now != t.jump {
		// Not a point of dlas_sim_jobs (an earlier jump it has since
		// recomputed, another wake-up): the simulator does nothing here.
		if t.jump > now {
			p.Wake(t.jump)
		}
		return nil
	}
	t.account(now)
	switch {
	case t.sjf:
	case t.simAcct:
		t.simulatorMoves()
	default:
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
	}
	t.order = append(t.order[:0], t.live...)
	if t.sjf {
		slices.SortFunc(t.order, func(a, b *tjob) int {
			if ga, gb := a.j.Spec.TotalGPUs(), b.j.Spec.TotalGPUs(); ga != gb {
				return int(ga - gb)
			}
			return int(a.arrival - b.arrival)
		})
	} else {
		slices.SortFunc(t.order, func(a, b *tjob) int {
			if a.queue != b.queue {
				return a.queue - b.queue
			}
			return int(a.seq - b.seq)
		})
	}
	free := c.NumGPUs()
	for _, tj := range t.order {
		tj.selected = false
		if g := int64(tj.j.Spec.TotalGPUs()); g <= free {
			free -= g
			tj.selected = true
		}
	}
	for _, tj := range t.order {
		if tj.j.State == sim.StateRunning && !tj.selected {
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
		if !tj.selected || !t.placer.Place(c, tj.j, &t.pl) {
			p.Wait(tj.j.Ref, sim.ReasonFairShare)
			continue
		}
		if err := p.AddStart(tj.j.Ref, t.pl.Nodes, t.pl.GPUs); err != nil {
			return err
		}
		tj.ran = true
	}
	if t.sjf {
		return nil // no queue moves to wake for
	}
	if t.runningFirst {
		// dlas_sim_jobs: the jobs left waiting move behind the running ones of
		// their queue, keeping their order (t.order is the pass's order).
		for _, tj := range t.order {
			if tj.j.State != sim.StateRunning {
				tj.seq = t.seq
				t.seq++
			}
		}
	}
	next := sim.Never
	if t.simAcct {
		next = t.simulatorJump(now)
		t.jump = next
	} else {
		// next demotion of a running job, next promotion of a waiting one
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
	}
	if next != sim.Never {
		p.Wake(next)
	}
	return nil
}

// simulatorMoves is dlas_sim_jobs's queue update at a scheduling point
// (accounting simulator), in arrival order: a running job whose whole seconds
// of service reach its queue's threshold drops one queue (one per point); a
// waiting job below the top queue that has run and has waited, since its last
// promotion, at least int(P x executed) seconds returns to the top queue with
// its executed time and waiting clock reset. Moved jobs go to the back of
// their new queue.
func (t *Tiresias) simulatorMoves() {
	for _, tj := range t.live {
		switch {
		case tj.j.State == sim.StateRunning:
			if tj.queue < len(t.limits) && math.Floor(t.service(tj)) >= t.limits[tj.queue] {
				tj.queue++
				tj.seq = t.seq
				t.seq++
				t.Demotions++
			}
		case t.knob > 0 && tj.queue > 0 && tj.ran && tj.executed > 0:
			if tj.waited >= math.Trunc(tj.executed*t.knob) {
				tj.queue, tj.executed, tj.waited = 0, 0, 0
				tj.seq = t.seq
				t.seq++
				t.Promotions++
			}
		}
	}
}

// simulatorJump is dlas_sim_jobs's next_job_jump (accounting simulator): for
// a running job below the last queue, now + (threshold - executed seconds) /
// GPUs in whole seconds, rounded down (Python 2 integer division: the
// simulator divides the GPU-time left by the GPU count, but subtracts the
// executed time, not the GPU-time, so the check comes late and a job may not
// yet have crossed when it comes); for service time, now + threshold -
// executed. For a waiting job that can be promoted, now + int(P x executed -
// waited) if positive. A jump not after now (thresholds more than one queue
// apart crossed at once) is taken 1 µs later.
func (t *Tiresias) simulatorJump(now sim.Time) sim.Time {
	next := sim.Never
	for _, tj := range t.live {
		switch {
		case tj.j.State == sim.StateRunning:
			if tj.queue >= len(t.limits) {
				continue
			}
			d := t.limits[tj.queue] - tj.executed
			if t.gpuTime {
				d = math.Floor(d / float64(tj.j.Spec.TotalGPUs()))
			}
			next = min(next, max(now+sim.Time(sim.Seconds(d)), now+1))
		case t.knob > 0 && tj.queue > 0 && tj.ran && tj.executed > 0:
			if d := math.Trunc(tj.executed*t.knob - tj.waited); d > 0 {
				next = min(next, now+sim.Time(sim.Seconds(d)))
			}
		}
	}
	return next
}

// choice parses a parameter with two values: "" or def gives false, alt gives
// true; anything else appends an error naming the field and gives false.
func choice(errs *[]error, field, v, def, alt string) bool {
	switch v {
	case "", def:
		return false
	case alt:
		return true
	}
	*errs = append(*errs, fmt.Errorf("%s: unknown %q (want %s or %s)", field, v, def, alt))
	return false
}
