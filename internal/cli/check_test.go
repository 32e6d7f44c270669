package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/reports"
)

func writeSummary(t *testing.T, dir string, mut func(*reports.Summary)) string {
	t.Helper()
	s := &reports.Summary{Schema: reports.SummarySchema, Policy: "fifo", Scenario: "demo",
		Jobs:           reports.JobCounts{Total: 10, Completed: 9, Unfinished: 1, Pending: 1},
		WaitS:          reports.Stats{Mean: 10, P50: 5, P95: 40, P99: 50, Max: 60},
		JCTS:           reports.Stats{Mean: 100, P50: 90, P95: 200, P99: 250, Max: 300},
		Slowdown:       reports.Stats{Mean: 2, P50: 1, P95: 5, P99: 6, Max: 7},
		Classes:        map[string]reports.GroupSummary{"training": {Jobs: 10, Completed: 9, WaitS: reports.Stats{P95: 40}}},
		PerQueue:       map[string]reports.GroupSummary{"default": {Jobs: 10, Completed: 9}},
		MakespanS:      1000,
		GPUUtilization: 0.8,
		GPUCapacity:    16,
	}
	if mut != nil {
		mut(s)
	}
	b, err := reports.MarshalSummary(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "summary.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestCheckIdenticalPasses(t *testing.T) {
	dir := t.TempDir()
	base := writeSummary(t, filepath.Join(dir, "base"), nil)
	cur := writeSummary(t, filepath.Join(dir, "cur"), nil)
	code, out, errs := runCLI("check", "--baseline", base, "--current", cur)
	if code != 0 || !strings.Contains(out, "PASS") {
		t.Fatalf("code %d\n%s%s", code, out, errs)
	}
	// run directories work too, and the positional form
	code, out, errs = runCLI("check", "--baseline", filepath.Join(dir, "base"), filepath.Join(dir, "cur"),
		"--max-regression", "classes.training.wait_s.p95=0,gpu_utilization=0")
	if code != 0 {
		t.Fatalf("code %d\n%s%s", code, out, errs)
	}
}

func TestCheckRegressionExits3(t *testing.T) {
	dir := t.TempDir()
	base := writeSummary(t, filepath.Join(dir, "base"), nil)
	cur := writeSummary(t, filepath.Join(dir, "cur"), func(s *reports.Summary) { s.WaitS.P99 = 60; s.GPUUtilization = 0.79 })
	code, out, errs := runCLI("check", "--baseline", base, "--current", cur, "--max-regression", "gpu_utilization=0.02,wait_s.p99=0.05")
	if code != ExitRegression {
		t.Fatalf("code %d, want 3\n%s%s", code, out, errs)
	}
	for _, want := range []string{"wait_s.p99", "+20.00%", "REGRESSION", "gpu_utilization", "-1.25%", "FAIL"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "REGRESSION") != 1 {
		t.Errorf("only wait_s.p99 should regress:\n%s", out)
	}
}

func TestCheckBadInputExits2(t *testing.T) {
	dir := t.TempDir()
	base := writeSummary(t, filepath.Join(dir, "base"), nil)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"policy": `), 0o644)
	spec := filepath.Join(dir, "rs.yaml")
	os.WriteFile(spec, []byte("apiVersion: gpusim/v1alpha1\nkind: RangeSpec\nmetrics:\n  wait_s.p99: {maxx: 1}\n"), 0o644)
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"malformed":      {[]string{"check", "--baseline", base, "--current", bad}, "bad.json"},
		"missing":        {[]string{"check", "--baseline", filepath.Join(dir, "nope.json"), "--current", base}, "nope.json"},
		"unknown metric": {[]string{"check", "--baseline", base, "--current", base, "--max-regression", "wait_s.p98=0.1"}, "wait_s.p98"},
		"bad tolerance":  {[]string{"check", "--baseline", base, "--current", base, "--max-regression", "wait_s.p99"}, "--max-regression"},
		"no mode":        {[]string{"check", base}, "--baseline"},
		"bad rangespec":  {[]string{"check", "--range-spec", spec, base}, `rs.yaml:4: metrics.wait_s.p99.maxx: unknown field "maxx"`},
	} {
		code, out, errs := runCLI(c.args...)
		if code != ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%s: code %d, stderr %q (want %q)\n%s", name, code, errs, c.want, out)
		}
	}
}

func TestCheckRangeSpec(t *testing.T) {
	dir := t.TempDir()
	writeSummary(t, filepath.Join(dir, "run"), nil)
	spec := filepath.Join(dir, "rs.yaml")
	os.WriteFile(spec, []byte("apiVersion: gpusim/v1alpha1\nkind: RangeSpec\nmetrics:\n  wait_s.p99: {max: 3600}\n  gpu_utilization: {min: 0.7}\n"), 0o644)
	if code, out, errs := runCLI("check", "--range-spec", spec, filepath.Join(dir, "run")); code != 0 {
		t.Fatalf("code %d\n%s%s", code, out, errs)
	}
	os.WriteFile(spec, []byte("apiVersion: gpusim/v1alpha1\nkind: RangeSpec\nmetrics:\n  gpu_utilization: {min: 0.9}\n"), 0o644)
	code, out, _ := runCLI("check", "--range-spec", spec, filepath.Join(dir, "run"))
	if code != ExitRegression || !strings.Contains(out, "gpu_utilization") || !strings.Contains(out, "REGRESSION") {
		t.Fatalf("code %d\n%s", code, out)
	}
}
