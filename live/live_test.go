package live

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/reports"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// The end-to-end tests run the runner in a child process (this test binary
// re-executed with GPUSIM_LIVE_HELPER set), so that it can be SIGKILLed and
// started again on the same state directory.
func TestMain(m *testing.M) {
	if os.Getenv("GPUSIM_LIVE_HELPER") != "" {
		os.Exit(helperMain())
	}
	os.Exit(m.Run())
}

// labJobs is the workload of the end-to-end test: n jobs of 1-4 GPUs lasting
// lo..hi simulated seconds, arriving with exponential gaps of mean gap s, and a
// walltime of twice the duration.
func labJobs(n int, lo, hi, gap float64, seed uint64) []sim.JobSpec {
	r := sim.Stream(seed, "live-test")
	jobs := make([]sim.JobSpec, n)
	var at float64
	for i := range jobs {
		at += r.ExpFloat64() * gap
		g := []int32{1, 1, 1, 1, 2, 2, 4}[r.IntN(7)]
		d := lo + r.Float64()*(hi-lo)
		jobs[i] = simtest.MakeJob(fmt.Sprintf("j%02d", i)).GPUs(g).Dur(d).Wall(2 * d).At(at).Obj()
	}
	return jobs
}

func labConfig(t testing.TB, pol string, jobs []sim.JobSpec) sim.Config {
	c, err := sim.NewCluster([]sim.NodeSpec{{Name: "box", GPUModel: "H100", GPUs: 7, GPUMemMiB: 81559, CPUMilli: 224000, MemoryMiB: 1 << 21}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := policies.New(pol, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sim.Config{Cluster: c, Jobs: jobs, Policy: p, EnforceWalltime: true}
}

func devices(n int) []string {
	d := make([]string, n)
	for i := range d {
		d[i] = fmt.Sprintf("GPU-test-%d", i)
	}
	return d
}

const e2eScale = 300

// helperMain runs the 50-job runner on $GPUSIM_LIVE_STATE until done (or a
// signal) and writes its stats and result counts to $GPUSIM_LIVE_STATE/out.json.
func helperMain() int {
	state := os.Getenv("GPUSIM_LIVE_STATE")
	cfg := labConfig(helperTB{}, "easy-backfill", labJobs(50, 20, 160, 18, 13))
	r, err := NewRunner(cfg, Options{StateDir: state, Scale: e2eScale, Grace: 200 * time.Millisecond,
		Local: LocalOptions{Devices: devices(7)}, Policy: "easy-backfill", Scenario: "e2e", ScenarioSHA256: "x"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	res, st, err := r.Run(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	done := 0
	for i := range res.Jobs {
		if res.Jobs[i].State == sim.StateCompleted {
			done++
		}
	}
	b, _ := json.Marshal(map[string]any{"stats": st, "completed": done, "jobs": len(res.Jobs)})
	if err := os.WriteFile(filepath.Join(state, "out.json"), b, 0o600); err != nil {
		return 1
	}
	return 0
}

// helperTB lets labConfig run outside a test.
type helperTB struct{ testing.TB }

func (helperTB) Fatal(args ...any) { panic(fmt.Sprint(args...)) }
func (helperTB) Helper()           {}

func startHelper(t *testing.T, state string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // as a shell starts a command
	cmd.Env = append(os.Environ(), "GPUSIM_LIVE_HELPER=1", "GPUSIM_LIVE_STATE="+state)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

func readJournal(t *testing.T, state string) []Record {
	t.Helper()
	f, err := os.Open(filepath.Join(state, JournalFile))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []Record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r Record
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			out = append(out, r)
		}
	}
	return out
}

// waitJournal polls the journal until cond holds (or fails the test after d).
func waitJournal(t *testing.T, state string, d time.Duration, what string, cond func([]Record) bool) []Record {
	t.Helper()
	end := time.Now().Add(d)
	for {
		recs := readJournal(t, state)
		if cond(recs) {
			return recs
		}
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s (%d journal records)", what, len(recs))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func count(recs []Record, kind string) int {
	n := 0
	for _, r := range recs {
		if r.Rec == kind {
			n++
		}
	}
	return n
}

// runningJob returns a job with a start record and no end or stop after it.
func runningJob(recs []Record) string {
	open := map[string]bool{}
	var order []string
	for _, r := range recs {
		switch r.Rec {
		case RecStart:
			open[r.Job] = true
			order = append(order, r.Job)
		case RecEnd, RecStop:
			delete(open, r.Job)
		}
	}
	for _, j := range order {
		if open[j] {
			return j
		}
	}
	return ""
}

// TestLocalEndToEnd runs 50 short jobs as real processes (time-scaled), has an
// operator preempt one, SIGKILLs the runner mid-run, kills one job's processes
// while the runner is down, resumes it, and checks the journal: every other job
// completed exactly once, the killed one is lost and never launched again, no
// (job, run) launched twice, the preempted job ran again after its stop, the
// resume re-adopted live processes, and no job process is left behind.
func TestLocalEndToEnd(t *testing.T) {
	state := t.TempDir()
	cmd := startHelper(t, state)
	recs := waitJournal(t, state, 20*time.Second, "a running job", func(r []Record) bool { return runningJob(r) != "" && count(r, RecEnd) >= 3 })
	victim := runningJob(recs)
	if err := RequestPreempt(state, victim); err != nil {
		t.Fatal(err)
	}
	waitJournal(t, state, 10*time.Second, "the stop of "+victim, func(r []Record) bool {
		for _, x := range r {
			if x.Rec == RecStop && x.Job == victim {
				return true
			}
		}
		return false
	})
	// Kill the runner while jobs run; its job processes live on.
	waitJournal(t, state, 20*time.Second, "20 ended jobs", func(r []Record) bool { return count(r, RecEnd) >= 20 && runningJob(r) != "" })
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if findTokenPrefix(state) <= 0 {
		t.Fatal("no job process survived the runner's SIGKILL (the orphan check below would prove nothing)")
	}
	// While the runner is down, the open run that would end last dies without
	// its wrapper writing a status: the resume must mark it lost, not re-run it.
	recs = readJournal(t, state)
	lost, lostPID := "", 0
	var lostEnd sim.Time
	durs := map[string]sim.Duration{}
	for _, j := range labJobs(50, 20, 160, 18, 13) {
		durs[string(j.ID)] = j.Duration
	}
	open := map[string]Record{}
	unstarted := map[string]bool{} // launched, no start record: the kill hit the fork window
	for _, r := range recs {
		switch r.Rec {
		case RecLaunch:
			unstarted[r.Job] = true
		case RecStart:
			open[r.Job] = r
			delete(unstarted, r.Job)
		case RecEnd, RecStop:
			delete(open, r.Job)
			delete(unstarted, r.Job)
		}
	}
	for id, r := range open {
		if end := sim.Time(r.TimeUS).Add(durs[id]); end > lostEnd {
			lost, lostPID, lostEnd = id, r.PID, end
		}
	}
	if lostPID == 0 {
		t.Fatal("no open run to kill")
	}
	killPG(lostPID, syscall.SIGKILL)
	killedAt := len(recs)
	cmd = startHelper(t, state)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("resumed runner: %v", err)
	}
	recs = readJournal(t, state)
	if recs[len(recs)-1].Rec != RecDone {
		t.Fatalf("journal does not end with done: %+v", recs[len(recs)-1])
	}
	var out struct {
		Stats     Stats
		Completed int
		Jobs      int
	}
	b, err := os.ReadFile(filepath.Join(state, "out.json"))
	if err != nil || json.Unmarshal(b, &out) != nil {
		t.Fatalf("helper output: %v", err)
	}
	// A run launched but not journalled as started when the runner died is
	// found by its token if its process exists; if the kill came before the
	// fork there is none and it is lost too (never run twice, at worst never).
	lostOK := map[string]bool{lost: true}
	for id := range unstarted {
		lostOK[id] = true
	}
	nLost := 0
	for _, r := range recs {
		if r.Rec == RecEnd && r.Outcome == sim.OutcomeLost.String() {
			nLost++
		}
	}
	if out.Completed != 50-nLost || out.Jobs != 50 || nLost < 1 || nLost > len(lostOK) || nLost != out.Stats.Lost {
		t.Errorf("%d of %d jobs completed, %d lost (stats %d), want 50 - lost, lost in %v", out.Completed, out.Jobs, nLost, out.Stats.Lost, lostOK)
	}
	t.Logf("resume: %+v; preempted %s, lost %s; %d journal records", out.Stats, victim, lost, len(recs))
	if !out.Stats.Resumed || out.Stats.Adopted+out.Stats.Recovered == 0 {
		t.Errorf("resume stats %+v: want a resume that found the running jobs", out.Stats)
	}
	launched := map[string]int{}
	completed := map[string]int{}
	stopped := map[string]bool{}
	for _, r := range recs {
		key := r.Job + "/" + strconv.Itoa(r.Run)
		switch r.Rec {
		case RecLaunch:
			launched[key]++
		case RecEnd:
			if r.Outcome == sim.OutcomeCompleted.String() {
				completed[r.Job]++
			} else if !lostOK[r.Job] || r.Outcome != sim.OutcomeLost.String() {
				t.Errorf("job %s run %d ended %s", r.Job, r.Run, r.Outcome)
			}
		case RecStop:
			stopped[key] = true
		}
	}
	for k, n := range launched {
		if n != 1 {
			t.Errorf("run %s launched %d times", k, n)
		}
	}
	for i := range 50 {
		id := fmt.Sprintf("j%02d", i)
		if want := map[bool]int{true: 0, false: 1}[lostOK[id] && completed[id] == 0]; completed[id] != want {
			t.Errorf("job %s completed %d times, want %d", id, completed[id], want)
		}
	}
	for _, r := range recs {
		if r.Rec == RecEnd && r.Outcome == sim.OutcomeLost.String() {
			if launched[fmt.Sprintf("%s/%d", r.Job, r.Run+1)] != 0 {
				t.Errorf("lost job %s launched again", r.Job)
			}
		}
	}
	if completed[lost] != 0 {
		t.Errorf("job %s, killed while the runner was down, completed", lost)
	}
	if !stopped[victim+"/0"] || launched[victim+"/1"] != 1 {
		t.Errorf("preempted job %s: stopped run 0 %v, launched run 1 %d times", victim, stopped[victim+"/0"], launched[victim+"/1"])
	}
	if killedAt >= len(recs) {
		t.Error("nothing happened after the resume")
	}
	// No job process is left (they carry the run token in their environment).
	if pid := findTokenPrefix(state); pid != 0 {
		t.Errorf("job process %d still running after the run", pid)
	}
}

// TestLocalInterrupt: SIGTERM to the runner stops every running job (no
// process is left), journals each as stopped, and a resume requeues and
// finishes them.
func TestLocalInterrupt(t *testing.T) {
	state := t.TempDir()
	cmd := startHelper(t, state)
	waitJournal(t, state, 20*time.Second, "three running jobs", func(r []Record) bool { return count(r, RecStart)-count(r, RecEnd) >= 3 })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("interrupted runner exited 0")
	}
	if pid := findTokenPrefix(state); pid != 0 {
		t.Fatalf("job process %d left running after SIGTERM to the runner", pid)
	}
	recs := readJournal(t, state)
	if runningJob(recs) != "" {
		t.Fatalf("job %s has no end or stop after the interrupt", runningJob(recs))
	}
	stops := 0
	for _, r := range recs {
		if r.Rec == RecStop && r.Reason == "runner interrupted" {
			stops++
		}
	}
	if stops == 0 {
		t.Fatal("no stop record for the interrupted jobs")
	}
	cmd = startHelper(t, state)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("resumed runner: %v", err)
	}
	b, _ := os.ReadFile(filepath.Join(state, "out.json"))
	if !strings.Contains(string(b), `"completed":50`) {
		t.Fatalf("after the resume: %s", b)
	}
}

// findTokenPrefix returns a live process whose run token belongs to the
// runner of state (0 if none).
func findTokenPrefix(state string) int {
	abs, _ := filepath.Abs(state)
	r, err := NewRunner(labConfig(helperTB{}, "fifo", nil), Options{StateDir: abs, Scale: 1, Local: LocalOptions{Devices: devices(7)}})
	if err != nil {
		return -1
	}
	ents, _ := os.ReadDir("/proc")
	want := envToken + "=" + r.tokenBase + "/"
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(b), "\x00") {
			if strings.HasPrefix(kv, want) {
				if p, ok := readProc(pid); ok && p.state != "Z" {
					return pid
				}
			}
		}
	}
	return 0
}

// TestSimVsLive runs a small trace live (processes, time-scaled) and in
// simulation under fifo and easy-backfill and compares them as `gpusim report`
// does. Bounds (issue 13): Kendall tau-b of the start order >= 0.95 and mean
// JCT difference < 5 %.
//
// Each live run costs real time beyond its sleep (fork and exec, journal
// fsyncs, exit detection): ~25 ms on an idle 2-core machine, 100-200 ms at
// times when other builds keep its load average near 14, i.e. scale x that in
// simulated time. At scale 40 and 60-150 s jobs that is 1-5 % of a job, and a
// late end can flip a backfill decision. A miss is therefore measured once
// more (both results are logged) and the test fails only if the second run
// misses too; docs/live.md lists what 20 traces gave.
func TestSimVsLive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes for ~15 s")
	}
	jobs := labJobs(20, 60, 150, 15, 7)
	for _, pol := range []string{"fifo", "easy-backfill"} {
		t.Run(pol, func(t *testing.T) {
			t.Parallel()
			e, err := sim.NewEngine(labConfig(t, pol, jobs))
			if err != nil {
				t.Fatal(err)
			}
			want, err := e.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var miss string
			for try := 1; try <= 2; try++ {
				r, err := NewRunner(labConfig(t, pol, jobs), Options{StateDir: t.TempDir(), Scale: 40, Grace: 100 * time.Millisecond,
					Local: LocalOptions{Devices: devices(7)}, Policy: pol, Scenario: "fidelity", ScenarioSHA256: "x"})
				if err != nil {
					t.Fatal(err)
				}
				got, _, err := r.Run(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				f := reports.CompareFidelity(pol, reports.JobRows(want), reports.JobRows(got))
				load, _ := os.ReadFile("/proc/loadavg")
				t.Logf("try %d: tau-b %.4f, mean JCT sim %.1f s live %.1f s (%+.2f %%), |start error| mean %.2f s p95 %.2f s, JCT ratio p50 %.3f p95 %.3f; loadavg %s",
					try, f.KendallTau, f.MeanSimJCTS, f.MeanLiveJCTS, 100*f.MeanJCTDiff, f.MeanAbsStartErrS, f.P95AbsStartErrS, f.RatioP50, f.RatioP95, strings.TrimSpace(string(load)))
				if f.Completed != len(jobs) {
					t.Fatalf("%d of %d jobs completed in both", f.Completed, len(jobs))
				}
				miss = ""
				if f.KendallTau < 0.95 {
					miss = fmt.Sprintf("start order tau-b %.4f < 0.95", f.KendallTau)
				}
				if d := f.MeanJCTDiff; d <= -0.05 || d >= 0.05 {
					miss += fmt.Sprintf(" mean JCT difference %+.2f %% outside ±5 %%", 100*d)
				}
				if miss == "" {
					break
				}
			}
			if miss != "" {
				t.Errorf("twice out of bounds: %s", miss)
			}
		})
	}
}
