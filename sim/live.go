package sim

import (
	"errors"
	"fmt"
	"strings"
)

// Live mode: the engine driven by external events.
//
// A Live run holds an ordinary Engine (the same job table, pending queue,
// cluster indexes, plan validation and event log) but its virtual clock is set
// from outside (a wall clock scaled to simulated seconds) and jobs end when the
// real system says so (Live.End), not at a computed time. A policy cannot tell
// a live run from a simulation: it gets the same *View and fills the same *Plan,
// which the engine validates and applies as in a simulation; the Live then
// hands every accepted start and stop to a Backend that carries it out.
//
//	driver loop (package live):
//	  now := clock.Now()
//	  l.Advance(now, ends)         ends observed on the real system, arrivals
//	                               with Submit <= now, due wake-ups
//	  l.Schedule()                 policy.Schedule(View, Plan) -> validate + apply
//	                               -> Backend.Stop (preempts), Backend.Start (starts)
//
// The simulation path (Engine.Run) never goes through this file: a Live is a
// second driver of the same state, so simulation outputs and speed are unchanged.

// Clock is the time source of a live run: virtual time (microseconds since the
// run's epoch). Implementations must be monotonic; Live clamps a time that goes
// backwards to the current time.
type Clock interface {
	Now() Time
}

// Backend carries out a live run's decisions on a real system (processes on
// one machine, pods on a Kubernetes cluster, ...).
//
// Start and Stop are called on the driver's goroutine, after the engine has
// accepted the decision; a Backend reports each run's end later with Live.End
// from the same goroutine (it may observe exits on others and queue them).
type Backend interface {
	// Start launches the current run of job j on its placement (j.Nodes, j.GPUs;
	// j.Preempted counts earlier runs). It must return promptly. An error marks
	// the job failed (Live ends it with OutcomeFailed).
	Start(j *Job) error
	// Stop ends job p.Job's current run (a preemption in mode p.Mode, or a
	// policy kill): it signals the job, waits up to p.Grace (never 0: Live
	// fills in its default) for it to exit, then forces it. It returns once the
	// run's processes are gone, so its resources are free for the starts of the
	// same plan. The run's exit must not be reported with Live.End. A backend
	// that journals should record the whole Preempt: ApplyStop replays it.
	Stop(p *Preempt) error
}

// Outcome is how a live run ended, as observed on the real system.
type Outcome uint8

// Outcomes of a live run.
const (
	// OutcomeCompleted: the job's process exited with status 0.
	OutcomeCompleted Outcome = iota
	// OutcomeFailed: the job exited non-zero, died of a signal, or could not be
	// started. The job ends in state killed (event kill, value LiveKillFailed).
	OutcomeFailed
	// OutcomeTimeout: the backend stopped the job at its walltime. State timeout.
	OutcomeTimeout
	// OutcomeLost: after a restart of the driver the run's process was gone and
	// its exit status unknown. State killed (event kill, value LiveKillLost); it is
	// never started again, so nothing runs twice.
	OutcomeLost
)

var outcomeNames = [...]string{"completed", "failed", "timeout", "lost"}

// String returns the outcome's name (as written to the live journal).
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", o)
}

// ParseOutcome maps a name from String back to an Outcome.
func ParseOutcome(s string) (Outcome, bool) {
	for i, n := range outcomeNames {
		if n == s {
			return Outcome(i), true
		}
	}
	return 0, false
}

// Event values of EvKill in a live run (0 is a kill decided by the policy).
const (
	LiveKillFailed int64 = 1 // the job failed on the real system
	LiveKillLost   int64 = 2 // the job's run was lost across a driver restart
)

// Live is an Engine driven by external events; see the comment above. It is
// single-threaded and not safe for concurrent use.
type Live struct {
	e       *Engine
	b       Backend
	grace   Duration
	dirty   bool
	ids     map[JobID]JobRef
	stopped []JobRef // scratch: jobs the last plan stopped
}

// ErrLiveFull is returned by Live.Submit when the job table is full.
var ErrLiveFull = errors.New("live: job table full")

