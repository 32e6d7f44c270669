package sim_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// runTel runs one 4 x 8-GPU gang (1,000 s of work) under fifo/first-fit on
// five 8-GPU nodes (it lands on nodes 0-3) with the given episodes.
func runTel(t *testing.T, cfg sim.Config, eps ...sim.Degradation) *sim.Result {
	t.Helper()
	pol, err := policies.New("fifo", nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Cluster = simtest.Cluster(t, simtest.Nodes(5, 8))
	cfg.Jobs = []sim.JobSpec{simtest.MakeJob("gang").GPUs(8).Replicas(4).Dur(1000).Obj()}
	cfg.Policy = pol
	cfg.Telemetry = &sim.TelemetryConfig{Source: sim.NewDegradationList(eps)}
	return simtest.RunConfig(t, cfg)
}

func ep(at, dur float64, n sim.NodeID, clock float64) sim.Degradation {
	return sim.Degradation{At: sim.Time(sim.Seconds(at)), Duration: sim.Seconds(dur), Node: n, Clock: clock}
}

func telNear(a, b float64) bool { return math.Abs(a-b) < 1e-6*math.Max(1, math.Abs(b)) }

// TestStragglerSlowsGang: node 2 runs at half clock over [200 s, 500 s). The
// whole gang runs at its slowest member's speed: 200 s of work by t=200, 150 s
// in the 300 s at half speed (350 by t=500), the last 650 s at full speed: it
// ends at 1,150 s instead of 1,000. Slowed GPU time 300 s x 32 GPUs = 9,600
// GPU-s, of which half (4,800 GPU-s) produced nothing. An episode on node 4
// (unused) changes nothing; overlapping episodes combine by the minimum.
func TestStragglerSlowsGang(t *testing.T) {
	for _, tc := range []struct {
		name                string
		eps                 []sim.Degradation
		end, slowed, lost   float64
		jobsSlowed, reseg   int64
		degradedNodeSeconds float64
	}{
		{"one", []sim.Degradation{ep(200, 300, 2, 0.5)}, 1150, 9600, 4800, 1, 2, 300},
		{"unused-node", []sim.Degradation{ep(200, 300, 4, 0.5)}, 1000, 0, 0, 0, 0, 300},
		// node 1 at 0.8 over [100, 400), node 3 at 0.5 over [200, 300):
		// 100 + 100x0.8 + 100x0.5 + 100x0.8 = 310 work by 400, 690 more -> 1,090
		{"overlap", []sim.Degradation{ep(100, 300, 1, 0.8), ep(200, 100, 3, 0.5)}, 1090, 300 * 32, 32 * (100*0.2 + 100*0.5 + 100*0.2), 1, 4, 400},
		// the same node twice: min(0.8, 0.5) in [200, 300)
		{"same-node", []sim.Degradation{ep(100, 300, 1, 0.8), ep(200, 100, 1, 0.5)}, 1090, 300 * 32, 32 * (100*0.2 + 100*0.5 + 100*0.2), 1, 4, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runTel(t, sim.Config{}, tc.eps...)
			j := &res.Jobs[0]
			if j.State != sim.StateCompleted || !telNear(j.End.Seconds(), tc.end) {
				t.Fatalf("state %s end %v, want completed at %v", j.State, j.End.Seconds(), tc.end)
			}
			st := res.Telemetry
			if !telNear(st.SlowedGPUSeconds, tc.slowed) || !telNear(st.LostGPUSeconds, tc.lost) || st.JobsSlowed != tc.jobsSlowed || st.Resegments != tc.reseg {
				t.Errorf("slowed %v lost %v jobs %d reseg %d, want %v %v %d %d", st.SlowedGPUSeconds, st.LostGPUSeconds, st.JobsSlowed, st.Resegments, tc.slowed, tc.lost, tc.jobsSlowed, tc.reseg)
			}
			if !telNear(st.DegradedNodeSeconds, tc.degradedNodeSeconds) || st.Episodes != int64(len(tc.eps)) {
				t.Errorf("degraded node-s %v episodes %d, want %v %d", st.DegradedNodeSeconds, st.Episodes, tc.degradedNodeSeconds, len(tc.eps))
			}
			if j.FirstStart != 0 || j.Wasted != 0 || j.Overhead != 0 {
				t.Errorf("first start %v wasted %v overhead %v, want 0 0 0", j.FirstStart, j.Wasted, j.Overhead)
			}
		})
	}
}

