package sim

import (
	"errors"
	"fmt"
)

// Stepped mode: an Engine advanced one event time at a time by a caller that
// interleaves several engines on one virtual clock (package federation: one
// engine per member cluster, a dispatcher sending each job to one of them).
//
// Every stepper of a federation holds the whole workload (same specs, same
// JobRefs, so policies size their per-job state as in a simulation), but no
// job arrives by itself: the driver makes a job arrive in the one engine it
// dispatched it to (Step's arrivals). A job never dispatched to an engine
// stays there as a job that has not arrived yet, as future jobs are in
// Engine.Run; Result drops them.
//
//	driver loop:
//	  t := min(next dispatch arrival time, s.Next() for every stepper)
//	  s.Step(t, arrivals)   for every stepper with s.Next() == t or arrivals at t
//	  s.Done()              once no more arrivals will come
//	  s.Result()            once every stepper's Next() is Never
//
// Step processes the events of one time exactly as Engine.Run's loop does
// (ends, arrivals, wake-ups, then one scheduling call), so a stepper whose
// jobs all arrive at their Submit time gives Run's result
// (TestStepperMatchesRun). Engine.Run never goes through this file:
// simulation outputs and speed are unchanged.

// Stepper is an Engine driven one event time at a time, its arrivals decided
// by the caller. It is single-threaded and not safe for concurrent use.
type Stepper struct {
	e       *Engine
	horizon Time
	more    bool // arrivals may still come (Done not called)
	arrived []bool
	done    bool
}

// NewStepper prepares a stepped run of cfg. Failure injection, device-level
// sharing, power, checkpoint storage, job dependencies and serving jobs are
// not supported; the log feed and progress callback are ignored.
func NewStepper(cfg Config) (*Stepper, error) {
	switch {
	case cfg.Sharing != nil:
		return nil, errors.New("sim: stepped run: device-level GPU sharing is not supported")
	case cfg.Failures != nil:
		return nil, errors.New("sim: stepped run: failure injection is not supported")
	case cfg.Storage != nil:
		return nil, errors.New("sim: stepped run: checkpoint storage is not supported")
	case cfg.Power != nil:
		return nil, errors.New("sim: stepped run: power accounting is not supported")
	}
	for i := range cfg.Jobs {
		if s := &cfg.Jobs[i]; s.DAG != nil {
			return nil, fmt.Errorf("sim: stepped run: job %q: job dependencies are not supported", s.ID)
		} else if s.Serving != nil {
			return nil, fmt.Errorf("sim: stepped run: job %q: serving jobs are not supported", s.ID)
		}
	}
	cfg.LogFeed = nil
	cfg.Progress = nil
	e, err := NewEngine(cfg)
	if err != nil {
		return nil, err
	}
	e.nextArr = len(e.jobs) // arrivals come from the driver only
	h := cfg.Horizon
	if h <= 0 {
		h = Never
	}
	return &Stepper{e: e, horizon: h, more: true, arrived: make([]bool, len(e.jobs))}, nil
}

// View returns the policy's view of the stepper's state (read-only for callers).
func (s *Stepper) View() *View { return &s.e.view }

// Now returns the stepper's current virtual time.
func (s *Stepper) Now() Time { return s.e.now }

// Next returns the time of the stepper's next queued event (an end or a
// wake-up), or Never when none is left or it is past the horizon. Arrivals
// are the driver's: they are not included.
func (s *Stepper) Next() Time {
	e := s.e
	if e.q.Len() == 0 || e.q.top().t > s.horizon {
		return Never
	}
	return e.q.top().t
}

// Horizon returns the run's horizon (Never when none).
func (s *Stepper) Horizon() Time { return s.horizon }

// Done says no more arrivals will come: from now on the stepper drops
// wake-ups that cannot change anything, as Engine.Run does once every job
// has arrived.
func (s *Stepper) Done() { s.more = false }

// Step moves to time t (not before the current time, not after Next(), not
// past the horizon) and processes every event then as one iteration of
// Engine.Run's loop: ends, the given arrivals (in the order given; each job
// at most once over the run), wake-ups, reconfigurations, then one scheduling
// call if anything changed. On an error nothing is applied, except for an
// error of the policy's plan (the engine's *PlanError).
func (s *Stepper) Step(t Time, arrivals []JobRef) error {
	e := s.e
	switch n := s.Next(); {
	case s.done:
		return errors.New("sim: stepped run: step after Result")
	case t < e.now || t > n || t > s.horizon:
		return fmt.Errorf("sim: stepped run: step to %d (now %d, next event %d)", t, e.now, n)
	}
	for _, r := range arrivals {
		if r < 0 || int(r) >= len(e.jobs) || s.arrived[r] {
			return fmt.Errorf("sim: stepped run: arrival of job ref %d: unknown or already arrived", r)
		}
	}
	idleWake := !s.more && len(arrivals) == 0 && len(e.running) == 0 && e.q.Len() > 0 && e.q.top().kind == qWake
	e.advance(t)
	dirty := e.popEnds(t)
	for _, r := range arrivals {
		s.arrived[r] = true
		e.arrive(&e.jobs[r])
		dirty = true
	}
	if e.popTimers(t) {
		dirty = true
	}
	if e.q.Len() > 0 && e.q.top().t == t {
		// no failure or storage state in a stepped run: nothing else is queued
		return fmt.Errorf("sim: stepped run: unexpected event kind %d at %d", e.q.top().kind, t)
	}
	if !dirty {
		return nil
	}
	acted, err := e.schedule()
	if err != nil {
		return err
	}
	if idleWake && !acted {
		e.dropIdleWakes() // as Run: only wake-ups left and nothing changed
	}
	return nil
}

// FreeGPUs returns the whole GPUs with no allocation.
func (s *Stepper) FreeGPUs() int64 {
	c := s.e.cluster
	var n int64
	for m := range c.Models() {
		n += c.ModelFree(m)
	}
	return n
}

// PendingGPUs returns the GPUs requested by the jobs waiting in the queue.
func (s *Stepper) PendingGPUs() int64 { return s.e.pendGPUs }

// Result ends the run and returns its outcome as Engine.Run does, over the
// jobs that arrived in this engine only (renumbered in JobRef order, the log's
// references with them). End is the horizon when one is set, else the
// current time. The Stepper must not be used afterwards.
func (s *Stepper) Result() *Result {
	e := s.e
	s.done = true
	if s.horizon != Never && s.horizon > e.now {
		e.advance(s.horizon)
	}
	end := e.now
	if e.cfg.SampleInterval > 0 && e.nextSamp == end {
		e.sample()
	}
	newRef := make([]JobRef, len(e.jobs))
	var jobs []Job
	for r := range e.jobs {
		newRef[r] = -1
		if s.arrived[r] {
			newRef[r] = JobRef(len(jobs))
			j := e.jobs[r]
			j.Ref = newRef[r]
			jobs = append(jobs, j)
		}
	}
	log := make([]Event, 0, len(e.log))
	for _, ev := range e.log {
		if ev.Job = newRef[ev.Job]; ev.Job >= 0 {
			log = append(log, ev)
		}
	}
	return &Result{
		Policy:                     e.policy.Name(),
		Jobs:                       jobs,
		Log:                        log,
		Samples:                    e.samples,
		Cluster:                    e.cluster,
		Makespan:                   e.lastEnd,
		End:                        end,
		BusyMilliSeconds:           e.busy,
		BusyMilliSecondsToMakespan: e.busyAtLast,
		Events:                     e.events,
		SchedulingPoints:           e.points,
	}
}
