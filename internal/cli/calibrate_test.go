package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpusim/gpusim/calibrate"
	"github.com/gpusim/gpusim/calibrate/nvml"
)

func calibrateCLI(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = Main(args, strings.NewReader(""), &o, &e)
	return code, o.String(), e.String()
}

// shellPlan writes a plan whose workloads are shell loops printing progress.
func shellPlan(t *testing.T, extra string) string {
	t.Helper()
	dir := t.TempDir()
	plan := `apiVersion: gpusim/v1alpha1
kind: CalibrationPlan
name: cli-test
modes: [timeslice, mps]
groupSizes: [2]
warmup: 50ms
measure: 300ms
repetitions: 1
timeout: 10s
stopGrace: 1s
sampleInterval: 50ms
workloads:
  - name: loop
    class: test
    command: 'i=0; while :; do i=$((i+1)); echo "gpusim-progress items=$i"; sleep 0.01; done'
` + extra
	path := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(path, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Without the NVIDIA driver every subcommand exits 1 with a clear message.
func TestCalibrateNoNVML(t *testing.T) {
	real := nvml.New("")
	if real.Init() == nil {
		real.Shutdown()
		t.Skip("NVML is present on this machine")
	}
	plan := shellPlan(t, "")
	out := t.TempDir()
	for _, args := range [][]string{
		{"calibrate", "discover"},
		{"calibrate", "discover", "--json"},
		{"calibrate", "run", plan, "-o", out},
		{"calibrate", "telemetry", "-o", filepath.Join(out, "t.parquet"), "--duration", "1s"},
	} {
		code, _, stderr := calibrateCLI(args...)
		if code != ExitRuntime || !strings.Contains(stderr, "NVML library not found (is the NVIDIA driver installed?)") {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
}

func TestCalibrateDiscoverFake(t *testing.T) {
	tmpl := filepath.Join(t.TempDir(), "node.yaml")
	code, stdout, stderr := calibrateCLI("calibrate", "discover", "--fake", "--json", "--template-out", tmpl)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r calibrate.NodeReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.GPUs) != 8 || r.Topology[0][1] != calibrate.LinkNVLink || r.Template.CPUMilli != 224000 {
		t.Errorf("report: %d GPUs, topology %v, template %+v", len(r.GPUs), r.Topology[0], r.Template)
	}
	b, err := os.ReadFile(tmpl)
	if err != nil || !strings.Contains(string(b), "gpuModel: H100-80GB-HBM3") || !strings.Contains(string(b), "pcieSize: 2") {
		t.Errorf("template %v:\n%s", err, b)
	}
	code, stdout, _ = calibrateCLI("calibrate", "discover", "--fake")
	if code != 0 || !strings.Contains(stdout, "topology:") || !strings.Contains(stdout, "MIG on, 3 instance(s)") {
		t.Errorf("text discover exit %d:\n%s", code, stdout)
	}
}

func TestCalibrateRunFake(t *testing.T) {
	plan := shellPlan(t, "")
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := calibrateCLI("calibrate", "run", "--fake", plan, "-o", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "cells: 4 in plan, 4 measured now, 0 resumed") {
		t.Errorf("stdout:\n%s", stdout)
	}
	m, err := calibrate.LoadInterference(filepath.Join(out, "interference.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !m.Metadata.Fake || len(m.Modes) != 2 || len(m.Modes[1].Groups) != 1 {
		t.Errorf("matrix %+v", m)
	}
	for _, f := range []string{"samples.parquet", "heatmap-timeslice.png", "heatmap-mps.png", "journal.jsonl"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	// Second invocation resumes everything from the journal.
	code, stdout, _ = calibrateCLI("calibrate", "run", "--fake", plan, "-o", out)
	if code != 0 || !strings.Contains(stdout, "0 measured now, 4 resumed") {
		t.Errorf("resume exit %d:\n%s", code, stdout)
	}
}

func TestCalibrateUsageErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("apiVersion: gpusim/v1alpha1\nkind: CalibrationPlan\nmeasure: 1s\nmodes: [gang]\nworkloads: [{name: a, command: x}]\n"), 0o644)
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"calibrate", "run", "--fake", bad, "-o", dir}, "bad.yaml:4: modes[0]: unknown mode"},
		{[]string{"calibrate", "run", "--fake", bad}, "-o DIR is required"},
		{[]string{"calibrate", "run", "--fake"}, "exactly one PLAN"},
		{[]string{"calibrate", "run", "--fake", filepath.Join(dir, "missing.yaml"), "-o", dir}, "no such file"},
		{[]string{"calibrate", "telemetry", "--fake"}, "-o FILE.parquet is required"},
		{[]string{"calibrate", "telemetry", "--fake", "-o", filepath.Join(dir, "t.parquet"), "--gpus", "0,x"}, `"x" is not a GPU index`},
		{[]string{"calibrate", "telemetry", "--fake", "-o", filepath.Join(dir, "t.parquet"), "--gpus", "9"}, "GPU 9 does not exist"},
		{[]string{"calibrate", "telemetry", "--fake", "-o", filepath.Join(dir, "t.parquet"), "--interval", "0s"}, "--interval must be > 0"},
		{[]string{"calibrate", "telemetry", "--fake", "-o", filepath.Join(dir, "nodir", "t.parquet")}, "does not exist"},
		{[]string{"calibrate", "discover", "--fake", "--bogus"}, "unknown flag"},
	} {
		code, _, stderr := calibrateCLI(tc.args...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

func TestCalibrateRunRefusesMIGChange(t *testing.T) {
	plan := shellPlan(t, "gpu: 7\n")
	code, _, stderr := calibrateCLI("calibrate", "run", "--fake", plan, "-o", t.TempDir())
	if code != ExitRuntime || !strings.Contains(stderr, "never changes MIG mode") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

func TestCalibrateTelemetryFake(t *testing.T) {
	out := filepath.Join(t.TempDir(), "t.parquet")
	code, stdout, stderr := calibrateCLI("calibrate", "telemetry", "--fake", "--interval", "10ms", "--duration", "35ms", "--gpus", "0,7", "-o", out)
	if code != 0 || !strings.Contains(stdout, "samples to") {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	if st, err := os.Stat(out); err != nil || st.Size() == 0 {
		t.Errorf("telemetry file: %v", err)
	}
}

// TestCalibrateHelperProcess is not a real test: re-executed by
// TestCalibrateInterruptResume, it runs the gpusim command line in a child
// process so the test can send it a real SIGINT.
func TestCalibrateHelperProcess(t *testing.T) {
	args := os.Getenv("GPUSIM_CAL_HELPER_ARGS")
	if args == "" {
		t.Skip("helper process only")
	}
	os.Exit(Main(strings.Split(args, "\x1f"), os.Stdin, os.Stdout, os.Stderr))
}

// Ctrl-C in the middle of `calibrate run`: gpusim exits 130, kills every workload
// process group, and a second run resumes without re-measuring finished cells.
func TestCalibrateInterruptResume(t *testing.T) {
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	os.Mkdir(pids, 0o755)
	plan := shellPlan(t, "")
	b, _ := os.ReadFile(plan)
	// Each workload shell records its pid (= its process group id) first.
	text := strings.Replace(string(b), "command: 'i=0;", "command: 'echo x > "+pids+"/$$; i=0;", 1)
	text = strings.Replace(text, "modes: [timeslice, mps]", "modes: [timeslice]", 1)
	text = strings.Replace(text, "repetitions: 1", "repetitions: 3", 1)
	os.WriteFile(plan, []byte(text), 0o644)
	out := filepath.Join(dir, "out")
	helper := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCalibrateHelperProcess$")
		cmd.Env = append(os.Environ(), "GPUSIM_CAL_HELPER_ARGS="+strings.Join([]string{"calibrate", "run", "--fake", plan, "-o", out}, "\x1f"))
		return cmd
	}
	cmd := helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Interrupt once the first cell is journaled and the second is running.
	deadline := time.Now().Add(20 * time.Second)
	for {
		if jb, _ := os.ReadFile(filepath.Join(out, "journal.jsonl")); strings.Count(string(jb), "\n") >= 2 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no cell journaled: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != ExitInterrupted || !strings.Contains(stderr.String(), "interrupted") {
		t.Fatalf("interrupted run: %v\n%s", err, stderr.String())
	}
	ents, _ := os.ReadDir(pids)
	if len(ents) < 2 {
		t.Fatalf("only %d workload processes recorded", len(ents))
	}
	for _, e := range ents {
		pgid, _ := strconv.Atoi(e.Name())
		if groupHasLive(pgid) {
			t.Errorf("process group %d still has running processes after Ctrl-C", pgid)
		}
	}
	jb, _ := os.ReadFile(filepath.Join(out, "journal.jsonl"))
	done := strings.Count(string(jb), `"status":"ok"`)

	cmd = helper()
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("resume: %v\n%s", err, stderr.String())
	}
	if want := fmt.Sprintf("%d measured now, %d resumed", 6-done, done); !strings.Contains(stdout.String(), want) {
		t.Errorf("resume output %q, want %q", stdout.String(), want)
	}
	jb, _ = os.ReadFile(filepath.Join(out, "journal.jsonl"))
	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(jb)), "\n")[1:] {
		var r calibrate.CellResult
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		seen[r.ID]++
	}
	if len(seen) != 6 {
		t.Errorf("journal cells %v, want 6", seen)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("cell %s measured %d times", id, n)
		}
	}
}

// groupHasLive reports whether process group pgid has a non-zombie process.
func groupHasLive(pgid int) bool {
	if errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
		return false
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" && f[0] != "X" {
			return true
		}
	}
	return false
}

// The run functions are usable without flag parsing; a cancelled context is an
// interrupt (exit 130) after which nothing is half-written.
func TestRunCalibrateRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := filepath.Join(t.TempDir(), "out")
	var o, e bytes.Buffer
	err := RunCalibrateRun(ctx, &IO{Out: &o, Err: &e}, CalibrateRunOptions{
		CalibrateProbeOptions: CalibrateProbeOptions{Fake: true}, Plan: shellPlan(t, ""), OutDir: out})
	if exitCode(err) != ExitInterrupted || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("got %v (exit %d)", err, exitCode(err))
	}
	if _, err := os.Stat(filepath.Join(out, "interference.yaml")); err == nil {
		t.Error("cancelled run wrote interference.yaml")
	}
	err = RunCalibrateDiscover(&IO{Out: &o, Err: &e}, CalibrateDiscoverOptions{CalibrateProbeOptions: CalibrateProbeOptions{Fake: true}, JSON: true})
	if err != nil {
		t.Fatal(err)
	}
}
