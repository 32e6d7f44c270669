package live

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gpusim/gpusim/sim"
)

// Environment variables a run gets.
const (
	envToken  = "GPUSIM_LIVE_RUN"    // <state-dir hash>/<job>/<run>: finds a run after a crash
	envJob    = "GPUSIM_JOB_ID"      // the job's ID
	envStatus = "GPUSIM_STATUS_FILE" // where the wrapper writes the exit status
)

// DefaultCommand is the command a job runs without --command: it sleeps for
// the job's remaining trace duration in real seconds (duration / scale).
var DefaultCommand = []string{"sleep", "{duration}"}

// safeEnv are the variables of the runner's environment a run inherits unless
// LocalOptions.InheritEnv: nothing else (tokens, credentials) leaks into jobs.
var safeEnv = []string{"PATH", "HOME", "LANG", "LC_ALL", "TZ", "USER", "LOGNAME", "TMPDIR", "LD_LIBRARY_PATH"}

// LocalOptions configure the local backend.
type LocalOptions struct {
	// Command is the argv of every run; {id}, {run}, {duration} (remaining trace
	// duration in real seconds), {gpus} (the CUDA_VISIBLE_DEVICES value) and
	// {ngpus} are replaced in each argument. Default DefaultCommand.
	Command []string
	// Devices[g] is the CUDA_VISIBLE_DEVICES entry of sim GPU g: a GPU UUID, a
	// MIG device UUID or an index.
	Devices []string
	// InheritEnv passes the runner's whole environment to runs (default: only
	// safeEnv plus the run's own variables).
	InheritEnv bool
}

// proc is one run's process.
type proc struct {
	ref     sim.JobRef
	id      string
	run     int
	pid     int // = process group id (Setpgid)
	ticks   uint64
	cmd     *exec.Cmd     // nil for a process adopted after a restart
	done    chan struct{} // closed when cmd.Wait returned (own children only)
	exit    int           // valid after done
	status  string        // status file path
	walltil time.Time     // wall deadline (walltime), zero if none
}

// Local runs jobs as processes on this machine; see the package comment.
// It implements sim.Backend. Its methods are called from the runner's
// goroutine only; waiter goroutines only close proc.done.
type Local struct {
	opt      LocalOptions
	r        *Runner
	procs    map[sim.JobRef]*proc
	mu       sync.Mutex
	pending  []exitNote // exits seen by waiters, collected by the runner
	wake     chan struct{}
	commands map[sim.JobID][]string // per-job commands of queue jobs
}

type exitNote struct {
	p    *proc
	code int
}

func newLocal(r *Runner, opt LocalOptions) *Local {
	if len(opt.Command) == 0 {
		opt.Command = DefaultCommand
	}
	return &Local{opt: opt, r: r, procs: map[sim.JobRef]*proc{}, wake: make(chan struct{}, 1), commands: map[sim.JobID][]string{}}
}

func (b *Local) devices(j *sim.Job) string {
	ds := make([]string, len(j.GPUs))
	for i, g := range j.GPUs {
		ds[i] = b.opt.Devices[g]
	}
	return strings.Join(ds, ",")
}

func (b *Local) token(id string, run int) string {
	return fmt.Sprintf("%s/%s/%d", b.r.tokenBase, id, run)
}

