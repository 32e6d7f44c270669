package federation_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/gpusim/gpusim/federation"
	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

func sec(s float64) sim.Time { return sim.Time(sim.Seconds(s)) }

// member is a cluster of nodes x gpus GPUs (simtest.Nodes) run by policy pol.
func member(t *testing.T, name string, nodes int, gpus int32, pol string, wan float64) federation.Member {
	t.Helper()
	p, err := policies.New(pol, nil)
	if err != nil {
		t.Fatal(err)
	}
	ns := simtest.Nodes(nodes, gpus)
	for i := range ns {
		ns[i].Name = fmt.Sprintf("%s-%d", name, i)
	}
	return federation.Member{Name: name, WAN: sim.Seconds(wan),
		Config: sim.Config{Cluster: simtest.Cluster(t, ns), Policy: p, Seed: 1, EnforceWalltime: true}}
}

func run(t *testing.T, ms []federation.Member, st federation.Strategy, jobs ...sim.JobSpec) *federation.Result {
	t.Helper()
	res, err := federation.Run(context.Background(), ms, jobs, st)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// where returns, for job id, the cluster it ran in (-1: none) and its start
// and end there; it fails the test if the job has GPUs or starts in two
// clusters.
func where(t *testing.T, res *federation.Result, id sim.JobID) (int, sim.Time, sim.Time) {
	t.Helper()
	at, start, end := -1, sim.Never, sim.Never
	for c, r := range res.Clusters {
		for i := range r.Jobs {
			j := &r.Jobs[i]
			if j.Spec.ID != id || j.FirstStart == sim.Never {
				continue
			}
			if at >= 0 {
				t.Fatalf("job %s ran in clusters %d and %d", id, at, c)
			}
			at, start, end = c, j.FirstStart, j.End
		}
	}
	return at, start, end
}

// TestGangNeverSplit is the hand-worked case of docs/federation.md: clusters A
// and B of 2 nodes x 4 GPUs (WAN 5 s and 20 s), dispatcher most-free, FIFO in
// each.
//
//	t=0  a (4 GPUs, 100 s): room A 8, B 8 -> A (tie: listed order); arrives 5,
//	     runs 5-105.
//	t=0  b (4 GPUs, 100 s): room A 8-4 in flight = 4, B 8 -> B; arrives 20,
//	     runs 20-120.
//	t=10 g (gang 2 x 4 GPUs, 50 s): room A 8-4 running = 4, B 8-4 in flight = 4:
//	     8 GPUs are free across the federation but no cluster has 8, so no
//	     cluster has room; most-free tie -> A, queued. It arrives at 15 and
//	     starts whole in A when a ends: 105-155. It never holds a GPU in B.
//	t=10 h (16 GPUs): fits no cluster -> rejected.
func TestGangNeverSplit(t *testing.T) {
	ms := []federation.Member{member(t, "A", 2, 4, "fifo", 5), member(t, "B", 2, 4, "fifo", 20)}
	res := run(t, ms, federation.MostFree,
		simtest.MakeJob("a").GPUs(4).Dur(100).At(0).Obj(),
		simtest.MakeJob("b").GPUs(4).Dur(100).At(0).Obj(),
		simtest.MakeJob("g").GPUs(4).Replicas(2).Dur(50).At(10).Obj(),
		simtest.MakeJob("h").GPUs(8).Replicas(2).Dur(50).At(10).Obj(),
	)
	want := []federation.Decision{
		{Job: "a", Submit: 0, GPUs: 4, Cluster: 0, Arrive: sec(5), Why: federation.WhyRoom, Feasible: 2, Room: 2},
		{Job: "b", Submit: 0, GPUs: 4, Cluster: 1, Arrive: sec(20), Why: federation.WhyRoom, Feasible: 2, Room: 2},
		{Job: "g", Submit: sec(10), GPUs: 8, Cluster: 0, Arrive: sec(15), Why: federation.WhyQueued, Feasible: 2, Room: 0},
		{Job: "h", Submit: sec(10), GPUs: 16, Cluster: -1, Arrive: sim.Never, Why: federation.WhyRejected},
	}
	if !reflect.DeepEqual(res.Decisions, want) {
		t.Fatalf("decisions:\n got %+v\nwant %+v", res.Decisions, want)
	}
	for _, c := range []struct {
		id         sim.JobID
		at         int
		start, end float64
	}{{"a", 0, 5, 105}, {"b", 1, 20, 120}, {"g", 0, 105, 155}, {"h", -1, -1, -1}} {
		at, s, e := where(t, res, c.id)
		if at != c.at || at >= 0 && (s != sec(c.start) || e != sec(c.end)) {
			t.Errorf("job %s: cluster %d %v-%v, want %d %gs-%gs", c.id, at, s, e, c.at, c.start, c.end)
		}
	}
	// g's 8 GPUs are all in A, on A's nodes, and g is not a job of B at all.
	a := res.Clusters[0]
	for i := range a.Jobs {
		j := &a.Jobs[i]
		if j.Spec.ID != "g" {
			continue
		}
		if len(j.GPUs) != 8 {
			t.Errorf("g ran on %d GPUs of A, want all 8", len(j.GPUs))
		}
		for _, n := range j.Nodes {
			if name := a.Cluster.Node(n).Name; name[0] != 'A' {
				t.Errorf("g ran on node %s", name)
			}
		}
	}
	for i := range res.Clusters[1].Jobs {
		if res.Clusters[1].Jobs[i].Spec.ID == "g" {
			t.Errorf("g is a job of cluster B")
		}
	}
	var starts int
	for _, r := range res.Clusters {
		for _, ev := range r.Log {
			if ev.Kind == sim.EvStart && r.Jobs[ev.Job].Spec.ID == "g" {
				starts++
			}
		}
	}
	if starts != 1 {
		t.Errorf("g started %d times across the federation, want 1", starts)
	}
}

// TestStrategies: each rule picks as documented. A: cost 3, intensity 500;
// B: cost 1, intensity 100 until 1 h then 900 (series); C: cost 2, 300.
// Clusters of 1 x 8 GPUs; one 2-GPU job at t=0 and one at t=2h.
func TestStrategies(t *testing.T) {
	cs, err := sim.NewCarbonSeries(sim.Hour, []float64{100, 900, 900})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		st   federation.Strategy
		want [2]int
	}{
		{federation.FirstFit, [2]int{0, 0}},
		{federation.Cheapest, [2]int{1, 1}},
		{federation.LowestCarbon, [2]int{1, 2}},
		{federation.MostFree, [2]int{0, 1}}, // t=2h: x still runs in A (room 6); B and C have 8 -> B
	} {
		t.Run(string(c.st), func(t *testing.T) {
			ms := []federation.Member{member(t, "A", 1, 8, "fifo", 0), member(t, "B", 1, 8, "fifo", 0), member(t, "C", 1, 8, "fifo", 0)}
			ms[0].CostPerGPUHour, ms[0].CarbonIntensity = 3, 500
			ms[1].CostPerGPUHour, ms[1].Carbon = 1, cs
			ms[2].CostPerGPUHour, ms[2].CarbonIntensity = 2, 300
			res := run(t, ms, c.st,
				simtest.MakeJob("x").GPUs(2).Dur(3*3600).At(0).Obj(),
				simtest.MakeJob("y").GPUs(2).Dur(100).At(2*3600).Obj())
			got := [2]int{res.Decisions[0].Cluster, res.Decisions[1].Cluster}
			if got != c.want {
				t.Fatalf("clusters %v, want %v", got, c.want)
			}
		})
	}
}

