package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/traces"
	"github.com/gpusim/gpusim/workloads"
)

func runWorkloadCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// generate -> fit -> generate from the fitted block: files are valid native traces,
// output is deterministic, and the fitted block decodes strictly.
func TestWorkloadGenerateFitRoundTrip(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "jobs.csv")
	code, _, errs := runWorkloadCLI("workload", "generate", "--gpus", "64", "--seed", "3", "--jobs", "500", "-o", csv)
	if code != 0 {
		t.Fatalf("generate: code %d: %s", code, errs)
	}
	jobs, _, err := traces.ReadJobs(traces.FormatNative, csv)
	if err != nil || len(jobs) != 500 {
		t.Fatalf("read back: %d jobs, %v", len(jobs), err)
	}
	// stdout form is byte-identical to the file for the same seed
	code, out, _ := runWorkloadCLI("workload", "generate", "--gpus", "64", "--seed", "3", "--jobs", "500")
	file, _ := os.ReadFile(csv)
	if code != 0 || out != string(file) {
		t.Fatalf("stdout output differs from the file (code %d)", code)
	}

	yml := filepath.Join(dir, "syn.yaml")
	code, _, errs = runWorkloadCLI("workload", "fit", csv, "--gpus", "64", "-o", yml)
	if code != 0 {
		t.Fatalf("fit: code %d: %s", code, errs)
	}
	data, err := os.ReadFile(yml)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), "# workload.synthetic fitted") {
		t.Fatalf("no header:\n%s", data)
	}
	s, err := workloads.DecodeYAML(data)
	if err != nil {
		t.Fatal(err)
	}
	if s.Jobs != 500 || s.Load < 0.7 || s.Load > 1.0 {
		t.Fatalf("fitted jobs %d load %g", s.Jobs, s.Load)
	}
	pq := filepath.Join(dir, "again.parquet")
	code, _, errs = runWorkloadCLI("workload", "generate", "--config", yml, "--gpus", "64", "-o", pq)
	if code != 0 {
		t.Fatalf("generate from fit: code %d: %s", code, errs)
	}
	again, _, err := traces.ReadJobs(traces.FormatNative, pq)
	if err != nil || len(again) != 500 {
		t.Fatalf("parquet read back: %d, %v", len(again), err)
	}
}

func TestWorkloadDefaultPrintsBlock(t *testing.T) {
	code, out, _ := runWorkloadCLI("workload", "default")
	if code != 0 {
		t.Fatal(code)
	}
	s, err := workloads.DecodeYAML([]byte(out))
	if err != nil || s.Jobs != workloads.DefaultJobs {
		t.Fatalf("%v %+v", err, s)
	}
}

func TestWorkloadBadInputExit2(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("jobs: 5\nclasses:\n- {class: gaming, weight: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	unknown := filepath.Join(dir, "unknown.yaml")
	if err := os.WriteFile(unknown, []byte("jobz: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tiny := filepath.Join(dir, "tiny.csv")
	if err := os.WriteFile(tiny, []byte("id,submit_s,gpus,duration_s\na,0,1,10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"workload", "generate", "--config", bad}, "classes[0].class"},
		{[]string{"workload", "generate", "--config", unknown}, "jobz"},
		{[]string{"workload", "generate", "--config", filepath.Join(dir, "missing.yaml")}, "no such file"},
		{[]string{"workload", "generate", "--gpus", "0"}, "--gpus"},
		{[]string{"workload", "generate", "--load", "-1"}, "load"},
		{[]string{"workload", "fit", filepath.Join(dir, "missing.csv")}, "no such file"},
		{[]string{"workload", "fit", tiny, "--format", "nope"}, "unknown trace format"},
		{[]string{"workload", "fit", tiny}, "too few jobs"},
		{[]string{"workload", "fit"}, "arg"},
	} {
		code, _, errs := runWorkloadCLI(tc.args...)
		if code != ExitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: code %d, stderr %q (want 2 and %q)", tc.args, code, errs, tc.want)
		}
	}
}