// Start implements sim.Backend: it journals the launch, forks the run in its
// own process group with CUDA_VISIBLE_DEVICES set to its GPUs, and journals
// the start with the PID and the process's start time.
func (b *Local) Start(j *sim.Job) error {
	r := b.r
	run := int(j.Preempted)
	id := string(j.Spec.ID)
	now := r.live.Now()
	dev := b.devices(j)
	nodes := make([]int, len(j.Nodes))
	for i, n := range j.Nodes {
		nodes[i] = int(n)
	}
	gpus := make([]int, len(j.GPUs))
	for i, g := range j.GPUs {
		gpus[i] = int(g)
	}
	if err := r.journal.Append(Record{Rec: RecLaunch, TimeUS: int64(now), Job: id, Run: run, Nodes: nodes, GPUs: gpus, Devices: dev}); err != nil {
		return err
	}
	remain := max(0, j.Spec.Duration-j.Done)
	realDur := remain.Seconds() / r.opt.Scale
	repl := strings.NewReplacer("{id}", id, "{run}", strconv.Itoa(run), "{duration}", strconv.FormatFloat(realDur, 'f', 3, 64),
		"{gpus}", dev, "{ngpus}", strconv.Itoa(len(j.GPUs)))
	tmpl := b.opt.Command
	if c := b.commands[j.Spec.ID]; len(c) > 0 {
		tmpl = c
	}
	argv := make([]string, len(tmpl))
	for i, a := range tmpl {
		argv[i] = repl.Replace(a)
	}
	status := filepath.Join(r.opt.StateDir, "runs", fmt.Sprintf("%s.%d.status", safeName(id), run))
	logPath := filepath.Join(r.opt.StateDir, "runs", fmt.Sprintf("%s.%d.log", safeName(id), run))
	// A shell wrapper records the command's exit status in a file, so a runner
	// restarted after the run ended still learns how it ended. The user's argv
	// is passed as "$@", never interpolated into the script. The status is a
	// few bytes written by a shell builtin (no rename: an extra exec cost ~20 ms
	// per run on a loaded machine); a torn one reads as unknown (lost).
	script := `"$@"; s=$?; echo $s > "$` + envStatus + `"; exit $s`
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, "gpusim-job"}, argv...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = b.env(id, run, dev, status)
	cmd.Dir = r.opt.WorkDir
	// Created empty (0600) here so the wrapper's write keeps the mode; empty
	// reads as no status.
	if err := os.WriteFile(status, nil, 0o600); err != nil {
		return fmt.Errorf("job %s: status file: %w", id, err)
	}
	lf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("job %s: log: %w", id, err)
	}
	cmd.Stdout, cmd.Stderr = lf, lf
	err = cmd.Start()
	lf.Close()
	if err != nil {
		_ = r.journal.Append(Record{Rec: RecEnd, TimeUS: int64(now), Job: id, Run: run, Outcome: sim.OutcomeFailed.String(), Reason: err.Error()})
		return fmt.Errorf("job %s: %w", id, err)
	}
	p := &proc{ref: j.Ref, id: id, run: run, pid: cmd.Process.Pid, cmd: cmd, done: make(chan struct{}), status: status}
	if info, ok := readProc(p.pid); ok {
		p.ticks = info.ticks
	}
	if j.Spec.Walltime > 0 && r.cfg.EnforceWalltime {
		left := j.Spec.Walltime
		p.walltil = time.Now().Add(time.Duration(left.Seconds() / r.opt.Scale * float64(time.Second)))
	}
	b.procs[j.Ref] = p
	go func() {
		err := cmd.Wait()
		code := 0
		if err != nil {
			code = -1
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			}
		}
		p.exit = code
		close(p.done)
		b.mu.Lock()
		b.pending = append(b.pending, exitNote{p: p, code: code})
		b.mu.Unlock()
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}()
	r.logf("%-12s started run %d on GPUs %s (pid %d)", id, run, dev, p.pid)
	if err := r.journal.Append(Record{Rec: RecStart, TimeUS: int64(now), Job: id, Run: run, PID: p.pid, StartTicks: p.ticks, Nodes: nodes, GPUs: gpus, Devices: dev}); err != nil {
		// Not journalled, the run must not go on: the job ends failed.
		delete(b.procs, j.Ref)
		killGroup(p, 0)
		return err
	}
	return nil
}

func (b *Local) env(id string, run int, dev, status string) []string {
	var env []string
	if b.opt.InheritEnv {
		env = os.Environ()
	} else {
		for _, k := range safeEnv {
			if v, ok := os.LookupEnv(k); ok {
				env = append(env, k+"="+v)
			}
		}
	}
	return append(env, "CUDA_VISIBLE_DEVICES="+dev, envJob+"="+id, envToken+"="+b.token(id, run), envStatus+"="+status)
}

// safeName maps a job ID to a file name.
func safeName(id string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == 0 || r == '\\' {
			return '_'
		}
		return r
	}, id)
}

// Stop implements sim.Backend: SIGTERM to the run's process group, up to the
// grace (virtual, divided by the time scale) for it to exit, then SIGKILL; it
// returns once no process of the group is left, and journals the stop.
func (b *Local) Stop(pr *sim.Preempt) error {
	p := b.procs[pr.Job]
	if p == nil {
		return fmt.Errorf("no process for job ref %d", pr.Job)
	}
	delete(b.procs, pr.Job)
	killGroup(p, realDuration(pr.Grace, b.r.opt.Scale))
	reason := pr.Reason
	if reason == "" {
		reason = "preempt"
	}
	return b.r.journal.Append(Record{Rec: RecStop, TimeUS: int64(b.r.live.Now()), Job: p.id, Run: p.run, Reason: reason,
		Mode: pr.Mode.String(), GraceUS: int64(pr.Grace), DelayUS: int64(pr.Delay)})
}

