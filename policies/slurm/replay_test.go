package slurm

import (
	"math"
	"testing"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

// bestFitCPUs. f0 (8 GPUs, ends at 2) takes n0; f1 (4 GPUs, 8 CPUs) then
// takes n1 (n1 and n2 tie); x (4 GPUs, 16 CPUs) arrives at 5, when n0 and n2
// are empty and n1 has 4 GPUs and 8 CPUs in use. The three nodes form one
// run of consecutive usable nodes. With free, the node with the fewest free
// CPUs wins: n1. With job (select/cons_tres _allocate_sc: avail_cpus =
// tasks x cpus_per_task = 16 on each node), the three tie at 16 and
// _eval_nodes takes the first: n0.
func TestBestFitCPUs(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want sim.NodeID
	}{{"free", 1}, {"job", 0}, {"", 1}} {
		s := newSlurm(t, "schedulerParameters: {batch_sched_delay: 0}\nbestFitCPUs: "+tc.mode)
		res := Run(t, Nodes(3, 8), s,
			MakeJob("f0").GPUs(8).Dur(2).Wall(2).Obj(),
			MakeJob("f1").GPUs(4).CPU(8000).Dur(100).Wall(100).At(1).Obj(),
			MakeJob("x").GPUs(4).CPU(16000).Dur(10).Wall(10).At(5).Obj())
		if n := job(res, "f1").Nodes; len(n) != 1 || n[0] != 1 {
			t.Fatalf("%q: f1 on %v, want [1]\n%s", tc.mode, n, Schedule(res))
		}
		if n := job(res, "x").Nodes; len(n) != 1 || n[0] != tc.want {
			t.Errorf("%q: x on %v, want [%d]\n%s", tc.mode, n, tc.want, Schedule(res))
		}
	}
	if _, err := parseBestFitCPUs("most"); err == nil {
		t.Error(`bestFitCPUs "most": no error`)
	}
}

// bfReserved runs jobs and returns the will-run start of each backfill
// reservation made for job id, by the cycle's whole second.
func bfReserved(t *testing.T, params string, enforce bool, id string, jobs ...sim.JobSpec) map[int64]float64 {
	t.Helper()
	s := newSlurm(t, params)
	got := map[int64]float64{}
	s.onReserve = func(now sim.Time, j *sim.Job, start, _ sim.Time, _ []sim.NodeID) {
		if string(j.Spec.ID) == id {
			got[int64(math.Floor(now.Seconds()))] = start.Seconds()
		}
	}
	RunConfig(t, sim.Config{Cluster: Cluster(t, Nodes(1, 8)), Jobs: jobs, Policy: s, Seed: 1, EnforceWalltime: enforce})
	return got
}

// wholeSeconds. r starts at 0.6 s with a 100 s limit; c, which needs r's
// node, is tested by backfill at 1 s. The will-run test frees r at its
// end_time: start + limit = 100.6 s with exact times, 100 s with Slurm's
// whole-second start_time (time(NULL) = 0).
func TestWholeSecondsEndTime(t *testing.T) {
	for _, tc := range []struct {
		whole bool
		want  float64
	}{{false, 100.6}, {true, 100}} {
		params := "willRun: windows\nschedulerParameters: {batch_sched_delay: 0, bf_interval: 1s}\n"
		if tc.whole {
			params += "wholeSeconds: true\n"
		}
		got := bfReserved(t, params, true, "c",
			MakeJob("r").GPUs(8).Dur(50).Wall(100).At(0.6).Obj(),
			MakeJob("c").GPUs(8).Dur(10).Wall(100).At(0.8).Obj())
		if s, ok := got[1]; !ok || math.Abs(s-tc.want) > 1e-9 {
			t.Errorf("wholeSeconds %v: c reserved from %v at 1 s (have %v), want %v", tc.whole, s, ok, tc.want)
		}
	}
}