// TestStragglerCheckpointSave: checkpoints every 100 s of work take 10 s. The
// first save runs over [100, 110); node 2 halves its clock at 105, mid-save.
// The save still ends at 110 (its rest opens the new segment), then 900 s of
// work at half speed with 8 more saves: 110 + 1,800 + 80 = 1,990 s. Overhead:
// 9 saves = 90 s. Without the episode: 1,000 + 90 = 1,090 s.
func TestStragglerCheckpointSave(t *testing.T) {
	cfg := sim.Config{CheckpointInterval: sim.Seconds(100), CheckpointSave: sim.Seconds(10)}
	res := runTel(t, cfg)
	if e := res.Jobs[0].End.Seconds(); e != 1090 {
		t.Fatalf("no episode: end %v, want 1090", e)
	}
	res = runTel(t, cfg, ep(105, 1e6, 2, 0.5))
	j := &res.Jobs[0]
	if !telNear(j.End.Seconds(), 1990) || j.Overhead != sim.Seconds(90) || j.Wasted != sim.Seconds(90) {
		t.Fatalf("end %v overhead %v wasted %v, want 1990 90s 90s", j.End.Seconds(), j.Overhead, j.Wasted)
	}
	if st := res.Telemetry; !telNear(st.SlowedGPUSeconds, 1885*32) {
		t.Errorf("slowed %v GPU-s, want %v", st.SlowedGPUSeconds, 1885*32)
	}
}

// TestStragglerKeepsCheckpoint: a clock change cuts the run but saves no
// checkpoint. Checkpoints every 100 s (instant), restore 20 s. Node 2 halves at
// 150 s (work 150, checkpoint 100); node 2 fails at 230 s: work 190, the
// checkpoint is still 100, so 90 s of work at half speed (180 s) plus the
// restore are lost. The restart on nodes 0, 1, 3, 4 (all at full clock)
// restores 20 s and runs 900 s: ends at 1,150 s.
func TestStragglerKeepsCheckpoint(t *testing.T) {
	cfg := sim.Config{CheckpointInterval: sim.Seconds(100), CheckpointRestore: sim.Seconds(20),
		Failures: &sim.FailureConfig{Recovery: sim.RecoverRestart, Source: sim.NewIncidentList([]sim.Incident{
			{At: sim.Time(sim.Seconds(230)), Repair: sim.Hour, GPU: -1, Nodes: []sim.NodeID{2}, Cause: "test"}})}}
	res := runTel(t, cfg, ep(150, 1e6, 2, 0.5))
	j := &res.Jobs[0]
	if !telNear(j.End.Seconds(), 1150) {
		t.Fatalf("end %v, want 1150", j.End.Seconds())
	}
	if lost := res.Failures.JobLost[0].Seconds(); !telNear(lost, 200) {
		t.Errorf("lost %v s, want 200 (180 s of slowed work + 20 s restore)", lost)
	}
	if got := []sim.NodeID{0, 1, 3, 4}; !equalNodes(j.Nodes, got) {
		t.Errorf("restarted on %v, want %v", j.Nodes, got)
	}
}

func equalNodes(a, b []sim.NodeID) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestDegradationGeneratorDeterministic: the same seed draws the same
// episodes, another seed others; the rate matches the model.
func TestDegradationGeneratorDeterministic(t *testing.T) {
	m := sim.DegradationModel{Nodes: []sim.NodeID{0, 1, 2, 3}, Every: sim.Hour, Duration: sim.Dist{Kind: sim.DistExponential, Mean: 10 * sim.Minute}, ClockMin: 0.5, ClockMax: 0.9}
	draw := func(seed uint64) []sim.Degradation {
		g, err := sim.NewDegradationGenerator(seed, m)
		if err != nil {
			t.Fatal(err)
		}
		var out []sim.Degradation
		for d, ok := g.Next(); ok && d.At < sim.Time(1000*sim.Hour); d, ok = g.Next() {
			if d.Clock < 0.5 || d.Clock > 0.9 || d.Node < 0 || d.Node > 3 || d.Duration <= 0 {
				t.Fatalf("bad episode %+v", d)
			}
			out = append(out, d)
		}
		return out
	}
	a, b, c := draw(1), draw(1), draw(2)
	if len(a) != len(b) || len(a) == 0 {
		t.Fatalf("lengths %d %d", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("episode %d differs: %+v vs %+v", i, a[i], b[i])
		}
	}
	if len(c) > 0 && c[0] == a[0] {
		t.Errorf("seed 2 drew seed 1's first episode")
	}
	// 4 nodes x 1,000 h / 1 h = 4,000 expected (sd 63)
	if n := len(a); n < 3700 || n > 4300 {
		t.Errorf("%d episodes in 1,000 h, want about 4,000", n)
	}
	for _, bad := range []sim.DegradationModel{{Every: sim.Hour, ClockMin: 0.5, ClockMax: 1}, {Nodes: m.Nodes, ClockMin: 0.5, ClockMax: 1}, {Nodes: m.Nodes, Every: sim.Hour, ClockMin: 0.9, ClockMax: 0.5}} {
		if _, err := sim.NewDegradationGenerator(1, bad); err == nil {
			t.Errorf("model %+v accepted", bad)
		}
	}
}

