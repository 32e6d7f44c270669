package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
