package reports

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// failResult: j1 (4 GPUs, 100 s) on node 0 loses node 0 at 30 s with a 5 s
// repair; it restarts from scratch (no checkpoints) on node 1: 30 s lost x 4
// GPUs = 120 GPU-s.
func failResult(t testing.TB) *sim.Result {
	t.Helper()
	jobs := []sim.JobSpec{job("j1", 0, 100, 1, 4, sim.ClassTraining, "q1", "alice"), job("j2", 0, 10, 1, 4, sim.ClassTraining, "q1", "bob")}
	fc := &sim.FailureConfig{Source: sim.NewIncidentList([]sim.Incident{{At: sim.Time(30 * sim.Second), Repair: 5 * sim.Second, GPU: -1, Nodes: []sim.NodeID{0}}})}
	return simtest.RunConfig(t, sim.Config{Cluster: testCluster(t, 2, 4), Jobs: jobs, Policy: fifo{}, Seed: 1, SampleInterval: 10 * sim.Second, Failures: fc})
}

func TestFailureOutputs(t *testing.T) {
	res := failResult(t)
	rows := JobRows(res)
	var csvb bytes.Buffer
	if err := WriteJobsCSV(&csvb, rows); err != nil {
		t.Fatal(err)
	}
	head, rest, _ := strings.Cut(csvb.String(), "\n")
	if !strings.HasSuffix(head, ",interruptions,failure_lost_s,failure_lost_gpu_hours") {
		t.Errorf("header %q", head)
	}
	if !strings.Contains(rest, "j1,") || !strings.Contains(rest, ",1,30,0.033333\n") {
		t.Errorf("j1 row lacks interruptions 1, lost 30 s, 0.033333 GPU-h:\n%s", rest)
	}
	back, err := ParseJobsCSV("jobs.csv", strings.NewReader(csvb.String()))
	if err != nil {
		t.Fatal(err)
	}
	if back[0].Fail == nil || back[0].Fail.Interruptions != 1 || back[0].Fail.LostS != 30 {
		t.Errorf("parsed back %+v", back[0].Fail)
	}
	// the streaming and row writers agree, with the extra columns
	for name, pair := range map[string][2]func(io.Writer) error{
		"csv":     {func(w io.Writer) error { return writeJobsCSVOf(w, res) }, func(w io.Writer) error { return WriteJobsCSV(w, rows) }},
		"parquet": {func(w io.Writer) error { return writeJobsParquetOf(w, res) }, func(w io.Writer) error { return WriteJobsParquet(w, rows) }},
	} {
		if got, want := writeBytes(t, pair[0]), writeBytes(t, pair[1]); !bytes.Equal(got, want) {
			t.Errorf("%s: streaming writer differs", name)
		}
	}
	s := Summarize(res, Provenance{}, 0)
	f := s.Failures
	if f == nil || f.Incidents != 1 || f.Interruptions != 1 || f.LostGPUHours != round(120.0/3600) || f.Repairs != 1 || f.MTTRH != round(5.0/3600) {
		t.Fatalf("failures block %+v", f)
	}
	// useful 110 s x 4 GPUs; allocated: j2 10 s + j1 30 s (lost) + 100 s, x 4
	if f.UsefulGPUHours != round(440.0/3600) || f.AllocatedGPUHours != round(560.0/3600) || f.Goodput != round(440.0/560) {
		t.Errorf("useful %v allocated %v goodput %v", f.UsefulGPUHours, f.AllocatedGPUHours, f.Goodput)
	}
	if Summarize(smallResult(t), Provenance{}, 0).Failures != nil {
		t.Error("a run without failures has a failures block")
	}
}

// TestFailurePowerOutputs: a run with failures and power has both extra column
// groups, failures first, in jobs.csv and jobs.parquet; the CSV parses back and
// the streaming and row writers agree. j1 (4 GPUs at 300 W, 50 W idle) runs
// 30 s, loses its node, and runs 100 s more: 130 s x 1200 W = 0.043333 kWh.
func TestFailurePowerOutputs(t *testing.T) {
	jobs := []sim.JobSpec{job("j1", 0, 100, 1, 4, sim.ClassTraining, "q1", "alice"), job("j2", 0, 10, 1, 4, sim.ClassTraining, "q1", "bob")}
	fc := &sim.FailureConfig{Source: sim.NewIncidentList([]sim.Incident{{At: sim.Time(30 * sim.Second), Repair: 5 * sim.Second, GPU: -1, Nodes: []sim.NodeID{0}}})}
	pc := &sim.PowerConfig{Models: map[string]sim.GPUPower{"a100": {IdleW: 50, MaxW: 300}}}
	res := simtest.RunConfig(t, sim.Config{Cluster: testCluster(t, 2, 4), Jobs: jobs, Policy: fifo{}, Seed: 1, SampleInterval: 10 * sim.Second, Failures: fc, Power: pc})
	rows := JobRows(res)
	var csvb bytes.Buffer
	if err := WriteJobsCSV(&csvb, rows); err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(csvb.String(), "\n")
	if !strings.HasSuffix(head, ",interruptions,failure_lost_s,failure_lost_gpu_hours,energy_kwh,carbon_kg,peak_power_w") {
		t.Errorf("header %q", head)
	}
	back, err := ParseJobsCSV("jobs.csv", strings.NewReader(csvb.String()))
	if err != nil {
		t.Fatal(err)
	}
	if back[0].Fail == nil || back[0].Fail.Interruptions != 1 || back[0].Power == nil || back[0].Power.PeakPowerW != 1200 {
		t.Fatalf("parsed back fail %+v power %+v", back[0].Fail, back[0].Power)
	}
	if got := back[0].Power.EnergyKWh; got < 0.04333 || got > 0.04334 {
		t.Errorf("j1 energy %v kWh, want 130 s x 1200 W = 0.043333", got)
	}
	for name, pair := range map[string][2]func(io.Writer) error{
		"csv":     {func(w io.Writer) error { return writeJobsCSVOf(w, res) }, func(w io.Writer) error { return WriteJobsCSV(w, rows) }},
		"parquet": {func(w io.Writer) error { return writeJobsParquetOf(w, res) }, func(w io.Writer) error { return WriteJobsParquet(w, rows) }},
	} {
		if got, want := writeBytes(t, pair[0]), writeBytes(t, pair[1]); !bytes.Equal(got, want) {
			t.Errorf("%s: streaming writer differs", name)
		}
	}
	if _, err := ParseJobsCSV("x.csv", strings.NewReader(strings.Replace(csvb.String(), "energy_kwh", "energy", 1))); err == nil {
		t.Error("a header with an unknown extra column parsed")
	}
}