// TestAvoidDegraded: node 0 runs at half clock over [0, 500 s). An 8-GPU job
// of 1,000 s arrives at 10 s. Plain fifo/first-fit puts it on node 0: 490 s
// at half speed (245 s of work), then 755 s: ends at 1,255 s. With
// avoidDegraded it goes to node 1 and ends at 1,010 s. With both nodes
// degraded it waits for the first to recover (500 s) and ends at 1,500 s:
// avoidance trades waiting for speed.
func TestAvoidDegraded(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params string
		eps    []sim.Degradation
		node   sim.NodeID
		start  float64
		end    float64
	}{
		{"plain", "{}", []sim.Degradation{ep(0, 500, 0, 0.5)}, 0, 10, 1255},
		{"avoid", "{avoidDegraded: true}", []sim.Degradation{ep(0, 500, 0, 0.5)}, 1, 10, 1010},
		{"avoid-all-degraded", "{avoidDegraded: true}", []sim.Degradation{ep(0, 500, 0, 0.5), ep(0, 600, 1, 0.5)}, 0, 500, 1500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol, err := policies.New("fifo", yamlNode(tc.params))
			if err != nil {
				t.Fatal(err)
			}
			cfg := sim.Config{
				Cluster:   simtest.Cluster(t, simtest.Nodes(2, 8)),
				Jobs:      []sim.JobSpec{simtest.MakeJob("j").GPUs(8).At(10).Dur(1000).Obj()},
				Policy:    pol,
				Telemetry: &sim.TelemetryConfig{Source: sim.NewDegradationList(tc.eps)},
			}
			res := simtest.RunConfig(t, cfg)
			j := &res.Jobs[0]
			if j.Nodes[0] != tc.node || !telNear(j.FirstStart.Seconds(), tc.start) || !telNear(j.End.Seconds(), tc.end) {
				t.Errorf("node %d start %v end %v, want %d %v %v", j.Nodes[0], j.FirstStart.Seconds(), j.End.Seconds(), tc.node, tc.start, tc.end)
			}
		})
	}
}