// NewLive prepares a live run of cfg (its jobs arrive at their Submit times on
// the clock the driver passes to Advance) with room for extra more jobs
// submitted while it runs (Submit). Device-level sharing and horizons are not
// supported live; the speed model is ignored (the real system is the truth).
// grace is the termination grace of a preemption whose plan gives none (and
// of Interrupt without one).
func NewLive(cfg Config, b Backend, extra int, grace Duration) (*Live, error) {
	if b == nil {
		return nil, errors.New("sim: live: no backend")
	}
	if cfg.Sharing != nil {
		return nil, errors.New("sim: live: device-level GPU sharing is not supported in live mode")
	}
	if cfg.Failures != nil {
		return nil, errors.New("sim: live: simulated failures (failures:) are not supported in live mode: real failures are observed, not injected")
	}
	if cfg.Storage != nil {
		return nil, errors.New("sim: live: checkpoint I/O (storage:) is not supported in live mode")
	}
	if cfg.Power != nil {
		return nil, errors.New("sim: live: power accounting (power:) is not supported in live mode yet")
	}
	for i := range cfg.Jobs {
		if cfg.Jobs[i].DAG != nil {
			return nil, fmt.Errorf("sim: live: job %q: job dependencies (deps) are not supported in live mode yet", cfg.Jobs[i].ID)
		}
	}
	if cfg.Telemetry != nil {
		return nil, errors.New("sim: live: simulated stragglers (telemetry:) are not supported in live mode: real clocks are observed, not injected")
	}
	if extra < 0 {
		return nil, fmt.Errorf("sim: live: negative extra capacity %d", extra)
	}
	cfg.Speed = nil
	cfg.Horizon = 0
	cfg.LogFeed = nil
	cfg.Progress = nil
	e, err := NewEngine(cfg)
	if err != nil {
		return nil, err
	}
	// Give the per-job tables room for submitted jobs now, while nothing points
	// into them, so Submit never reallocates (pending and running lists hold *Job).
	n := len(e.jobs)
	jobs := make([]Job, n, n+extra)
	copy(jobs, e.jobs)
	e.jobs = jobs
	e.runIdx = append(make([]int32, 0, n+extra), e.runIdx...)
	e.resAt = append(make([]Time, 0, n+extra), e.resAt...)
	e.waitWhy = append(make([]Reason, 0, n+extra), e.waitWhy...)
	e.pend = newBitset2(n + extra)
	l := &Live{e: e, b: b, grace: grace, ids: make(map[JobID]JobRef, n+extra)}
	for i := range e.jobs {
		l.ids[e.jobs[i].Spec.ID] = JobRef(i)
	}
	return l, nil
}

// View returns the policy's view of the live state.
func (l *Live) View() *View { return &l.e.view }

// Now returns the live run's current virtual time.
func (l *Live) Now() Time { return l.e.now }

// Lookup returns the JobRef of job id.
func (l *Live) Lookup(id JobID) (JobRef, bool) {
	r, ok := l.ids[id]
	return r, ok
}

// Ended is a run's end observed on the real system.
type Ended struct {
	Job     JobRef
	Outcome Outcome
}

// Advance moves the clock to now (a time before the current one counts as the
// current one) and applies, in the engine's same-time order, the observed ends
// (in the order given: drivers sort them by JobRef), the arrival of every job
// with Submit <= now (in JobRef order) and the policy's wake-ups at or before
// now. Arrivals are logged at now (the moment the driver saw them), so live
// wait times include the driver's polling delay. A stale end (a job that is not
// running) is an error and nothing after it is applied.
func (l *Live) Advance(now Time, ends []Ended) error {
	e := l.e
	e.advance(max(now, e.now))
	for _, x := range ends {
		if err := l.End(x.Job, x.Outcome); err != nil {
			return err
		}
	}
	for e.nextArr < len(e.jobs) && e.jobs[e.nextArr].Spec.Submit <= e.now {
		e.arrive(&e.jobs[e.nextArr])
		e.nextArr++
		l.dirty = true
	}
	for e.q.Len() > 0 && e.q.top().t <= e.now {
		it := e.q.pop()
		// End events are the engine's prediction from the trace duration: in a
		// live run the backend reports ends, so they are dropped.
		if it.kind == qWake {
			e.events++
			l.dirty = true
		}
	}
	return nil
}

// Submit adds a job that arrives now: its Submit is set to the current time
// (or to the last trace job's Submit when that is later: it then arrives
// after it).
// The ID must be new. It fails with ErrLiveFull beyond NewLive's extra room.
func (l *Live) Submit(s JobSpec) (JobRef, error) {
	e := l.e
	if len(e.jobs) == cap(e.jobs) {
		return 0, ErrLiveFull
	}
	if _, dup := l.ids[s.ID]; dup {
		return 0, fmt.Errorf("duplicate job id %q", s.ID)
	}
	s.Submit = e.now
	if n := len(e.jobs); n > 0 && e.jobs[n-1].Spec.Submit > s.Submit {
		s.Submit = e.jobs[n-1].Spec.Submit
	}
	if err := s.Validate(); err != nil {
		return 0, fmt.Errorf("job %q: %w", s.ID, err)
	}
	if s.Class == "" {
		s.Class = ClassUnknown
	}
	r := JobRef(len(e.jobs))
	e.jobs = e.jobs[:r+1]
	e.runIdx = append(e.runIdx, -1)
	e.resAt = append(e.resAt, Never)
	e.waitWhy = append(e.waitWhy, ReasonNone)
	j := &e.jobs[r]
	j.Spec = s
	est := s.Walltime
	if e.cfg.Oracle || est == 0 {
		est = s.Duration
	}
	j.Ref, j.State, j.Estimate = r, StatePending, max(est, 1)
	j.FirstStart, j.LastStart, j.End, j.lastPreempt = Never, Never, Never, Never
	l.ids[s.ID] = r
	if e.nextArr == int(r) && s.Submit <= e.now {
		e.arrive(j) // arrives now
		e.nextArr++
		l.dirty = true
	}
	return r, nil
}

