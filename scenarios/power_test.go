package scenarios

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/reports"
	"github.com/gpusim/gpusim/sim"
)

const caisoCSV = "data/carbon/CISO_2022_hourly.csv"

// The shipped CAISO series against its README's statistics: 8,760 hourly rows,
// mean 256.2, min 74.1, max 449.0 g/kWh over the non-blank rows; the three
// blank hours are filled with the mean of their neighbours.
func TestCarbonCSVCAISO(t *testing.T) {
	cs, err := LoadCarbonCSV(caisoCSV, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.Values) != 8760 || cs.Step != sim.Hour {
		t.Fatalf("%d values every %s, want 8760 every 1h", len(cs.Values), cs.Step)
	}
	blank := map[int]bool{106: true, 3282: true, 3930: true} // 2022-01-05 10:00, 05-17 18:00, 06-13 18:00
	sum, n, lo, hi := 0.0, 0, math.Inf(1), math.Inf(-1)
	for i, v := range cs.Values {
		if blank[i] {
			if want := (cs.Values[i-1] + cs.Values[i+1]) / 2; math.Abs(v-want) > 1e-9 {
				t.Errorf("blank hour %d = %v, want the neighbours' mean %v", i, v, want)
			}
			continue
		}
		sum += v
		n++
		lo, hi = min(lo, v), max(hi, v)
	}
	if m := sum / float64(n); math.Abs(m-256.2) > 0.05 || math.Abs(lo-74.1) > 0.05 || math.Abs(hi-449.0) > 0.05 {
		t.Errorf("mean %.2f min %.2f max %.2f, want 256.2, 74.1, 449.0", m, lo, hi)
	}
	// start shifts the series: t=0 reads 2022-06-01 00:00 (line 3626 of the file).
	jun, err := LoadCarbonCSV(caisoCSV, "avg_CI", "2022-06-01T00:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := jun.At(0), cs.Values[151*24]; got != want || want != 151.6337221909016 {
		t.Errorf("At(0) with start June 1 = %v, want %v (151.6337221909016)", got, want)
	}
	// The series is cyclic: a year later reads the first value again.
	if got := jun.At(sim.Time(8760 * sim.Hour)); got != jun.At(0) {
		t.Errorf("not cyclic: %v vs %v", got, jun.At(0))
	}
}

