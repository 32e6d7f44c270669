package scenarios

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gpusim/gpusim/calibrate"
	"github.com/gpusim/gpusim/sim"
)

// The real idle H100 file: 5 samples at 345 MHz with reason gpu_idle. A naive
// clock ratio would call that a 0.17 straggler; an idle clock is not a
// slowdown, so the replay yields no episode.
func TestTelemetryReplayIdleH100(t *testing.T) {
	rows, err := ReadTelemetryParquet("testdata/telemetry-idle.parquet")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 5 || rows[0].SMClockMHz != 345 || rows[0].ThrottleReasons != 1 || rows[0].ECCUncorrected != 0 {
		t.Fatalf("rows %+v", rows)
	}
	if eps := TelemetryEpisodes(rows, 3, 0, 1980, 0); len(eps) != 0 {
		t.Errorf("idle file gave episodes %+v", eps)
	}
}

// Hand-worked samples of two GPUs every second: GPU 1 thermally throttled at
// 990 MHz (0.5 of 1,980) at t=1, 2; GPU 0 hw_slowdown at 1,485 MHz (0.75) at
// t=2 and 1,782 MHz (0.9) at t=4; sw_power_cap at t=3 is normal operation.
// The node: 0.5 over [1, 3), 0.9 over [4, 5) (the last sample holds one step).
func TestTelemetryEpisodesHandWorked(t *testing.T) {
	row := func(s, g int, mhz float64, why int64) TelemetryRow {
		return TelemetryRow{TimeUS: 1e12 + int64(s)*1e6, GPU: int32(g), SMClockMHz: mhz, ThrottleReasons: why}
	}
	rows := []TelemetryRow{row(0, 0, 1980, 0), row(0, 1, 1980, 0), row(1, 0, 1980, 0), row(1, 1, 990, 64),
		row(2, 0, 1485, 8), row(2, 1, 990, 64), row(3, 0, 1000, 4), row(3, 1, 1980, 0), row(4, 0, 1782, 8), row(4, 1, 1980, 0)}
	got := TelemetryEpisodes(rows, 7, sim.Time(sim.Hour), 1980, 0)
	want := []sim.Degradation{
		{At: sim.Time(sim.Hour + sim.Second), Duration: 2 * sim.Second, Node: 7, Clock: 0.5},
		{At: sim.Time(sim.Hour + 4*sim.Second), Duration: sim.Second, Node: 7, Clock: 0.9},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("episode %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

const telScenario = `apiVersion: gpusim/v1alpha1
kind: Scenario
name: tel
seed: 1
cluster:
  pools:
    - {name: h100, template: dgx-h100, nodes: 2}
workload:
  trace: {format: native, path: jobs.csv}
telemetry:
%TEL%
policies:
  - name: fifo
`

// A replayed file slows the node the gang runs on: one 8-GPU job of 1,000 s on
// h100-0; the file (at t=100 s) holds h100-0's GPU 3 at half clock for 200 s:
// the job ends at 1,100 s, 800 GPU-s lost.
func TestTelemetryReplayRun(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "jobs.csv"), []byte("id,submit_s,gpus,duration_s\nj,0,8,1000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "tel.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	var rows []calibrate.SampleRow
	for s := range 4 { // samples at 0, 100, 200, 300 s
		for g := range 8 {
			smp := calibrate.Sample{Time: t0.Add(time.Duration(s) * 100 * time.Second), GPU: g, SMClockMHz: 1980, ECCUncorrected: -1, ECCCorrected: -1}
			if g == 3 && (s == 0 || s == 1) {
				smp.SMClockMHz, smp.ThrottleReasons = 990, 64
			}
			rows = append(rows, calibrate.SampleRow{Sample: smp})
		}
	}
	if err := calibrate.WriteSamplesParquet(f, rows, false); err != nil {
		t.Fatal(err)
	}
	f.Close()
	y := strings.Replace(telScenario, "%TEL%", "  replay:\n    - {path: tel.parquet, node: h100-0, at: 100s, maxClockMHz: 1980}", 1)
	sc, err := Parse([]byte(y), filepath.Join(dir, "s.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	runs := runScenario(t, sc)
	res := runs[0].Result
	if e := res.Jobs[0].End.Seconds(); math.Abs(e-1100) > 1e-6 {
		t.Errorf("end %v, want 1100", e)
	}
	if st := res.Telemetry; st.Episodes != 1 || math.Abs(st.LostGPUSeconds-800) > 1e-6 || st.JobsSlowed != 1 {
		t.Errorf("telemetry %+v", st)
	}
}

// Bad telemetry fields are reported at file:line: field.
func TestTelemetryScenarioErrors(t *testing.T) {
	y := strings.Replace(telScenario, "%TEL%", "  model: {every: 0s, clock: {min: 0, max: 2}}\n  replay:\n    - {node: h100-0, maxClockMHz: -1}", 1)
	wantParseErrors(t, y,
		"s.yaml:11: telemetry.model.every: must be > 0",
		"s.yaml:11: telemetry.model.clock.min: must be in (0, 1]",
		"s.yaml:11: telemetry.model.clock.max: must be in [min, 1]",
		"s.yaml:13: telemetry.replay[0].path: required",
		"s.yaml:13: telemetry.replay[0].maxClockMHz: must be > 0",
	)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "jobs.csv"), []byte("id,submit_s,gpus,duration_s\nj,0,8,1000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ tel, want string }{
		{"  replay:\n    - {path: testdata-none.parquet, node: h100-0, maxClockMHz: 1980}", "s.yaml:12: telemetry.replay[0].path: open "},
		{"  replay:\n    - {path: jobs.csv, node: nope, maxClockMHz: 1980}", "s.yaml:12: telemetry.replay[0].node: no node named \"nope\""},
	} {
		sc, err := Parse([]byte(strings.Replace(telScenario, "%TEL%", tc.tel, 1)), filepath.Join(dir, "s.yaml"), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Run(context.Background(), sc, RunOptions{NoLog: true})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

// Same scenario and seed: byte-identical outputs, whatever GOMAXPROCS; the
// summary has the telemetry block; avoidance cuts the lost GPU time.
func TestTelemetryDeterminismAndAvoidance(t *testing.T) {
	d := t.TempDir()
	run := func(dir string, par int) []PolicyRun {
		sc, err := Load("examples/telemetry-stragglers.yaml", nil)
		if err != nil {
			t.Fatal(err)
		}
		runs, err := Run(context.Background(), sc, RunOptions{OutDir: dir, Parallel: par})
		if err != nil {
			t.Fatal(err)
		}
		return runs
	}
	runs := run(filepath.Join(d, "a"), 0)
	run(filepath.Join(d, "b"), 0)
	prev := runtime.GOMAXPROCS(1)
	run(filepath.Join(d, "c"), 1)
	runtime.GOMAXPROCS(prev)
	files := []string{"jobs.csv", "jobs.parquet", "events.parquet", "timeseries.parquet"}
	for _, pol := range []string{"plain", "avoid-degraded"} {
		sameFiles(t, filepath.Join(d, "a", pol), filepath.Join(d, "b", pol), files...)
		sameFiles(t, filepath.Join(d, "a", pol), filepath.Join(d, "c", pol), files...)
		b, err := os.ReadFile(filepath.Join(d, "a", pol, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"telemetry": {`) {
			t.Errorf("%s: summary.json lacks the telemetry block", pol)
		}
	}
	plain, avoid := runs[0].Result.Telemetry, runs[1].Result.Telemetry
	if plain.Episodes == 0 || plain.Episodes != avoid.Episodes {
		t.Errorf("episodes %d vs %d: both runs must see the same episodes", plain.Episodes, avoid.Episodes)
	}
	if !(avoid.LostGPUSeconds < 0.5*plain.LostGPUSeconds) || !(avoid.JobsSlowed < plain.JobsSlowed) {
		t.Errorf("avoidance: lost %v vs %v GPU-s, jobs slowed %d vs %d", avoid.LostGPUSeconds, plain.LostGPUSeconds, avoid.JobsSlowed, plain.JobsSlowed)
	}
}

// ECC in a replay: GPU 0's uncorrected count goes 0, 0, 2, 2 at t = 0..3 s
// while GPU 1 is throttled to 0.5 over [1, 3): the interval after the rise,
// [2, 3), carries the multiplier; [3, 4) has neither slowdown nor a new error.
func TestTelemetryEpisodesECC(t *testing.T) {
	row := func(s, g int, mhz float64, why, ecc int64) TelemetryRow {
		return TelemetryRow{TimeUS: int64(s) * 1e6, GPU: int32(g), SMClockMHz: mhz, ThrottleReasons: why, ECCUncorrected: ecc}
	}
	rows := []TelemetryRow{row(0, 0, 1980, 0, 0), row(0, 1, 1980, 0, -1), row(1, 0, 1980, 0, 0), row(1, 1, 990, 64, -1),
		row(2, 0, 1980, 0, 2), row(2, 1, 990, 64, -1), row(3, 0, 1980, 0, 2), row(3, 1, 1980, 0, -1)}
	got := TelemetryEpisodes(rows, 0, 0, 1980, 5)
	want := []sim.Degradation{
		{At: sim.Time(sim.Second), Duration: sim.Second, Node: 0, Clock: 0.5},
		{At: sim.Time(2 * sim.Second), Duration: sim.Second, Node: 0, Clock: 0.5, ECC: 5},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got := TelemetryEpisodes(rows, 0, 0, 1980, 0); len(got) != 1 || got[0].Duration != 2*sim.Second {
		t.Errorf("without eccHazard: %+v, want one 2 s episode", got)
	}
	_, err := Parse([]byte(strings.Replace(telScenario, "%TEL%", "  model: {every: 10h, clock: {min: 0.5, max: 1}, eccHazard: 3}", 1)), "s.yaml", nil)
	if err == nil || !strings.Contains(err.Error(), "s.yaml:11: telemetry.model.eccHazard: multiplies the node failure hazard: needs a failures: block") {
		t.Errorf("eccHazard without failures: %v", err)
	}
	_, err = Parse([]byte(strings.Replace(strings.Replace(telScenario, "%TEL%", "  model: {every: 10h, clock: {min: 0.5, max: 1}}", 1), "name: fifo", "name: tiresias", 1)), "s.yaml", nil)
	if err == nil || !strings.Contains(err.Error(), "s.yaml:13: policies[0].name: telemetry: is supported only with fifo, sjf, priority, easy-backfill, conservative-backfill") {
		t.Errorf("tiresias: %v", err)
	}
	_, err = Parse([]byte(strings.Replace(telScenario, "%TEL%", "  model: {every: 10h, clock: {min: 0.5, max: 1}, eccHazard: 0.5}", 1)), "s.yaml", nil)
	if err == nil || !strings.Contains(err.Error(), "s.yaml:11: telemetry.model.eccHazard: must be a finite multiplier >= 1") {
		t.Errorf("eccHazard 0.5: %v", err)
	}
}

// Scenario wiring of the ECC coupling: failures.node's MTBF (1,000 h) and
// repair feed it; episodes every 10 h per node of 5 h at ECC x 200 add node
// failures (a rate of 199/1,000 h while degraded, p = 1 − e^(−0.995) per
// episode) during a 200 h job on both nodes (checkpoints every hour).
func TestTelemetryECCScenario(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "jobs.csv"), []byte("id,submit_s,gpus,duration_s,replicas\nj,0,8,720000,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	y := strings.Replace(telScenario, "%TEL%", "  model: {every: 10h, duration: {distribution: fixed, mean: 5h}, clock: {min: 0.9, max: 0.9}, eccHazard: 200}\nfailures: {strategy: restart, gpu: {enabled: false}, node: {mtbf: 1000h, repair: {distribution: fixed, mean: 1h}}}", 1)
	y = strings.Replace(y, "seed: 1\n", "seed: 1\nsimulation: {checkpointInterval: 1h, horizon: 5000h}\n", 1)
	sc, err := Parse([]byte(y), filepath.Join(dir, "s.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	res := runScenario(t, sc)[0].Result
	st := res.Telemetry
	if st.ECCFailures == 0 || res.Failures.Incidents < st.ECCFailures {
		t.Fatalf("ECC failures %d, incidents %d", st.ECCFailures, res.Failures.Incidents)
	}
	// about 0.63 of the episodes (minus those on a node already down)
	if r := float64(st.ECCFailures) / float64(st.Episodes); r < 0.4 || r > 0.75 {
		t.Errorf("%d ECC failures in %d episodes (%.2f), want about 0.6", st.ECCFailures, st.Episodes, r)
	}
}
