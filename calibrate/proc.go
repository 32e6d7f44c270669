package calibrate

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gpusim/gpusim/internal/procfs"
)

// obs is one progress observation: when the line arrived and its value (cumulative
// items, or a throughput for regex progress).
type obs struct {
	t time.Time
	v float64
}

// member is one running workload process (leader of its own process group).
type member struct {
	name string
	cmd  *exec.Cmd
	pgid int
	re   *regexp.Regexp // nil: progress lines

	mu   sync.Mutex
	obs  []obs
	done chan struct{} // closed when the process exited and output was drained
	err  error         // Wait's result
	log  *os.File
}

// startMember starts argv in its own process group with env, logging stdout and
// stderr to logPath and parsing stdout for progress.
func startMember(name string, argv []string, dir string, env []string, re *regexp.Regexp, logPath string) (*member, error) {
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("workload %s: log: %w", name, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = lf
	out, err := cmd.StdoutPipe()
	if err != nil {
		lf.Close()
		return nil, fmt.Errorf("workload %s: %w", name, err)
	}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("workload %s: start %q: %w", name, argv[0], err)
	}
	m := &member{name: name, cmd: cmd, pgid: cmd.Process.Pid, re: re, done: make(chan struct{}), log: lf}
	go func() {
		m.scan(io.TeeReader(out, lf))
		m.err = cmd.Wait()
		lf.Close()
		close(m.done)
	}()
	return m, nil
}

func (m *member) scan(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		now := time.Now()
		v, ok := parseProgress(sc.Text(), m.re)
		if ok {
			m.mu.Lock()
			m.obs = append(m.obs, obs{now, v})
			m.mu.Unlock()
		}
	}
	// Drain anything left (e.g. an over-long line) so the child never blocks.
	_, _ = io.Copy(io.Discard, r)
}

// parseProgress extracts a value from a stdout line: with re nil the line must
// start with "gpusim-progress items=<n>"; otherwise re's first group is the value.
func parseProgress(line string, re *regexp.Regexp) (float64, bool) {
	if re != nil {
		sm := re.FindStringSubmatch(line)
		if len(sm) < 2 {
			return 0, false
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(sm[1]), 64)
		if err != nil || v < 0 || v != v || v > 1e300 {
			return 0, false
		}
		return v, true
	}
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), ProgressPrefix)
	if !ok {
		return 0, false
	}
	for _, f := range strings.Fields(rest) {
		if s, ok := strings.CutPrefix(f, "items="); ok {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || v < 0 || v != v || v > 1e300 {
				return 0, false
			}
			return v, true
		}
	}
	return 0, false
}

func (m *member) observations() []obs {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]obs(nil), m.obs...)
}

func (m *member) exited() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the member's whole process group.
func (m *member) signal(sig syscall.Signal) {
	_ = syscall.Kill(-m.pgid, sig)
}

// stopMembers terminates every member's process group: SIGTERM, up to grace for
// the leaders to exit, then SIGKILL to each group (which also reaches children
// that ignored SIGTERM or outlived their parent). It waits for the leaders to be
// reaped and returns an error naming any group that still has processes 2s later.
func stopMembers(ms []*member, grace time.Duration) error {
	for _, m := range ms {
		m.signal(syscall.SIGTERM)
	}
	deadline := time.After(grace)
wait:
	for _, m := range ms {
		select {
		case <-m.done:
		case <-deadline:
			break wait
		}
	}
	for _, m := range ms {
		m.signal(syscall.SIGKILL)
	}
	var left []string
	reaped := time.After(grace + 5*time.Second)
	for _, m := range ms {
		select {
		case <-m.done:
		case <-reaped:
			left = append(left, fmt.Sprintf("%s (pid %d not reaped: output still held open)", m.name, m.pgid))
		}
	}
	for _, m := range ms {
		if !groupGone(m.pgid, 2*time.Second) {
			left = append(left, fmt.Sprintf("%s (pgid %d)", m.name, m.pgid))
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("processes still running after SIGKILL in group(s) %s", strings.Join(left, ", "))
	}
	return nil
}

// groupGone polls until no live process is left in process group pgid or wait
// passes. Zombies (exited, not yet reaped by their new parent) do not count.
func groupGone(pgid int, wait time.Duration) bool {
	end := time.Now().Add(wait)
	for {
		if !groupAlive(pgid) {
			return true
		}
		if time.Now().After(end) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// groupAlive reports whether process group pgid has a process that is not a
// zombie. Without /proc a zombie counts as alive.
func groupAlive(pgid int) bool { return procfs.GroupAlive(pgid) }

// procStat reads a process's state and process group from /proc/PID/stat.
func procStat(pid int) (state string, pgrp int, ok bool) {
	st, ok := procfs.Read(pid)
	return st.State, st.PGrp, ok
}

// throughput computes a member's throughput over [from, to]: for cumulative
// progress lines the item delta over the time delta between the first and last
// observation inside the window; for regex progress the mean reported value.
func throughput(o []obs, regex bool, from, to time.Time) (float64, error) {
	var in []obs
	for _, x := range o {
		if !x.t.Before(from) && !x.t.After(to) {
			in = append(in, x)
		}
	}
	if regex {
		if len(in) == 0 {
			return 0, fmt.Errorf("no throughput line in the measurement window")
		}
		var s float64
		for _, x := range in {
			s += x.v
		}
		return s / float64(len(in)), nil
	}
	if len(in) < 2 {
		return 0, fmt.Errorf("%d progress line(s) in the measurement window, need 2 (report progress more often or lengthen measure)", len(in))
	}
	first, last := in[0], in[len(in)-1]
	dt := last.t.Sub(first.t).Seconds()
	if dt <= 0 {
		return 0, fmt.Errorf("progress lines in the measurement window have no time spread")
	}
	if last.v < first.v {
		return 0, fmt.Errorf("progress items went backwards (%g -> %g); items=<n> must be cumulative", first.v, last.v)
	}
	return (last.v - first.v) / dt, nil
}