// End applies the observed end of job r's current run at the current time
// (Advance applies the ends it is given with it). Ending a job that is not
// running is an error (a stale report).
func (l *Live) End(r JobRef, o Outcome) error {
	e := l.e
	if r < 0 || int(r) >= len(e.jobs) {
		return fmt.Errorf("live: end of unknown job ref %d", r)
	}
	j := &e.jobs[r]
	if j.State != StateRunning {
		return fmt.Errorf("live: end (%s) of job %s, which is %s", o, j.Spec.ID, j.State)
	}
	e.events++
	e.ended++
	e.stop(j, false)
	j.End = e.now
	e.lastEnd = e.now
	e.busyAtLast = e.busy
	el := Duration(e.now - j.LastStart)
	switch o {
	case OutcomeCompleted:
		e.preemptRun = 0
		e.lastFinish = e.now
		j.State = StateCompleted
		j.Done = j.Spec.Duration
		e.record(EvFinish, r, 0)
	case OutcomeTimeout:
		j.State = StateTimeout
		j.Done = min(j.Spec.Duration, j.runDone+el)
		j.Wasted += el
		e.record(EvTimeout, r, 0)
	case OutcomeFailed, OutcomeLost:
		j.State = StateKilled
		j.Done = j.runDone
		j.Wasted += el
		v := LiveKillFailed
		if o == OutcomeLost {
			v = LiveKillLost
		}
		e.record(EvKill, r, v)
	default:
		return fmt.Errorf("live: unknown outcome %d", o)
	}
	l.dirty = true
	return nil
}

// Interrupt preempts running job r from outside the policy (an operator's
// request, a node drain) at the current time: the engine requeues it as a
// policy preemption would (mode requeue), and the backend stops it with grace.
func (l *Live) Interrupt(r JobRef, reason string, grace Duration) error {
	e := l.e
	if r < 0 || int(r) >= len(e.jobs) {
		return fmt.Errorf("live: interrupt of unknown job ref %d", r)
	}
	if grace <= 0 {
		grace = l.grace
	}
	p := Preempt{Job: r, Mode: PreemptRequeue, Reason: reason, Grace: grace}
	if err := e.applyPreempt(&p); err != nil {
		return fmt.Errorf("live: interrupt job %s: %w", e.jobName(r), err)
	}
	l.dirty = true
	if err := l.b.Stop(&p); err != nil {
		return fmt.Errorf("live: stop job %s: %w", e.jobName(r), err)
	}
	return nil
}

// Adopt records, without calling the backend, that job r runs on the given
// placement since the current time: a driver resuming after a restart replays
// its journal with Advance, Adopt, End, ApplyStop and Submit before it schedules again.
func (l *Live) Adopt(r JobRef, nodes []NodeID, gpus []GPUID) error {
	e := l.e
	if err := e.applyStart(&Start{Job: r, Nodes: nodes, GPUs: gpus}); err != nil {
		return fmt.Errorf("live: adopt job %s: %w", e.jobName(r), err)
	}
	l.dirty = true
	return nil
}

// ApplyStop records, without calling the backend, that running job p.Job was
// stopped as p says (mode requeue, kill, lease or migrate; grace and delay as
// given to Backend.Stop) at the current time: the journal replay of a stop.
// The engine's preemption protection does not apply (the stop happened).
func (l *Live) ApplyStop(p Preempt) error {
	e := l.e
	if p.Job < 0 || int(p.Job) >= len(e.jobs) {
		return fmt.Errorf("live: stop of unknown job ref %d", p.Job)
	}
	if p.Mode == PreemptSuspend {
		return errors.New("live: suspension is not supported in live mode")
	}
	j := &e.jobs[p.Job]
	prot := j.protectedUntil
	j.protectedUntil = e.now
	err := e.applyPreempt(&p)
	if err != nil {
		j.protectedUntil = prot
		return fmt.Errorf("live: stop job %s: %w", e.jobName(p.Job), err)
	}
	l.dirty = true
	return nil
}