// killWait. r's limit ends at 10 s but it runs on (walltime not enforced,
// as slurmctld kills only every 30 s). At the cycle at 20 s the will-run
// test expects r to end KillWait after its limit (_guess_job_end), or just
// after now when that has passed: 10 + 30 = 40 s with the default, just
// after 20 s with KillWait=1 (Slurm: now + 1 s; see docs/fidelity.md).
func TestKillWait(t *testing.T) {
	for _, tc := range []struct {
		kw   string
		want float64
	}{{"", 40}, {"killWait: 1s\n", 20}} {
		got := bfReserved(t, "willRun: windows\nschedulerParameters: {bf_interval: 1s}\n"+tc.kw, false, "c",
			MakeJob("r").GPUs(8).Dur(100).Wall(10).Obj(),
			MakeJob("c").GPUs(8).Dur(10).Wall(100).At(1).Obj())
		if s, ok := got[20]; !ok || math.Abs(s-tc.want) > 1e-3 {
			t.Errorf("%q: c reserved from %v at 20 s (have %v), want %v", tc.kw, s, ok, tc.want)
		}
	}
	neg := policies.Dur(-sim.Second)
	if _, err := New(Params{KillWait: &neg}); err == nil {
		t.Error("killWait -1s: no error")
	}
}

// The replay hooks (replay.go). a holds the only node until 10 s; b waits.
// releaseAt keeps the node COMPLETING until 10.5 s. The main scheduler runs
// at the recorded passes only, backfill at the recorded cycles:
//   - passes 0, 10, 10.7 and cycles 10.2, 11.2: the pass at 10 finds the node
//     completing; the cycle at 10.2 would start b there but the node is
//     still completing, so b gets a reservation from 11 s (backfill.c: start
//     = now + 1); the pass at 10.7 starts it;
//   - passes 0, 10 and the same cycles: the cycle at 11.2 starts it;
//   - without releaseAt the pass at 10 starts it.
func TestReplayInstants(t *testing.T) {
	sec := func(x float64) sim.Time { return sim.Time(sim.Seconds(x)) }
	for _, tc := range []struct {
		name    string
		passes  []float64
		release bool
		want    float64
	}{
		{"pass after release", []float64{0, 10, 10.7}, true, 10.7},
		{"cycle after release", []float64{0, 10}, true, 11.2},
		{"no lag", []float64{0, 10}, false, 10},
	} {
		s := newSlurm(t, "willRun: windows\n")
		for _, p := range tc.passes {
			s.schedPasses = append(s.schedPasses, schedPass{at: sec(p)})
		}
		s.bfCycles = []sim.Time{sec(10.2), sec(11.2)}
		if tc.release {
			s.releaseAt = func(_ *sim.Job, _ sim.NodeID, end sim.Time) sim.Time { return end.Add(sim.Seconds(0.5)) }
		}
		var resv []float64
		s.onReserve = func(now sim.Time, j *sim.Job, start, _ sim.Time, _ []sim.NodeID) {
			if j.Spec.ID == "b" {
				resv = append(resv, now.Seconds(), start.Seconds())
			}
		}
		res := Run(t, Nodes(1, 8), s,
			MakeJob("a").GPUs(8).Dur(10).Wall(20).Obj(),
			MakeJob("b").GPUs(8).Dur(5).Wall(20).At(1).Obj())
		wantStarts(t, res, map[string]float64{"a": 0, "b": tc.want})
		if tc.release && (len(resv) != 2 || resv[0] != 10.2 || resv[1] != 11) {
			t.Errorf("%s: b's reservations (cycle, start) %v, want [10.2 11]", tc.name, resv)
		}
	}
}

// An advanced reservation holds the only node until 100 s; x (another
// user's) arrives at 1 on the otherwise idle cluster. The boundary at 100 s
// wakes the policy, but no pass is due then: the next backfill cycle (every
// 30 s from slurmctld's start) at 120 s starts x. Before, the wake-up for
// that cycle was dropped on the idle cluster and x never started (fidelity
// fixture reservation, replayed on the grid).
func TestReservationEndIdleCluster(t *testing.T) {
	res := Run(t, Nodes(1, 8), newSlurm(t, `
reservations: [{name: r, nodes: "n0", startTime: 0, endTime: 100, users: [alice]}]
schedulerParameters: {bf_interval: 30s}`),
		user(MakeJob("x").GPUs(8).Dur(10).Wall(10).At(1).Obj(), "bob"))
	wantStarts(t, res, map[string]float64{"x": 120})
}
