package live

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/gpusim/gpusim/sim"
)

// Options configure a live run.
type Options struct {
	// StateDir holds the journal, the runs' logs and status files and the
	// control directory; a runner started again on the same StateDir resumes.
	StateDir string
	// WorkDir is the runs' working directory ("" = the runner's).
	WorkDir string
	// Scale is simulated seconds per real second (1 = real time; 60 = a trace
	// minute per real second). Job durations, walltimes and grace periods are
	// divided by it; output times are in simulated seconds.
	Scale float64
	// Grace is the real time a preempted run gets between SIGTERM and SIGKILL
	// when the policy's plan gives none.
	Grace time.Duration
	// Poll is the longest the runner sleeps between checks (default 20 ms).
	Poll time.Duration
	// Local configures the local backend.
	Local LocalOptions
	// QueueDir, when set, is watched for job files (QueueJob) submitted while
	// the run goes on; the run then ends only after RequestStop, once every
	// job has ended. MaxQueued bounds the jobs it accepts (default 10,000).
	QueueDir  string
	MaxQueued int
	// Policy, Scenario and ScenarioSHA256 identify the run in the journal's
	// header; a resume with other values is refused.
	Policy, Scenario, ScenarioSHA256 string
	// Now is the wall clock (nil = time.Now).
	Now func() time.Time
	// Log receives one line per start, end and stop (nil = none). Lines hold
	// job IDs, placements and outcomes only: never the environment.
	Log io.Writer
}

// Stats counts what a live run did besides its jobs' events.
type Stats struct {
	Resumed   bool // the run resumed from an existing journal
	Adopted   int  // runs still running at the resume, re-adopted by PID and start time
	Recovered int  // runs that ended while the runner was down (status file read)
	Lost      int  // runs gone at the resume with no exit status (marked lost, never re-run)
	Replayed  int  // journal records replayed at the resume
}

// ScaledClock is a sim.Clock on the wall clock: virtual time is the wall time
// since Epoch times Scale.
type ScaledClock struct {
	Epoch time.Time
	Scale float64
	Wall  func() time.Time
}

// Now implements sim.Clock.
func (c *ScaledClock) Now() sim.Time {
	return sim.Time(sim.Seconds(c.Wall().Sub(c.Epoch).Seconds() * c.Scale))
}

// Runner drives one policy live on this machine (local backend).
type Runner struct {
	opt       Options
	cfg       sim.Config
	live      *sim.Live
	journal   *Journal
	local     *Local
	clock     *ScaledClock
	tokenBase string
	stats     Stats
	finished  bool // the journal ends with done: replayed only
	draining  bool // stop requested: no more queue jobs, end when idle
	submitted map[sim.JobID]bool
}

