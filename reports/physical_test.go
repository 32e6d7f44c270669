package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// TestPhysicalCSV, hand-worked: 2 nodes x 4 GPUs (50 W idle, 300 W max),
// samples every 10 s, carbon 100 g/kWh on [0, 20) s and 400 on [20, 40) s,
// repeating. j1 (4 GPUs, 100 s) and j2 (4 GPUs, 10 s) start at 0: 8 x 50 +
// 8 x 250 = 2400 W. j2 ends at 10: 1400 W. Node 0 fails at 30 (repair 5 s):
// j1 restarts on node 1 at 30, still 1400 W, 4 GPUs down until 35, one
// incident and one interruption. j1 ends at 130: 400 W idle.
func TestPhysicalCSV(t *testing.T) {
	jobs := []sim.JobSpec{job("j1", 0, 100, 1, 4, sim.ClassTraining, "q1", "alice"), job("j2", 0, 10, 1, 4, sim.ClassTraining, "q1", "bob")}
	fc := &sim.FailureConfig{Source: sim.NewIncidentList([]sim.Incident{{At: sim.Time(30 * sim.Second), Repair: 5 * sim.Second, GPU: -1, Nodes: []sim.NodeID{0}}})}
	cs, err := sim.NewCarbonSeries(20*sim.Second, []float64{100, 400})
	if err != nil {
		t.Fatal(err)
	}
	pc := &sim.PowerConfig{Models: map[string]sim.GPUPower{"a100": {IdleW: 50, MaxW: 300}}, Carbon: cs}
	res := simtest.RunConfig(t, sim.Config{Cluster: testCluster(t, 2, 4), Jobs: jobs, Policy: fifo{}, Seed: 1, SampleInterval: 10 * sim.Second, Failures: fc, Power: pc})
	dir := t.TempDir()
	if err := WriteRunDir(dir, res, Summarize(res, Provenance{}, 0)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, PhysicalFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	want := map[int]string{
		0:  "time_s,power_w,carbon_g_per_kwh,emissions_kg_per_h,gpus_down,incidents,interruptions,planned_incidents,planned_interruptions",
		1:  "0,2400,100,0.24,0,0,0,0,0",
		2:  "10,1400,100,0.14,0,0,0,0,0",
		3:  "20,1400,400,0.56,0,0,0,0,0",
		4:  "30,1400,400,0.56,4,1,1,0,0",
		5:  "40,1400,100,0.14,0,1,1,0,0",
		14: "130,400,100,0.04,0,1,1,0,0",
	}
	for i, w := range want {
		if i >= len(lines) || lines[i] != w {
			t.Errorf("line %d = %q, want %q", i+1, lines[min(i, len(lines)-1)], w)
		}
	}
	run, err := ReadRunDir(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	ph := run.Physical
	if ph == nil || !ph.HasPower || !ph.HasCarbon || !ph.HasFailures || ph.Rows[3] != (PhysRow{TimeS: 30, PowerW: 1400, CarbonGPerKWh: 400, EmissionsKgPerH: 0.56, GPUsDown: 4, Incidents: 1, Interruptions: 1}) {
		t.Fatalf("read back %+v", ph)
	}
	rep, err := LoadReport([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range rep.Figures() {
		names[f.Name] = true
	}
	for _, n := range []string{"power", "carbon", "failures"} {
		if !names[n] {
			t.Errorf("no %s figure", n)
		}
	}
	if ts := binCounts("x", ph.Rows, 60); len(ts.Y) != 3 || ts.Y[0] != 1 || ts.Y[1] != 0 || ts.Y[2] != 0 {
		t.Errorf("interruptions per minute %v, want [1 0 0]", ts.Y)
	}
}

// TestPhysicalOff: a run without power or failures writes no physical.csv
// and its report draws none of the physical figures.
func TestPhysicalOff(t *testing.T) {
	res := simtest.RunConfig(t, sim.Config{Cluster: testCluster(t, 1, 2), Policy: fifo{}, SampleInterval: sim.Second,
		Jobs: []sim.JobSpec{job("a", 0, 10, 1, 2, sim.ClassTraining, "", "")}})
	dir := t.TempDir()
	if err := WriteRunDir(dir, res, Summarize(res, Provenance{}, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, PhysicalFile)); !os.IsNotExist(err) {
		t.Fatalf("physical.csv written without a physical model (%v)", err)
	}
	rep, err := LoadReport([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Figures() {
		if f.Name == "power" || f.Name == "carbon" || f.Name == "failures" {
			t.Errorf("figure %s without a physical model", f.Name)
		}
	}
}

func TestReadPhysicalCSVErrors(t *testing.T) {
	p := filepath.Join(t.TempDir(), PhysicalFile)
	head := strings.Join(PhysicalColumns, ",") + "\n"
	for body, want := range map[string]string{
		head + "0,x,,,,,,,\n":                        "physical.csv:2: power_w:",
		head + ",1,,,,,,,\n":                         "physical.csv:2: time_s: empty",
		"time,power_w\n":                             "wrong number of fields",
		strings.Replace(head, "power_w", "watts", 1): `physical.csv:1: column 2: want "power_w", got "watts"`,
	} {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadPhysicalCSV(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want %q", body, err, want)
		}
	}
}
