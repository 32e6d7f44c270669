package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/reports"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// writeRunDirs runs a 30-job workload on 2 x 8 GPUs under fifo and sjf and
// writes root/<policy> run directories.
func writeRunDirs(t *testing.T, root string) {
	t.Helper()
	c, err := sim.NewCluster([]sim.NodeSpec{
		{Name: "node1", GPUModel: "h100", GPUs: 8, CPUMilli: 1 << 20, MemoryMiB: 1 << 20, NVLinkDomain: -1},
		{Name: "node2", GPUModel: "h100", GPUs: 8, CPUMilli: 1 << 20, MemoryMiB: 1 << 20, NVLinkDomain: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	var jobs []sim.JobSpec
	for i := range 30 {
		jobs = append(jobs, sim.JobSpec{ID: sim.JobID(fmt.Sprintf("j%02d", i)), Submit: sim.Time(i) * sim.Time(60*sim.Second),
			Replicas: 1, GPUsPerReplica: int32(1 + i%8), GPUMilli: 1000, Duration: sim.Duration(300+i*37) * sim.Second,
			Class: []sim.JobClass{sim.ClassTraining, sim.ClassExperiment}[i%2], Queue: "q", User: "u"})
	}
	for _, name := range []string{"fifo", "sjf"} {
		pol, err := policies.New(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		res := simtest.RunConfig(t, sim.Config{Cluster: c, Jobs: jobs, Policy: pol, Seed: 3, SampleInterval: 30 * sim.Second})
		s := reports.Summarize(res, reports.Provenance{Scenario: "cli-test", Seed: 3}, time.Second)
		if err := reports.WriteRunDir(filepath.Join(root, name), res, s); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	writeRunDirs(t, filepath.Join(dir, "out"))
	rep := filepath.Join(dir, "report")
	code, out, errs := runCLI("report", filepath.Join(dir, "out"), "-o", rep)
	if code != 0 {
		t.Fatalf("code %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(out, "2 run(s)") {
		t.Errorf("stdout: %s", out)
	}
	b, err := os.ReadFile(filepath.Join(rep, "summary.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "fifo,fifo,cli-test,3,30,30,0,") || !strings.HasPrefix(lines[2], "sjf,") {
		t.Errorf("summary.csv:\n%s", b)
	}
	for _, f := range []string{"index.html", "summary.md", "wait_cdf.png", "wait_cdf.svg", "gantt_fifo.png", "headline.svg"} {
		if _, err := os.Stat(filepath.Join(rep, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestReportCommandBadInput(t *testing.T) {
	dir := t.TempDir()
	for name, args := range map[string][]string{
		"no args":     {"report", "-o", dir},
		"no output":   {"report", dir},
		"missing dir": {"report", filepath.Join(dir, "nope"), "-o", filepath.Join(dir, "r")},
		"empty dir":   {"report", dir, "-o", filepath.Join(dir, "r")},
	} {
		if code, out, errs := runCLI(args...); code != ExitUsage {
			t.Errorf("%s: code %d\n%s%s", name, code, out, errs)
		}
	}
	bad := filepath.Join(dir, "bad")
	os.MkdirAll(bad, 0o755)
	os.WriteFile(filepath.Join(bad, "summary.json"), []byte("{"), 0o644)
	if code, _, errs := runCLI("report", bad, "-o", filepath.Join(dir, "r")); code != ExitUsage || !strings.Contains(errs, "summary.json") {
		t.Errorf("malformed: code %d %s", code, errs)
	}
}

// With device-level sharing on, the report plots allocated next to useful
// utilization over time (issue 11); without it the figure is absent.
func TestReportUsefulUtilization(t *testing.T) {
	dir := t.TempDir()
	ex := filepath.Join("..", "..", "scenarios", "examples", "sharing-timeslice.yaml")
	if code, out, errs := runCLI("run", ex, "-o", filepath.Join(dir, "run"), "--quiet"); code != 0 {
		t.Fatalf("run: code %d\n%s%s", code, out, errs)
	}
	rep := filepath.Join(dir, "report")
	if code, out, errs := runCLI("report", filepath.Join(dir, "run"), "-o", rep); code != 0 {
		t.Fatalf("report: code %d\n%s%s", code, out, errs)
	}
	for _, f := range []string{"utilization_useful.png", "utilization_useful.svg"} {
		if _, err := os.Stat(filepath.Join(rep, f)); err != nil {
			t.Error(err)
		}
	}
	html, err := os.ReadFile(filepath.Join(rep, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "utilization_useful") || !strings.Contains(string(html), "Allocated vs useful") {
		t.Error("index.html does not show the allocated-vs-useful figure")
	}
	rows, err := reports.ReadTimeseriesParquet(filepath.Join(dir, "run", "fifo-best-fit", "timeseries.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	var differ bool
	for _, r := range rows {
		if !r.HasUseful {
			t.Fatal("sharing run's timeseries read back without useful_utilization")
		}
		differ = differ || r.UsefulUtilization != r.Utilization
	}
	if !differ {
		t.Error("useful utilization equals allocated at every sample: interference not visible")
	}
	// no sharing: no such figure
	plain := filepath.Join(dir, "plain")
	writeRunDirs(t, filepath.Join(dir, "plainrun"))
	if code, out, errs := runCLI("report", filepath.Join(dir, "plainrun"), "-o", plain); code != 0 {
		t.Fatalf("report: code %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(plain, "utilization_useful.png")); err == nil {
		t.Error("a run without sharing got the useful-utilization figure")
	}
}