// NewRunner prepares a live run of cfg (cluster = this machine, jobs, policy,
// engine settings) with opt. Nothing starts before Run.
func NewRunner(cfg sim.Config, opt Options) (*Runner, error) {
	if !(opt.Scale > 0) {
		return nil, fmt.Errorf("live: time scale must be > 0, got %v", opt.Scale)
	}
	if opt.StateDir == "" {
		return nil, errors.New("live: no state directory")
	}
	if opt.Poll <= 0 {
		opt.Poll = 20 * time.Millisecond
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if int64(len(opt.Local.Devices)) != int64(cfg.Cluster.NumGPUs()) {
		return nil, fmt.Errorf("live: %d device names for %d GPUs", len(opt.Local.Devices), cfg.Cluster.NumGPUs())
	}
	abs, err := filepath.Abs(opt.StateDir)
	if err != nil {
		return nil, fmt.Errorf("live: state dir: %w", err)
	}
	opt.StateDir = abs
	h := sha256.Sum256([]byte(abs))
	if opt.QueueDir != "" && opt.MaxQueued <= 0 {
		opt.MaxQueued = 10_000
	}
	if opt.QueueDir == "" {
		opt.MaxQueued = 0
	}
	r := &Runner{opt: opt, cfg: cfg, tokenBase: hex.EncodeToString(h[:6]), submitted: map[sim.JobID]bool{}}
	r.local = newLocal(r, opt.Local)
	return r, nil
}

func (r *Runner) logf(format string, args ...any) {
	if r.opt.Log != nil {
		fmt.Fprintf(r.opt.Log, "%10.1fs  "+format+"\n", append([]any{r.live.Now().Seconds()}, args...)...)
	}
}

// Run runs (or resumes) the live run until every job has ended, ctx is
// cancelled or an error occurs, and returns the result for the run
// directory. On cancellation every running run is stopped (SIGTERM, grace,
// SIGKILL) and journalled as stopped, so a resume requeues it; the result is
// then nil and the error wraps ctx.Err().
func (r *Runner) Run(ctx context.Context) (*sim.Result, Stats, error) {
	for _, d := range []string{"runs", filepath.Join("control", "preempt")} {
		if err := os.MkdirAll(filepath.Join(r.opt.StateDir, d), 0o700); err != nil {
			return nil, r.stats, fmt.Errorf("live: %w", err)
		}
	}
	j, err := OpenJournal(r.opt.StateDir)
	if err != nil {
		return nil, r.stats, err
	}
	defer j.Close()
	r.journal = j
	epoch := r.opt.Now()
	if recs := j.Records(); len(recs) > 0 {
		h := recs[0]
		if h.Rec != RecHeader || h.Version != JournalVersion {
			return nil, r.stats, fmt.Errorf("%s:1: rec: not a gpusim live journal header (version %d)", filepath.Join(r.opt.StateDir, JournalFile), JournalVersion)
		}
		if h.Policy != r.opt.Policy || h.ScenarioSHA256 != r.opt.ScenarioSHA256 || h.Scale != r.opt.Scale || h.Jobs != len(r.cfg.Jobs) {
			return nil, r.stats, fmt.Errorf("%s:1: header: the state directory holds another run (policy %q, scenario %q, scale %v, %d jobs): use a new --state directory", filepath.Join(r.opt.StateDir, JournalFile), h.Policy, h.Scenario, h.Scale, h.Jobs)
		}
		epoch = time.Unix(0, h.EpochUnixNano)
		r.stats.Resumed = true
	}
	r.clock = &ScaledClock{Epoch: epoch, Scale: r.opt.Scale, Wall: r.opt.Now}
	nJobs := len(r.cfg.Jobs)
	r.live, err = sim.NewLive(r.cfg, r.local, r.opt.MaxQueued, sim.Seconds(r.opt.Grace.Seconds()*r.opt.Scale))
	if err != nil {
		return nil, r.stats, fmt.Errorf("live: %w", err)
	}
	if r.stats.Resumed {
		if err := r.replay(); err != nil {
			return nil, r.stats, err
		}
	} else if err := j.Append(Record{Rec: RecHeader, Version: JournalVersion, Policy: r.opt.Policy, Scenario: r.opt.Scenario,
		ScenarioSHA256: r.opt.ScenarioSHA256, Scale: r.opt.Scale, EpochUnixNano: epoch.UnixNano(), Jobs: nJobs}); err != nil {
		return nil, r.stats, err
	}
	for !r.finished {
		if err := ctx.Err(); err != nil {
			serr := r.local.stopAll(r.opt.Grace)
			return nil, r.stats, errors.Join(fmt.Errorf("live run interrupted: %w", err), serr)
		}
		if err := r.live.Advance(r.clock.Now(), nil); err != nil {
			return nil, r.stats, r.abort(err)
		}
		ends, err := r.local.collect()
		if err != nil {
			return nil, r.stats, r.abort(err)
		}
		for _, e := range ends {
			r.logf("%-12s %s", r.jobID(e.Job), e.Outcome)
		}
		if err := r.live.Advance(r.live.Now(), ends); err != nil {
			return nil, r.stats, r.abort(err)
		}
		if err := r.control(); err != nil {
			return nil, r.stats, r.abort(err)
		}
		if r.opt.QueueDir != "" && !r.draining {
			if err := r.scanQueue(); err != nil {
				return nil, r.stats, r.abort(err)
			}
		}
		if err := r.live.Schedule(false); err != nil {
			return nil, r.stats, r.abort(err)
		}
		if r.live.Idle() && (r.opt.QueueDir == "" || r.draining) {
			break
		}
		if r.live.Stuck() {
			return nil, r.stats, r.abort(fmt.Errorf("live: %d job(s) pending, none running and nothing due: the policy cannot start them on this machine", r.live.View().PendingCount()))
		}
		r.sleep(ctx)
	}
	if !r.finished {
		if err := j.Append(Record{Rec: RecDone, TimeUS: int64(r.live.Now())}); err != nil {
			return nil, r.stats, err
		}
	}
	return r.live.Result(), r.stats, nil
}

func (r *Runner) jobID(ref sim.JobRef) string { return string(r.live.View().Job(ref).Spec.ID) }

// abort stops every run and returns err (with any stop error).
func (r *Runner) abort(err error) error {
	return errors.Join(err, r.local.stopAll(r.opt.Grace))
}

// sleep waits for an exit, the next arrival or wake-up, the next walltime
// deadline or Poll, whichever comes first.
func (r *Runner) sleep(ctx context.Context) {
	d := r.opt.Poll
	if t := r.live.NextTimer(); t != sim.Never {
		d = min(d, max(0, realDuration(t.Sub(r.clock.Now()), r.opt.Scale)))
	}
	if dl := r.local.nextDeadline(); !dl.IsZero() {
		d = min(d, max(0, dl.Sub(r.opt.Now())))
	}
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-r.local.wake:
	case <-t.C:
	}
}