// killGroup terminates a run's process group: SIGTERM, grace, SIGKILL, and
// waits until the group is gone (and an own child is reaped).
func killGroup(p *proc, grace time.Duration) {
	killPG(p.pid, syscall.SIGTERM)
	if p.cmd != nil {
		select {
		case <-p.done:
		case <-time.After(grace):
		}
	} else {
		waitGroupGone(p.pid, grace)
	}
	killPG(p.pid, syscall.SIGKILL)
	if p.cmd != nil {
		<-p.done
	}
	waitGroupGone(p.pid, 5*time.Second)
}

// collect returns the runs that ended since the last call, sorted by JobRef,
// and journals each end: exits of own children, adopted processes that are
// gone (their status file says how they ended), and runs past their walltime
// (stopped here, outcome timeout). Stopped runs are not reported.
func (b *Local) collect() ([]sim.Ended, error) {
	var out []sim.Ended
	b.mu.Lock()
	notes := b.pending
	b.pending = nil
	b.mu.Unlock()
	for _, n := range notes {
		if b.procs[n.p.ref] != n.p {
			continue // stopped by Stop: not an end
		}
		// The shell is gone; children it left behind in the group are killed.
		killPG(n.p.pid, syscall.SIGKILL)
		o := sim.OutcomeCompleted
		if n.code != 0 {
			o = sim.OutcomeFailed
		}
		e, err := b.ended(n.p, o, &n.code)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	now := time.Now()
	for _, p := range b.sortedProcs() {
		switch {
		case p.cmd == nil && !sameProcess(p.pid, p.ticks):
			o, code := readStatus(p.status)
			killPG(p.pid, syscall.SIGKILL)
			e, err := b.ended(p, o, code)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		case !p.walltil.IsZero() && now.After(p.walltil):
			killGroup(p, 0)
			e, err := b.ended(p, sim.OutcomeTimeout, nil)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, c sim.Ended) int { return int(a.Job - c.Job) })
	return out, nil
}

func (b *Local) sortedProcs() []*proc {
	ps := make([]*proc, 0, len(b.procs))
	for _, p := range b.procs {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, c *proc) int { return int(a.ref - c.ref) })
	return ps
}

func (b *Local) ended(p *proc, o sim.Outcome, code *int) (sim.Ended, error) {
	delete(b.procs, p.ref)
	err := b.r.journal.Append(Record{Rec: RecEnd, TimeUS: int64(b.r.live.Now()), Job: p.id, Run: p.run, Outcome: o.String(), Exit: code})
	return sim.Ended{Job: p.ref, Outcome: o}, err
}

// readStatus reads a run's status file: completed for 0, failed otherwise,
// lost when there is none (the run died without its wrapper writing it).
func readStatus(path string) (sim.Outcome, *int) {
	b, err := os.ReadFile(path)
	if err != nil {
		return sim.OutcomeLost, nil
	}
	code, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return sim.OutcomeLost, nil
	}
	if code == 0 {
		return sim.OutcomeCompleted, &code
	}
	return sim.OutcomeFailed, &code
}

// nextDeadline is the earliest walltime deadline of a running run.
func (b *Local) nextDeadline() time.Time {
	var t time.Time
	for _, p := range b.procs {
		if !p.walltil.IsZero() && (t.IsZero() || p.walltil.Before(t)) {
			t = p.walltil
		}
	}
	return t
}

// stopAll terminates every run (runner interrupted), journalling each as a
// stop, so a resumed runner requeues them. No process is left behind.
func (b *Local) stopAll(grace time.Duration) error {
	var first error
	for _, p := range b.sortedProcs() {
		delete(b.procs, p.ref)
		killGroup(p, grace)
		if err := b.r.journal.Append(Record{Rec: RecStop, TimeUS: int64(b.r.live.Now()), Job: p.id, Run: p.run, Reason: "runner interrupted",
			Mode: sim.PreemptRequeue.String()}); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// realDuration converts a virtual duration to wall time at the time scale.
func realDuration(d sim.Duration, scale float64) time.Duration {
	s := d.Seconds() / scale * float64(time.Second)
	if s > math.MaxInt64/2 {
		return time.Duration(math.MaxInt64 / 2)
	}
	return time.Duration(s)
}