func TestCarbonCSVErrors(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct{ text, start, want string }{
		"header":  {"time,ci\n", "", ":1: header needs columns timestamp and avg_CI"},
		"stamp":   {"timestamp,avg_CI\n2022-01-01 00:00:00+00:00,1\n2022-01-01 0100,2\n", "", ":3: timestamp"},
		"value":   {"timestamp,avg_CI\n2022-01-01 00:00:00+00:00,1\n2022-01-01 01:00:00+00:00,1\n2022-01-01 02:00:00+00:00,-3\n", "", `:4: avg_CI: "-3" is not a number >= 0`},
		"spacing": {"timestamp,avg_CI\n2022-01-01 00:00:00+00:00,1\n2022-01-01 01:00:00+00:00,1\n2022-01-01 03:00:00+00:00,3\n", "", ":4: timestamp: 2022-01-01 03:00:00+00:00 is not 1h0m0s after"},
		"start":   {"timestamp,avg_CI\n2022-01-01 00:00:00+00:00,1\n2022-01-01 01:00:00+00:00,1\n", "2023-01-01T00:00:00Z", "start: 2023-01-01T00:00:00Z is not the time of a row"},
		"blank":   {"timestamp,avg_CI\n2022-01-01 00:00:00+00:00,\n2022-01-01 01:00:00+00:00,\n", "", "every value is blank"},
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, name+".csv")
			if err := os.WriteFile(p, []byte(c.text), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadCarbonCSV(p, "", c.start)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

const powerScenario = `apiVersion: gpusim/v1alpha1
kind: Scenario
name: p
cluster:
  pools:
    - {name: h100, template: dgx-h100, nodes: 1}
workload:
  synthetic: {jobs: 20, load: 0.5}
power:
  cap: {watts: %CAP%, mode: %MODE%}
  models:
    H100-SXM-80GB: {maxW: %MAX%}
policies:
  - name: %POL%
`

func powerDoc(cap, mode, max, pol string) string {
	return strings.NewReplacer("%CAP%", cap, "%MODE%", mode, "%MAX%", max, "%POL%", pol).Replace(powerScenario)
}

// Bad power fields are reported at file:line: field, every one of them.
func TestPowerScenarioErrors(t *testing.T) {
	wantParseErrors(t, powerDoc("-5", "slow", "-1", "tiresias"),
		"s.yaml:10: power.cap.watts: must be > 0",
		"s.yaml:10: power.cap.mode: must be admit or throttle",
		"s.yaml:12: power.models.H100-SXM-80GB.maxW: must be a finite value >= 0",
		"s.yaml:14: policies[0].name: tiresias does not check the power cap",
	)
	_, err := Parse([]byte(strings.Replace(powerDoc("1000", "admit", "700", "carbon-aware"), "  cap:", "  carbon: {path: nope.csv}\n  cap:", 1)), "s.yaml", nil)
	if err == nil || !strings.Contains(err.Error(), "s.yaml:10: power.carbon: open nope.csv") {
		t.Errorf("missing carbon file error: %v", err)
	}
	sc, err := Parse([]byte(powerDoc("100", "admit", "700", "fifo")), "s.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err = Run(context.Background(), sc, RunOptions{NoLog: true}); err == nil || !strings.Contains(err.Error(), "s.yaml:10: power.cap.watts: 100 W is below the cluster's idle draw (560 W)") {
		t.Errorf("cap below idle: %v", err)
	}
	_, err = Parse([]byte(powerDoc("1000", "admit", "700", "carbon-aware")), "s.yaml", nil)
	if err == nil || !strings.Contains(err.Error(), "s.yaml:14: policies[0].name: carbon-aware needs a carbon series") {
		t.Errorf("missing carbon-aware error: %v", err)
	}
}

// The acceptance measurement (docs/power.md): on the example scenario (CAISO
// from 2022-06-01, 2,000 synthetic jobs at 60% load on 128 H100s),
// carbon-aware emits less than fifo, for the jobs and for the whole cluster,
// at the price of a longer mean wait.
func TestCarbonAwareCutsEmissionsOnCAISO(t *testing.T) {
	sc, err := Load("examples/carbon-aware.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := Run(context.Background(), sc, RunOptions{NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]*PolicyRun{}
	for i := range runs {
		by[runs[i].Label] = &runs[i]
	}
	f, c := by["fifo"].Summary, by["carbon-aware"].Summary
	fj, cj := *f.Power.JobsCarbonKg, *c.Power.JobsCarbonKg
	t.Logf("jobs carbon: fifo %.1f kg, carbon-aware %.1f kg (%.1f%%); cluster %.1f vs %.1f kg; mean wait %.0f s vs %.0f s",
		fj, cj, 100*(cj-fj)/fj, *f.Power.CarbonKg, *c.Power.CarbonKg, f.WaitS.Mean, c.WaitS.Mean)
	if cj > 0.9*fj {
		t.Errorf("carbon-aware jobs emit %.1f kg, fifo %.1f: want a cut of at least 10%%", cj, fj)
	}
	if *c.Power.CarbonKg >= *f.Power.CarbonKg {
		t.Errorf("cluster carbon: carbon-aware %.1f kg >= fifo %.1f kg", *c.Power.CarbonKg, *f.Power.CarbonKg)
	}
	if f.Power.JobsEnergyKWh != c.Power.JobsEnergyKWh {
		t.Errorf("the same jobs at the same speed use the same energy: %v vs %v kWh", f.Power.JobsEnergyKWh, c.Power.JobsEnergyKWh)
	}
	if c.WaitS.Mean <= f.WaitS.Mean {
		t.Errorf("carbon-aware waits %.0f s, fifo %.0f s: holding jobs should cost wait", c.WaitS.Mean, f.WaitS.Mean)
	}
}

// With power on (carbon, a throttle cap, carbon-aware), the same scenario
// gives byte-identical outputs twice and under GOMAXPROCS=1, one policy at a
// time.
func TestPowerDeterminism(t *testing.T) {
	d := t.TempDir()
	sets := []string{"workload.synthetic.jobs=300", "power.cap.watts=40000", "power.cap.mode=throttle"}
	run := func(dir string, par int) {
		sc, err := Load("examples/carbon-aware.yaml", sets)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Run(context.Background(), sc, RunOptions{OutDir: dir, Parallel: par}); err != nil {
			t.Fatal(err)
		}
	}
	run(filepath.Join(d, "a"), 0)
	run(filepath.Join(d, "b"), 0)
	prev := runtime.GOMAXPROCS(1)
	run(filepath.Join(d, "c"), 1)
	runtime.GOMAXPROCS(prev)
	files := []string{"jobs.csv", "jobs.parquet", "events.parquet", "timeseries.parquet"}
	for _, pol := range []string{"fifo", "carbon-aware"} {
		sameFiles(t, filepath.Join(d, "a", pol), filepath.Join(d, "b", pol), files...)
		sameFiles(t, filepath.Join(d, "a", pol), filepath.Join(d, "c", pol), files...)
		b, err := os.ReadFile(filepath.Join(d, "a", pol, "jobs.csv"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b[:400]), ",energy_kwh,carbon_kg,peak_power_w\n") {
			t.Errorf("%s: jobs.csv header lacks the power columns: %s", pol, b[:400])
		}
	}
	// jobs.csv with power columns reads back.
	f, err := os.Open(filepath.Join(d, "a", "fifo", "jobs.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := reports.ParseJobsCSV("jobs.csv", f)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 300 || rows[0].Power == nil || !(rows[0].Power.EnergyKWh > 0) {
		t.Errorf("%d rows, first power %+v", len(rows), rows[0].Power)
	}
}
