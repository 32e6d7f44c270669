package scenarios

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/sim"
)

// metaScenario is Meta's Llama 3 405B setting (arXiv:2407.21783): one
// synchronous job on 16,384 H100s (2,048 DGX nodes) for 54 days, plus 64 hot
// spares, with the default (published) failure rates. The job is the light
// workload: the engine only moves it on each failure.
func metaScenario(t testing.TB, dir string, seed uint64, strategy string) *Scenario {
	t.Helper()
	trace := filepath.Join(dir, "meta.csv")
	if err := os.WriteFile(trace, []byte("id,submit_s,gpus,duration_s,replicas\nllama3-405b,0,8,4665600,2048\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	y := fmt.Sprintf(`apiVersion: gpusim/v1alpha1
kind: Scenario
name: meta
seed: %d
simulation: {horizon: 54d, sampleInterval: 0, checkpointInterval: 1h, checkpointRestoreCost: 10m}
cluster:
  pools:
    - {name: h100, template: dgx-h100, nodes: 2112}
workload:
  trace: {format: native, path: meta.csv}
failures:
  strategy: %s
  spares: 0.0303
policies:
  - name: fifo
`, seed, strategy)
	sc, err := Parse([]byte(y), filepath.Join(dir, "meta.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func runScenario(t testing.TB, sc *Scenario) []PolicyRun {
	t.Helper()
	runs, err := Run(context.Background(), sc, RunOptions{NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// TestFailureFidelityMeta: Meta reports 419 unexpected interruptions of the
// 16,384-GPU job in 54 days (Poisson ±2σ: 378..460). With the default rates
// (derived from that figure) the job's interruptions over 5 seeds must have a
// mean within 419 ± 2σ/√5 and each seed within ±3σ. Fault-tolerant recovery
// with spares keeps the job on 16,384 GPUs, as Meta's job was.
func TestFailureFidelityMeta(t *testing.T) {
	dir := t.TempDir()
	var xs []float64
	for seed := uint64(1); seed <= 5; seed++ {
		runs := runScenario(t, metaScenario(t, dir, seed, "fault-tolerant"))
		st := runs[0].Result.Failures
		n := float64(st.Interruptions)
		if math.Abs(n-419) > 3*math.Sqrt(419) {
			t.Errorf("seed %d: %v interruptions, want 419 ± %.0f", seed, n, 3*math.Sqrt(419))
		}
		if st.Fallbacks != 0 {
			t.Errorf("seed %d: %d fallbacks (spares ran out?)", seed, st.Fallbacks)
		}
		xs = append(xs, n)
	}
	var m, v float64
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	sd := math.Sqrt(v / float64(len(xs)-1))
	t.Logf("interruptions over 5 seeds: %v; mean %.1f ± %.1f (sd); Meta: 419", xs, m, sd)
	if math.Abs(m-419) > 2*math.Sqrt(419/5.0) {
		t.Errorf("mean %.1f, want 419 ± %.1f", m, 2*math.Sqrt(419/5.0))
	}
}

// TestFailureRecoveryMeta: on Meta's setting (seed 1, same incidents), full
// restarts lose work since the hourly checkpoint plus the 10 min restore per
// interruption; fault-tolerant recovery loses the 60 s rebuild.
func TestFailureRecoveryMeta(t *testing.T) {
	dir := t.TempDir()
	lost := map[string]float64{}
	for _, strategy := range []string{"restart", "fault-tolerant"} {
		r := runScenario(t, metaScenario(t, dir, 1, strategy))[0]
		f := r.Summary.Failures
		t.Logf("%s: interruptions %d, lost %.0f GPU-h, goodput %.4f", strategy, f.Interruptions, f.LostGPUHours, f.Goodput)
		lost[strategy] = f.LostGPUHours
		if strategy == "fault-tolerant" {
			// 430 interruptions x 60 s x 16,384 GPUs
			if want := float64(f.Interruptions) * 60 * 16384 / 3600; math.Abs(f.LostGPUHours-want) > 1 {
				t.Errorf("fault-tolerant lost %.1f GPU-h, want %.1f", f.LostGPUHours, want)
			}
		}
	}
	if !(lost["fault-tolerant"] < lost["restart"]/5) {
		t.Errorf("lost GPU-h: fault-tolerant %.0f, restart %.0f", lost["fault-tolerant"], lost["restart"])
	}
}

// TestFailureRecoveryLargeGangs: on a large-gang workload with the same
// incidents, fault-tolerant recovery loses fewer GPU-hours to failures than
// full restarts, and its goodput is higher.
func TestFailureRecoveryLargeGangs(t *testing.T) {
	sc, err := Load("examples/failures-recovery.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	runs := runScenario(t, sc)
	by := map[string]*sim.FailureStats{}
	for _, r := range runs {
		by[r.Label] = r.Result.Failures
		f := r.Summary.Failures
		t.Logf("%s: interruptions %d, lost %.0f GPU-h, goodput %.4f, recovered %d, fallbacks %d", r.Label, f.Interruptions, f.LostGPUHours, f.Goodput, f.Recovered, f.Fallbacks)
	}
	rs, ft := by["restart"], by["fault-tolerant"]
	if rs.Interruptions < 10 || ft.Interruptions < 10 {
		t.Fatalf("too few interruptions to compare: %d, %d", rs.Interruptions, ft.Interruptions)
	}
	if !(ft.LostGPUSeconds < rs.LostGPUSeconds/2) {
		t.Errorf("fault-tolerant lost %.0f GPU-s, restart %.0f: want under half", ft.LostGPUSeconds, rs.LostGPUSeconds)
	}
	if ft.Recovered == 0 {
		t.Errorf("no fault-tolerant recovery happened")
	}
}

// TestFailuresDeterministic: same seed, same bytes (jobs.csv with the failure
// columns, the failures block), whatever GOMAXPROCS; another seed differs.
func TestFailuresDeterministic(t *testing.T) {
	run := func(seed string) (string, string) {
		sc, err := Load("examples/failures-recovery.yaml", []string{"seed=" + seed, "policies[2].name=fifo"})
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if _, err := Run(context.Background(), sc, RunOptions{OutDir: dir, Parallel: 3}); err != nil {
			t.Fatal(err)
		}
		var jobs, fails bytes.Buffer
		for _, l := range []string{"restart", "fault-tolerant", "ft-young-daly"} {
			b, err := os.ReadFile(filepath.Join(dir, l, "jobs.csv"))
			if err != nil {
				t.Fatal(err)
			}
			jobs.Write(b)
			s, err := os.ReadFile(filepath.Join(dir, l, "summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			i := bytes.Index(s, []byte(`"failures"`))
			if i < 0 {
				t.Fatalf("%s: no failures block", l)
			}
			fails.Write(s[i:])
		}
		return jobs.String(), fails.String()
	}
	j1, f1 := run("7")
	old := runtime.GOMAXPROCS(1)
	j2, f2 := run("7")
	runtime.GOMAXPROCS(old)
	if j1 != j2 || f1 != f2 {
		t.Fatal("same seed, different outputs")
	}
	if !strings.Contains(strings.SplitN(j1, "\n", 2)[0], ",interruptions,failure_lost_s,failure_lost_gpu_hours") {
		t.Errorf("jobs.csv header lacks the failure columns")
	}
	if j3, _ := run("8"); j3 == j1 {
		t.Error("another seed gave identical outputs")
	}
}

func TestFailuresValidation(t *testing.T) {
	base := minimal + "failures: {}\n"
	mustErr(t, strings.Replace(base, "failures: {}", "failures: {strategy: magic}", 1), nil, `s.yaml:11: failures.strategy: unknown recovery strategy "magic"`)
	mustErr(t, strings.Replace(base, "failures: {}", "failures: {spares: 1.5}", 1), nil, "s.yaml:11: failures.spares: must be a fraction in [0, 1)")
	mustErr(t, strings.Replace(base, "failures: {}", "failures:\n  gpu: {distribution: weibull}", 1), nil, "s.yaml:12: failures.gpu.shape: a Weibull distribution needs shape > 0")
	mustErr(t, strings.Replace(base, "failures: {}", "failures:\n  gpu: {mtbf: 1h, repair: {mean: 0}}", 1), nil, "failures.gpu.repair.mean: must be > 0")
	mustErr(t, strings.Replace(base, "failures: {}", "failures:\n  correlated: [{name: pdu, mtbf: 10h}]", 1), nil, "failures.correlated[0].level: needs level")
	mustErr(t, strings.Replace(base, "failures: {}", "failures:\n  maintenance: {every: 0, nodes: 1, duration: 1h}", 1), nil, "failures.maintenance.every: must be > 0")
	mustErr(t, strings.Replace(base, "failures: {}", "failures: {optimizeCheckpoints: young-daly}", 1), nil, "failures.optimizeCheckpoints: young-daly needs simulation.checkpointSaveCost > 0")
	mustErr(t, strings.Replace(base, "name: fifo", "name: kueue", 1), nil, "s.yaml:10: policies[0].name: failures: are supported only with")
	mustErr(t, base+"interference: {default: 0.6}\n", nil, "failures: not supported with interference")
	mustErr(t, strings.Replace(minimal, "- name: fifo", "- name: fifo\n    recovery: {strategy: fault-tolerant}", 1), nil, "s.yaml:11: policies[0].recovery: needs a failures: block")
	mustErr(t, strings.Replace(base, "failures: {}", "failures: {bogus: 1}", 1), nil, "s.yaml:11: failures.bogus")
}

// TestFailureLog replays a log: node a-1 fails at 100 s for 50 s, GPU 3 of
// a-0 at 10 s; bad rows name file, line and column.
func TestFailureLog(t *testing.T) {
	c, err := sim.NewCluster([]sim.NodeSpec{{Name: "a-0", GPUModel: "H100", GPUs: 8}, {Name: "a-1", GPUModel: "H100", GPUs: 8, Leaf: 1}})
	if err != nil {
		t.Fatal(err)
	}
	inc, err := parseFailureLog("f.csv", strings.NewReader("time,target,duration\n100,a-1,50\n10,a-0/gpu3,5\n20,leaf:1,1\n"), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(inc) != 3 || inc[0].At != sim.Time(100*sim.Second) || inc[0].Nodes[0] != 1 || inc[0].Repair != 50*sim.Second || inc[1].GPU != 3 || len(inc[2].Nodes) != 1 || inc[2].Nodes[0] != 1 {
		t.Fatalf("incidents %+v", inc)
	}
	for _, tc := range []struct{ in, want string }{
		{"time,target\n", "f.csv:1: header: want time,target,duration"},
		{"time,target,duration\n-1,a-0,5\n", "f.csv:2: column time: want seconds >= 0"},
		{"time,target,duration\n1,a-9,5\n", `f.csv:2: column target: unknown node "a-9"`},
		{"time,target,duration\n1,a-0/gpu8,5\n", `f.csv:2: column target: no GPU "a-0/gpu8"`},
		{"time,target,duration\n1,a-0,0\n", "f.csv:2: column duration: want seconds > 0"},
	} {
		if _, err := parseFailureLog("f.csv", strings.NewReader(tc.in), c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.want)
		}
	}
}

// TestYoungDaly: δ = 60 s, M = 3.09 h (Meta's job-level MTBF) gives
// τ = sqrt(2·60·11,124) − 60 = 1,095.4 s → 1,095 s.
func TestYoungDaly(t *testing.T) {
	if got := YoungDaly(60*sim.Second, sim.Seconds(11124)); got != 1095*sim.Second {
		t.Errorf("τ = %v, want 1095 s", got)
	}
	// a 16,384-GPU job with the default rates has M = 1,296 h / 419 = 3.09 h
	sc, err := Parse([]byte(minimal+"simulation: {checkpointSaveCost: 60s}\nfailures: {optimizeCheckpoints: young-daly}\n"), "s.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	nodes, _ := sc.Nodes()
	c, _ := sim.NewCluster(nodes)
	fc, err := sc.FailureConfig(0, c)
	if err != nil {
		t.Fatal(err)
	}
	got := fc.CheckpointInterval(&sim.JobSpec{Replicas: 2048, GPUsPerReplica: 8, GPUMilli: 1000})
	if got < 1090*sim.Second || got > 1100*sim.Second {
		t.Errorf("Meta-size job τ = %v, want ≈ 1,095 s", got)
	}
}

// TestFailureLogReplay: random processes off, three logged incidents (one
// planned) and a maintenance window every 12 h replay exactly.
func TestFailureLogReplay(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "log.csv"), []byte("time,target,duration,planned\n3600,a-0,600,false\n7200,a-1/gpu2,60,false\n9000,a-1,60,true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	y := strings.Replace(minimal, "synthetic: {jobs: 50, load: 0.5}", "synthetic: {jobs: 200, load: 0.9}", 1) +
		"failures:\n  random: false\n  log: {path: log.csv}\n  maintenance: {start: 12h, every: 12h, nodes: 1, duration: 1h}\n"
	sc, err := Parse([]byte(y), filepath.Join(dir, "s.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	runs := runScenario(t, sc)
	st, end := runs[0].Result.Failures, runs[0].Result.End
	windows := int64(0)
	for at := 12 * sim.Hour; sim.Time(at) <= end; at += 12 * sim.Hour {
		windows++
	}
	if st.Incidents != 2 || st.PlannedIncidents != 1+windows {
		t.Errorf("incidents %d planned %d (end %v), want 2 and %d", st.Incidents, st.PlannedIncidents, end, 1+windows)
	}
	if st.Interruptions+st.PlannedInterrupt == 0 {
		t.Errorf("no job was interrupted at 90 %% load")
	}
}