// control applies operator requests: a file control/preempt/<job id> asks to
// preempt (requeue) that running job (the file is removed once handled), and
// control/stop ends a queue-directory run once every job has ended.
func (r *Runner) control() error {
	if !r.draining {
		if _, err := os.Stat(filepath.Join(r.opt.StateDir, "control", "stop")); err == nil {
			r.draining = true
			r.logf("stop requested: no more queue jobs; ending when every job has ended")
		}
	}
	dir := filepath.Join(r.opt.StateDir, "control", "preempt")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("live: control: %w", err)
	}
	for _, e := range ents { // sorted by name
		id := e.Name()
		ref, ok := r.live.Lookup(sim.JobID(id))
		if ok && r.live.View().Job(ref).State == sim.StateRunning {
			if err := r.live.Interrupt(ref, "operator", 0); err != nil {
				r.logf("%-12s preempt request refused: %v", id, err)
			} else {
				r.logf("%-12s preempted (operator)", id)
			}
		} else {
			r.logf("%-12s preempt request ignored: not running", id)
		}
		if err := os.Remove(filepath.Join(dir, id)); err != nil {
			return fmt.Errorf("live: control: %w", err)
		}
	}
	return nil
}

// RequestPreempt asks the runner of stateDir to preempt running job id (it
// requeues it at its next check): `gpusim live preempt`.
func RequestPreempt(stateDir, id string) error {
	if id == "" || id != filepath.Base(id) || id[0] == '.' {
		return fmt.Errorf("job id %q cannot name a control file", id)
	}
	dir := filepath.Join(stateDir, "control", "preempt")
	if _, err := os.Stat(filepath.Join(stateDir, JournalFile)); err != nil {
		return fmt.Errorf("state dir %s: no live run there: %w", stateDir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, id), nil, 0o600)
}

// openRun is a run the journal started and did not end.
type openRun struct {
	ref   sim.JobRef
	rec   Record // its launch record, completed by its start record
	start bool
}