// TestDeterministic: input order does not change any outcome.
func TestDeterministic(t *testing.T) {
	var jobs []sim.JobSpec
	for i := range 60 {
		jobs = append(jobs, simtest.MakeJob(fmt.Sprintf("j%02d", i)).GPUs(int32(1<<(i%4))).Replicas(int32(1+i%2)).Dur(float64(50+31*(i%9))).At(float64(7*(i/3))).Obj())
	}
	mk := func() []federation.Member {
		return []federation.Member{member(t, "A", 2, 8, "easy-backfill", 3), member(t, "B", 1, 8, "fifo", 1), member(t, "C", 3, 4, "sjf", 9)}
	}
	base := run(t, mk(), federation.MostFree, jobs...)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3 {
		sh := append([]sim.JobSpec(nil), jobs...)
		rng.Shuffle(len(sh), func(i, j int) { sh[i], sh[j] = sh[j], sh[i] })
		got := run(t, mk(), federation.MostFree, sh...)
		if !reflect.DeepEqual(got.Decisions, base.Decisions) {
			t.Fatal("decisions depend on input order")
		}
		for c := range base.Clusters {
			if simtest.Schedule(got.Clusters[c]) != simtest.Schedule(base.Clusters[c]) {
				t.Fatalf("cluster %d's schedule depends on input order", c)
			}
		}
	}
	n := 0
	for _, r := range base.Clusters {
		n += len(r.Jobs)
	}
	if n != len(jobs) {
		t.Fatalf("%d jobs across clusters, want %d (each in exactly one)", n, len(jobs))
	}
}
