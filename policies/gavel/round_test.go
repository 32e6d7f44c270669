package gavel

import (
	"strings"
	"testing"

	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
	"github.com/gpusim/gpusim/workloads"
)

// runHand runs cfg's jobs under a default Gavel on the hand-worked setting:
// one V100 and a throughput table giving jobs A and B 1 step/s each (the
// jobs' Workload names them); cfg's Cluster, Policy and Speed are set here.
func runHand(t *testing.T, cfg sim.Config) (*Gavel, *sim.Result) {
	t.Helper()
	tt, err := workloads.GavelThroughputTable("hand.json", strings.NewReader(`{"v100": {"('A', 1)": {"null": 1.0}, "('B', 1)": {"null": 1.0}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Cluster, err = sim.NewCluster([]sim.NodeSpec{{Name: "v0", GPUModel: "V100", GPUs: 1, CPUMilli: 1000, MemoryMiB: 1024, NVLinkDomain: -1}}); err != nil {
		t.Fatal(err)
	}
	g, err := New(Params{}, tt, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Policy, cfg.Speed, cfg.NoLog = g, &workloads.ThroughputSpeed{Table: tt, Reference: 0}, true
	return g, simtest.RunConfig(t, cfg)
}

// The round mechanism by hand: one V100, jobs A and B of 500 steps at 1 step/s,
// both at t = 0, min_total_duration (x = 1/2 each). Time received starts at half
// a round (180 s) per job.
//
//	round 1 (0-360):    priorities tie (0.5 / 0.5), A first by add order; A runs 360 steps.
//	round 2 (360-720):  fractions A 540/720, B 180/720: B's priority 2 > A's 2/3; B runs.
//	round 3 (720-860):  fractions tie again; A runs its last 140 steps and ends at 860.
//	round 4 (860-1000): A is gone; B runs its last 140 steps and ends at 1000.
//
// A is leased out at 360 and B at 720, each keeping all its work.
func TestRoundsByHand(t *testing.T) {
	job := func(id string) sim.JobSpec {
		return sim.JobSpec{ID: sim.JobID(id), Workload: id, Replicas: 1, GPUsPerReplica: 1, GPUMilli: sim.WholeGPU,
			Duration: 500 * sim.Second, Class: sim.ClassTraining}
	}
	g, res := runHand(t, sim.Config{Jobs: []sim.JobSpec{job("A"), job("B")}})
	a, b := &res.Jobs[0], &res.Jobs[1]
	if a.End.Seconds() != 860 || b.End.Seconds() != 1000 {
		t.Errorf("A ends at %v, B at %v; want 860 and 1000", a.End.Seconds(), b.End.Seconds())
	}
	if a.Preempted != 1 || b.Preempted != 1 || a.Wasted != 0 || b.Wasted != 0 {
		t.Errorf("preempted %d/%d wasted %s/%s, want 1/1 and no waste", a.Preempted, b.Preempted, a.Wasted, b.Wasted)
	}
	if g.Rounds != 4 {
		t.Errorf("%d rounds, want 4", g.Rounds)
	}
}

// A job whose lease is extended keeps running, so the engine has not brought its
// Done up to date; the policy counts its steps itself (Gavel's
// _total_steps_run). One V100; A has 500 steps at 1 step/s from t = 0, B 100
// steps from t = 400.
//
//	round 1 (0-360):   A alone, 360 steps.
//	round 2 (360-500): A keeps its GPU (lease extended) and runs its last 140
//	                   steps: the round ends when A does, at 500.
//	round 3 (500-600): B, which arrived mid-round, runs its 100 steps.
//
// Counting A's remaining work from the engine's stale Done (500 steps) would
// plan a full 360-s micro-task, hold the round to 720 and end B at 820.
func TestExtendedLeaseCountsSteps(t *testing.T) {
	jobs := []sim.JobSpec{
		{ID: "A", Workload: "A", Replicas: 1, GPUsPerReplica: 1, GPUMilli: sim.WholeGPU, Duration: 500 * sim.Second, Class: sim.ClassTraining},
		{ID: "B", Workload: "B", Replicas: 1, GPUsPerReplica: 1, GPUMilli: sim.WholeGPU, Duration: 100 * sim.Second, Class: sim.ClassTraining,
			Submit: sim.Time(400 * sim.Second)},
	}
	g, res := runHand(t, sim.Config{Jobs: jobs})
	a, b := &res.Jobs[0], &res.Jobs[1]
	if a.End.Seconds() != 500 || b.End.Seconds() != 600 {
		t.Errorf("A ends at %v, B at %v; want 500 and 600", a.End.Seconds(), b.End.Seconds())
	}
	if a.Preempted != 0 {
		t.Errorf("A preempted %d times; its lease should be extended", a.Preempted)
	}
	if g.Rounds != 3 {
		t.Errorf("%d rounds, want 3", g.Rounds)
	}
}

// Jobs that arrive together are added in natural ID order ("t-2" before
// "t-10"), Gavel's trace order.
func TestNaturalCompare(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"t-2", "t-10", -1}, {"t-10", "t-2", 1}, {"t-10", "t-10", 0}, {"a", "b", -1},
		{"t-7", "t-007", -1}, {"x9y", "x10", -1}, {"t-1a", "t-1", 1}, {"", "a", -1},
	} {
		if got := naturalCompare(c.a, c.b); got != c.want {
			t.Errorf("naturalCompare(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// A job the engine stops for good (its walltime, EnforceWalltime) leaves the
// policy at the round's end instead of being started again. One V100; A (500
// steps, walltime 300 s) and B (300 steps) at t = 0. Round 1: A runs and times
// out at 300 s; the round ends at A's planned end, 360 s. Round 2: B runs its
// 300 steps and ends at 660 s.
func TestTimedOutJobLeaves(t *testing.T) {
	jobs := []sim.JobSpec{
		{ID: "A", Workload: "A", Replicas: 1, GPUsPerReplica: 1, GPUMilli: sim.WholeGPU, Duration: 500 * sim.Second, Walltime: 300 * sim.Second, Class: sim.ClassTraining},
		{ID: "B", Workload: "B", Replicas: 1, GPUsPerReplica: 1, GPUMilli: sim.WholeGPU, Duration: 300 * sim.Second, Class: sim.ClassTraining},
	}
	_, res := runHand(t, sim.Config{Jobs: jobs, EnforceWalltime: true})
	a, b := &res.Jobs[0], &res.Jobs[1]
	if a.State != sim.StateTimeout || a.End.Seconds() != 300 {
		t.Errorf("A: %s at %v s, want timeout at 300", a.State, a.End.Seconds())
	}
	if b.State != sim.StateCompleted || b.End.Seconds() != 660 {
		t.Errorf("B: %s at %v s, want completed at 660", b.State, b.End.Seconds())
	}
}