// TestECCHazard: 1,000 episodes of 500 s on one node whose node MTBF is
// 10,000 s, with ECC multiplier 21: an extra failure rate of 20/10,000 s, so
// each episode brings a failure with probability 1 − e^(−1) = 0.632: about
// 632 (sd 15) ECC failures, each interrupting the job running there. Without
// failure injection the coupling is off; multiplier 1 adds nothing.
func TestECCHazard(t *testing.T) {
	run := func(ecc float64, withFailures bool, seed uint64) *sim.Result {
		var eps []sim.Degradation
		for i := range 1000 {
			eps = append(eps, sim.Degradation{At: sim.Time(sim.Seconds(float64(1000 * i))), Duration: sim.Seconds(500), Node: 0, Clock: 0.9, ECC: ecc})
		}
		pol, err := policies.New("fifo", nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg := sim.Config{
			Cluster: simtest.Cluster(t, simtest.Nodes(1, 8)),
			Jobs:    []sim.JobSpec{simtest.MakeJob("long").GPUs(8).Dur(2e6).Obj()},
			Policy:  pol,
			Seed:    seed,
			Telemetry: &sim.TelemetryConfig{Source: sim.NewDegradationList(eps),
				ECC: &sim.ECCCoupling{NodeMTBF: []sim.Duration{sim.Seconds(10000)}, Repair: sim.Dist{Kind: sim.DistFixed, Mean: sim.Second}}},
		}
		if withFailures {
			cfg.Failures = &sim.FailureConfig{Recovery: sim.RecoverRestart, Source: sim.NewIncidentList(nil)}
		}
		res := simtest.RunConfig(t, cfg)
		return res
	}
	res := run(21, true, 1)
	n := res.Telemetry.ECCFailures
	if n < 632-60 || n > 632+60 {
		t.Errorf("%d ECC failures, want about 632", n)
	}
	if res.Failures.Incidents != n || res.Failures.Interruptions != n {
		t.Errorf("incidents %d interruptions %d, want %d each", res.Failures.Incidents, res.Failures.Interruptions, n)
	}
	if again := run(21, true, 1); again.Telemetry.ECCFailures != n || again.Jobs[0].End != res.Jobs[0].End {
		t.Errorf("not deterministic: %d vs %d failures", again.Telemetry.ECCFailures, n)
	}
	if other := run(21, true, 2); other.Telemetry.ECCFailures == n && other.Jobs[0].End == res.Jobs[0].End {
		t.Errorf("seed 2 drew the same failures as seed 1")
	}
	if r := run(1, true, 1); r.Telemetry.ECCFailures != 0 || r.Failures.Incidents != 0 {
		t.Errorf("multiplier 1: %d ECC failures", r.Telemetry.ECCFailures)
	}
	if r := run(21, false, 1); r.Telemetry.ECCFailures != 0 || r.Failures != nil {
		t.Errorf("without failures: %d ECC failures", r.Telemetry.ECCFailures)
	}
}

// TestStragglerLossProperty: random overlapping episodes on 12 nodes and 150
// random gangs, no checkpoints. A job at base speed 1 does f·dt work in dt, so
// its run wall time minus its duration is Σ (1 − f)·dt: summed × GPUs over
// the jobs it must equal LostGPUSeconds (up to the 1 µs rounding of each
// segment's end). Shuffling the episode list changes nothing.
func TestStragglerLossProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	var jobs []sim.JobSpec
	for i := range 150 {
		jobs = append(jobs, simtest.MakeJob(fmt.Sprintf("j%03d", i)).GPUs(int32(1+rng.IntN(8))).Replicas(int32(1+rng.IntN(3))).
			At(float64(rng.IntN(20000))).Dur(float64(100+rng.IntN(5000))).Obj())
	}
	var eps []sim.Degradation
	for range 300 {
		eps = append(eps, ep(float64(rng.IntN(60000)), float64(1+rng.IntN(3000)), sim.NodeID(rng.IntN(12)), 0.3+0.7*rng.Float64()))
	}
	run := func(eps []sim.Degradation) *sim.Result {
		pol, err := policies.New("easy-backfill", nil)
		if err != nil {
			t.Fatal(err)
		}
		e, err := sim.NewEngine(sim.Config{Cluster: simtest.Cluster(t, simtest.Nodes(12, 8)), Jobs: jobs, Policy: pol,
			Telemetry: &sim.TelemetryConfig{Source: sim.NewDegradationList(eps)}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := run(eps)
	var lost float64
	for i := range res.Jobs {
		j := &res.Jobs[i]
		if j.State != sim.StateCompleted {
			t.Fatalf("job %s %s", j.Spec.ID, j.State)
		}
		lost += (j.End.Sub(j.FirstStart) - j.Spec.Duration).Seconds() * float64(j.Spec.TotalGPUs())
	}
	st := res.Telemetry
	if st.Resegments < 50 || st.JobsSlowed < 20 {
		t.Fatalf("too few slowdowns to test: %+v", st)
	}
	if tol := float64(st.Resegments) * 24 * 1e-6; math.Abs(lost-st.LostGPUSeconds) > tol {
		t.Errorf("Σ GPUs × (wall − duration) = %v GPU-s, LostGPUSeconds %v (tolerance %v)", lost, st.LostGPUSeconds, tol)
	}
	rng.Shuffle(len(eps), func(a, b int) { eps[a], eps[b] = eps[b], eps[a] })
	again := run(eps)
	for i := range res.Jobs {
		if res.Jobs[i].End != again.Jobs[i].End || !slices.Equal(res.Jobs[i].Nodes, again.Jobs[i].Nodes) {
			t.Fatalf("job %s differs after shuffling the episodes", res.Jobs[i].Spec.ID)
		}
	}
}
