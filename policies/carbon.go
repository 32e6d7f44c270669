package policies

import (
	"errors"
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/sim"
)

// CarbonParams are the carbon-aware policy's parameters: placement and strict
// as for fifo (QueueParams; strict by default) plus which jobs may be delayed
// and by how much.
type CarbonParams struct {
	Placement string `yaml:"placement"`
	Strict    *bool  `yaml:"strict"`
	// MaxDelay is how long after its submission a deferrable job may be held:
	// its deadline. Default 24h.
	MaxDelay Dur `yaml:"maxDelay"`
	// Deferrable selects the jobs that may be delayed: a job is deferrable when
	// its class is in Classes or its queue in Queues. Both empty: every job.
	Deferrable struct {
		Classes []string `yaml:"classes"`
		Queues  []string `yaml:"queues"`
	} `yaml:"deferrable"`
}

func init() {
	Register(Info{Name: "carbon-aware",
		Summary: "FIFO that holds deferrable jobs until the start within [submit, submit+maxDelay] with the lowest mean grid carbon intensity over their estimated run (Wiesner et al., Middleware'21); needs power.carbon.",
		Params:  "maxDelay (default 24h); deferrable: {classes: [...], queues: [...]} (empty = all jobs); placement; strict"},
		func(n *yaml.Node, _ Env) (sim.Policy, error) {
			var p CarbonParams
			if err := DecodeParams(n, &p); err != nil {
				return nil, err
			}
			return newCarbonAware(p)
		})
}

// DefaultCarbonMaxDelay is the carbon-aware policy's default maxDelay.
const DefaultCarbonMaxDelay = 24 * sim.Hour

// carbonAware is a strict FIFO queue policy (queuePolicy) with a hold step:
// deferrable jobs are held (reason carbon) until their chosen start.
//
// The start is chosen once per job, at the first scheduling point that looks
// at it (its arrival, unless a strict queue blocks before it), among now and
// every boundary of the carbon series' steps up to the deadline
// submit+maxDelay: the candidate s with the lowest mean intensity over
// [s, s+estimate) (the remaining walltime estimate, never the true duration),
// the earliest on ties. This is the non-interruptible shifting strategy of
// Wiesner et al., "Let's Wait Awhile: How Temporal Workload Shifting Can Reduce
// Carbon Emissions in the Cloud" (Middleware 2021, §4), with the series as a
// perfect forecast. From its chosen start on, a job is an ordinary FIFO job: it
// runs as soon as capacity (and the power cap) allow, so it never waits for a
// window past its deadline.
type carbonAware struct {
	*queuePolicy
	maxDelay sim.Duration
	classes  map[sim.JobClass]bool
	queues   map[string]bool
	until    []sim.Time // per job: chosen start (0 = not chosen yet)
	chosen   []bool
	wake     sim.Time
}

func newCarbonAware(p CarbonParams) (*carbonAware, error) {
	var errs []error
	q, err := newQueuePolicy("carbon-aware", orderFIFO, bfNone, QueueParams{Placement: p.Placement, Strict: p.Strict})
	if err != nil {
		errs = append(errs, err)
	}
	c := &carbonAware{queuePolicy: q, maxDelay: sim.Duration(p.MaxDelay)}
	if c.maxDelay == 0 {
		c.maxDelay = DefaultCarbonMaxDelay
	}
	if len(p.Deferrable.Classes) > 0 {
		c.classes = map[sim.JobClass]bool{}
		for i, s := range p.Deferrable.Classes {
			cl, err := sim.ParseClass(s)
			if err != nil {
				errs = append(errs, fmt.Errorf("deferrable.classes[%d]: %w", i, err))
			}
			c.classes[cl] = true
		}
	}
	if len(p.Deferrable.Queues) > 0 {
		c.queues = map[string]bool{}
		for _, s := range p.Deferrable.Queues {
			c.queues[s] = true
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	q.hold = c.hold
	return c, nil
}

// Deferrable reports whether job s may be delayed.
func (c *carbonAware) deferrable(s *sim.JobSpec) bool {
	if c.classes == nil && c.queues == nil {
		return true
	}
	return c.classes[s.Class] || c.queues[s.Queue]
}

// HonorsPowerCap: the queue policy's starts are checked.
func (c *carbonAware) HonorsPowerCap() bool { return true }

func (c *carbonAware) Schedule(v *sim.View, p *sim.Plan) error {
	if v.Carbon() == nil {
		return &ConfigError{Err: errors.New("carbon-aware: the scenario has no power.carbon series")}
	}
	if c.until == nil {
		c.until = make([]sim.Time, v.NumJobs())
		c.chosen = make([]bool, v.NumJobs())
	}
	c.wake = sim.Never
	err := c.queuePolicy.Schedule(v, p)
	if c.wake != sim.Never {
		p.WakeAt = min(p.WakeAt, c.wake)
	}
	return err
}

// hold is queuePolicy.hold: true while deferrable job j waits for its start.
func (c *carbonAware) hold(v *sim.View, p *sim.Plan, j *sim.Job) bool {
	s := &j.Spec
	if !c.deferrable(s) {
		return false
	}
	now := v.Now()
	if !c.chosen[j.Ref] {
		c.chosen[j.Ref] = true
		c.until[j.Ref] = BestCarbonStart(v.Carbon(), now, s.Submit.Add(c.maxDelay), max(j.Estimate-j.Done, 1))
	}
	t := c.until[j.Ref]
	if t <= now {
		return false
	}
	p.Wait(j.Ref, sim.ReasonCarbon)
	c.wake = min(c.wake, t)
	return true
}

// BestCarbonStart returns the start s in {now} ∪ {k·Step : now < k·Step <=
// deadline} with the lowest mean intensity of cs over [s, s+run), the earliest
// on ties; now when deadline <= now.
func BestCarbonStart(cs *sim.CarbonSeries, now, deadline sim.Time, run sim.Duration) sim.Time {
	best, bestM := now, cs.Mean(now, now.Add(run))
	st := int64(cs.Step)
	for s := sim.Time((int64(now)/st + 1) * st); s <= deadline; s += sim.Time(st) {
		if m := cs.Mean(s, s.Add(run)); m < bestM*(1-1e-12) {
			best, bestM = s, m
		}
	}
	return best
}