// replay rebuilds the live state from the journal (without calling the
// policy or starting anything), then re-adopts the runs that were running:
// still-running processes (same PID and start time) are monitored again, runs
// that ended meanwhile are ended from their status file, and the others are
// marked lost. No run of the journal is ever started again.
func (r *Runner) replay() error {
	path := filepath.Join(r.opt.StateDir, JournalFile)
	open := map[string]*openRun{}
	var order []string
	for i, rec := range r.journal.Records()[1:] {
		line := i + 2
		at := sim.Time(rec.TimeUS)
		if rec.Rec == RecDone {
			continue
		}
		if rec.Rec == RecSubmit {
			if rec.Spec == nil {
				return fmt.Errorf("%s:%d: spec: missing in a submit record", path, line)
			}
			spec, err := rec.Spec.jobSpec(rec.Job)
			if err == nil {
				if err = r.live.Advance(at, nil); err == nil {
					_, err = r.live.Submit(spec)
				}
			}
			if err != nil {
				return fmt.Errorf("%s:%d: submit of job %s: %w", path, line, rec.Job, err)
			}
			r.submitted[spec.ID] = true
			if len(rec.Spec.Command) > 0 {
				r.local.commands[spec.ID] = rec.Spec.Command
			}
			r.stats.Replayed++
			continue
		}
		ref, ok := r.live.Lookup(sim.JobID(rec.Job))
		if !ok {
			return fmt.Errorf("%s:%d: job: unknown job %q", path, line, rec.Job)
		}
		var err error
		switch rec.Rec {
		case RecLaunch:
			err = r.live.Advance(at, nil)
			open[rec.Job] = &openRun{ref: ref, rec: rec}
			order = append(order, rec.Job)
		case RecStart:
			o := open[rec.Job]
			if o == nil || o.rec.Run != rec.Run {
				return fmt.Errorf("%s:%d: start: no launch of job %s run %d before it", path, line, rec.Job, rec.Run)
			}
			o.rec.PID, o.rec.StartTicks, o.rec.Nodes, o.rec.GPUs, o.rec.Devices, o.start = rec.PID, rec.StartTicks, rec.Nodes, rec.GPUs, rec.Devices, true
			if err = r.live.Advance(at, nil); err == nil {
				err = r.adoptInEngine(ref, rec)
			}
		case RecEnd:
			o := open[rec.Job]
			delete(open, rec.Job)
			outcome, ok := sim.ParseOutcome(rec.Outcome)
			if !ok {
				return fmt.Errorf("%s:%d: outcome: unknown outcome %q", path, line, rec.Outcome)
			}
			if o != nil && !o.start { // failed to start: it never ran
				if err = r.live.Advance(at, nil); err == nil {
					err = r.adoptInEngine(ref, o.rec)
				}
			}
			if err == nil {
				err = r.live.Advance(at, []sim.Ended{{Job: ref, Outcome: outcome}})
			}
		case RecStop:
			delete(open, rec.Job)
			mode, ok := parseMode(rec.Mode)
			if !ok {
				return fmt.Errorf("%s:%d: mode: unknown preemption mode %q", path, line, rec.Mode)
			}
			if err = r.live.Advance(at, nil); err == nil {
				err = r.live.ApplyStop(sim.Preempt{Job: ref, Mode: mode, Reason: rec.Reason, Grace: sim.Duration(rec.GraceUS), Delay: sim.Duration(rec.DelayUS)})
			}
		default:
			return fmt.Errorf("%s:%d: rec: unknown record kind %q", path, line, rec.Rec)
		}
		if err != nil {
			return fmt.Errorf("%s:%d: %s of job %s: %w", path, line, rec.Rec, rec.Job, err)
		}
		r.stats.Replayed++
	}
	if recs := r.journal.Records(); recs[len(recs)-1].Rec == RecDone {
		r.finished = true // nothing to resume: the outputs are rebuilt as they were
		return nil
	}
	if err := r.live.Advance(r.clock.Now(), nil); err != nil {
		return err
	}
	slices.Sort(order)
	order = slices.Compact(order)
	for _, id := range order {
		o := open[id]
		if o == nil {
			continue
		}
		rec := o.rec
		if !o.start {
			// Launched, start not journalled: find the process by its token.
			rec.PID = findByToken(r.local.token(id, rec.Run))
			if info, ok := readProc(rec.PID); ok && rec.PID > 0 {
				rec.StartTicks = info.ticks
			}
			if err := r.adoptInEngine(o.ref, rec); err != nil {
				return fmt.Errorf("%s: launch of job %s: %w", path, id, err)
			}
			if rec.PID > 0 {
				if err := r.journal.Append(Record{Rec: RecStart, TimeUS: int64(r.live.Now()), Job: id, Run: rec.Run, PID: rec.PID, StartTicks: rec.StartTicks, Nodes: rec.Nodes, GPUs: rec.GPUs, Devices: rec.Devices}); err != nil {
					return err
				}
			}
		}
		p := &proc{ref: o.ref, id: id, run: rec.Run, pid: rec.PID, ticks: rec.StartTicks,
			status: filepath.Join(r.opt.StateDir, "runs", fmt.Sprintf("%s.%d.status", safeName(id), rec.Run))}
		j := r.live.View().Job(o.ref)
		if j.Spec.Walltime > 0 && r.cfg.EnforceWalltime {
			p.walltil = r.clock.Epoch.Add(realDuration(sim.Duration(j.LastStart.Add(j.Spec.Walltime)), r.opt.Scale))
		}
		r.local.procs[o.ref] = p
		switch {
		case rec.PID > 0 && sameProcess(rec.PID, rec.StartTicks):
			r.stats.Adopted++
			r.logf("%-12s re-adopted (pid %d)", id, rec.PID)
		default:
			if oc, _ := readStatus(p.status); oc == sim.OutcomeLost {
				r.stats.Lost++
				r.logf("%-12s lost (process gone, no exit status)", id)
			} else {
				r.stats.Recovered++
			}
		}
	}
	return nil
}

// adoptInEngine applies a journalled placement to the engine.
func (r *Runner) adoptInEngine(ref sim.JobRef, rec Record) error {
	j := r.live.View().Job(ref)
	if int(j.Preempted) != rec.Run {
		return fmt.Errorf("run %d, but the job was preempted %d times", rec.Run, j.Preempted)
	}
	nodes := make([]sim.NodeID, len(rec.Nodes))
	for i, n := range rec.Nodes {
		nodes[i] = sim.NodeID(n)
	}
	gpus := make([]sim.GPUID, len(rec.GPUs))
	for i, g := range rec.GPUs {
		gpus[i] = sim.GPUID(g)
	}
	return r.live.Adopt(ref, nodes, gpus)
}

// parseMode maps a journalled preemption mode name back (empty = requeue).
func parseMode(s string) (sim.PreemptMode, bool) {
	if s == "" {
		return sim.PreemptRequeue, true
	}
	for m := sim.PreemptRequeue; m <= sim.PreemptMigrate; m++ {
		if m.String() == s {
			return m, true
		}
	}
	return 0, false
}