// Schedule calls the policy if anything changed since its last call (or force),
// and carries out the accepted plan: Backend.Stop for every job the plan
// stopped (preempted, suspended or killed), then Backend.Start for every job
// it started that is still running. A start the backend refuses ends the job
// as failed. An invalid plan is returned as the engine's *PlanError.
func (l *Live) Schedule(force bool) error {
	if !l.dirty && !force {
		return nil
	}
	l.dirty = false
	e := l.e
	if _, err := e.schedule(); err != nil {
		return err
	}
	p := &e.plan
	l.stopped = l.stopped[:0]
	for i := range p.Preempts {
		pr := &p.Preempts[i]
		if pr.Mode == PreemptSuspend {
			return fmt.Errorf("live: policy %s suspended job %s: suspension is not supported in live mode", e.policy.Name(), e.jobName(pr.Job))
		}
		stop := *pr
		if stop.Grace == 0 {
			stop.Grace = l.grace
		}
		if err := l.b.Stop(&stop); err != nil {
			return fmt.Errorf("live: stop job %s: %w", e.jobName(pr.Job), err)
		}
		l.stopped = append(l.stopped, pr.Job)
	}
	for i := range p.Starts {
		r := p.Starts[i].Job
		j := &e.jobs[r]
		if j.State != StateRunning {
			continue // started and stopped again in the same plan
		}
		if err := l.b.Start(j); err != nil {
			if eerr := l.End(r, OutcomeFailed); eerr != nil { // sets dirty: the policy sees the failure next
				return eerr
			}
		}
	}
	return nil
}

// WaitReason returns why the policy left pending job r waiting at its last
// call (ReasonNone if it gave none or r is not pending): the reason `gpusim
// explain` reports.
func (l *Live) WaitReason(r JobRef) Reason {
	if r < 0 || int(r) >= len(l.e.jobs) || l.e.jobs[r].State != StatePending {
		return ReasonNone
	}
	return l.e.waitWhy[r]
}

// Stopped returns the jobs the last Schedule call stopped, in plan order. The
// slice is reused by the next call.
func (l *Live) Stopped() []JobRef { return l.stopped }

// NextTimer returns the next time at which Advance has something to do without
// an end report: the next arrival or policy wake-up (Never if none).
func (l *Live) NextTimer() Time {
	e := l.e
	t := Never
	if e.nextArr < len(e.jobs) {
		t = e.jobs[e.nextArr].Spec.Submit
	}
	for _, it := range e.q.h {
		if it.kind == qWake && it.t < t {
			t = it.t
		}
	}
	return t
}

// Idle reports whether every job has arrived and none is pending or running:
// a trace-driven live run is over.
func (l *Live) Idle() bool {
	e := l.e
	return e.nextArr >= len(e.jobs) && e.pendN == 0 && len(e.running) == 0
}

// Stuck reports whether jobs are pending but nothing runs and no arrival or
// wake-up is due: the policy will never start them (they cannot fit).
func (l *Live) Stuck() bool {
	return !l.dirty && len(l.e.running) == 0 && l.e.pendN > 0 && l.NextTimer() == Never
}

// Result returns the run's outcome so far, as Engine.Run returns it; End is
// the current time. The Live must not be used afterwards.
func (l *Live) Result() *Result {
	e := l.e
	if e.cfg.SampleInterval > 0 && e.nextSamp == e.now {
		e.sample()
	}
	return &Result{
		Policy:                     e.policy.Name(),
		Jobs:                       e.jobs,
		Log:                        e.log,
		Samples:                    e.samples,
		Cluster:                    e.cluster,
		Makespan:                   e.lastEnd,
		End:                        e.now,
		BusyMilliSeconds:           e.busy,
		BusyMilliSecondsToMakespan: e.busyAtLast,
		Events:                     e.events,
		SchedulingPoints:           e.points,
	}
}

// PlacementString formats job j's current GPUs as "node:gpu,gpu;node:gpu"
// (node names, GPU indexes within the node), for logs and journals.
func PlacementString(c *Cluster, j *Job) string {
	var b strings.Builder
	g := int(j.Spec.GPUsPerReplica)
	for r, n := range j.Nodes {
		if r > 0 {
			b.WriteByte(';')
		}
		b.WriteString(c.Node(n).Name)
		b.WriteByte(':')
		for k, gpu := range ReplicaSlice(j.GPUs, r, g) {
			if k > 0 {
				b.WriteByte(',')
			}
			first, _ := c.NodeGPUs(n)
			fmt.Fprintf(&b, "%d", gpu-first)
		}
	}
	return b.String()
}
