package sim_test

import (
	"context"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

// gpuAudit wraps a policy and, at every scheduling point, checks that the GPUs
// the cluster has charged equal the GPUs the running jobs requested
// (JobSpec.TotalGPUs, unequal gangs included), GPU by GPU, and records each
// job's placement the first time it is seen running.
type gpuAudit struct {
	sim.Policy
	fail   func(format string, args ...any)
	placed map[string]string
}

func (a *gpuAudit) Schedule(v *sim.View, p *sim.Plan) error {
	cl := v.Cluster()
	used := make([]sim.MilliGPU, cl.NumGPUs())
	var want int64
	for _, j := range v.Running() {
		s := &j.Spec
		if len(j.Nodes) != int(s.Replicas) || len(j.GPUs) != int(s.TotalGPUs()) {
			a.fail("job %s runs with %d nodes and %d GPUs, asked %d replicas and %d GPUs", s.ID, len(j.Nodes), len(j.GPUs), s.Replicas, s.TotalGPUs())
		}
		g := int(s.GPUsPerReplica)
		for r, n := range j.Nodes {
			gs := sim.ReplicaSlice(j.GPUs, r, g)
			if len(gs) != int(s.ReplicaGPUs(r)) {
				a.fail("job %s replica %d has %d GPUs, wants %d", s.ID, r, len(gs), s.ReplicaGPUs(r))
			}
			for _, gpu := range gs {
				if cl.GPUNode(gpu) != n {
					a.fail("job %s replica %d: GPU %d is not on node %d", s.ID, r, gpu, n)
				}
				used[gpu] += s.GPUMilli
			}
		}
		want += int64(s.TotalGPUs())
	}
	var charged int64
	for g := range used {
		if used[g] != cl.GPUUsed(sim.GPUID(g)) {
			a.fail("GPU %d: engine says %d milli used, running jobs %d", g, cl.GPUUsed(sim.GPUID(g)), used[g])
		}
		if cl.GPUUsed(sim.GPUID(g)) != 0 {
			charged++
		}
	}
	if charged != want || int64(cl.NumGPUs())-cl.FreeGPUs() != want {
		a.fail("t=%s: %d GPUs charged (%d not free), running jobs requested %d", v.Now(), charged, int64(cl.NumGPUs())-cl.FreeGPUs(), want)
	}
	return a.Policy.Schedule(v, p)
}

func (a *gpuAudit) Observe(v *sim.View, e sim.Event) {
	if j := v.Job(e.Job); e.Kind == sim.EvStart && a.placed != nil {
		if _, ok := a.placed[string(j.Spec.ID)]; !ok {
			a.placed[string(j.Spec.ID)] = sim.PlacementString(v.Cluster(), j)
		}
	}
	if o, ok := a.Policy.(sim.Observer); ok {
		o.Observe(v, e)
	}
}

// split is a 20-GPU job on 8-GPU nodes as Philly and Helios place it: 8+8+4.
func split(id string, at, dur float64) sim.JobSpec {
	s := MakeJob(id).GPUs(8).Replicas(3).At(at).Dur(dur).Obj()
	s.LastReplicaGPUs = 4
	return s
}

// TestUnequalGangByHand: on 4 nodes x 8 GPUs under fifo with spread (one
// replica per node, emptiest first), A, A2 and A3 (4 GPUs each) hold half of
// n0, n1 and n2 from t=0 (until 100, 200, 300 s). B (20 GPUs, 8+8+4,
// submitted at 1 s) needs two empty nodes: only n3 is, so B waits (as 5 x 4 it
// would have started at once) until A ends at 100; spread then puts its full
// replicas on n0 and n3 and the 4-GPU remainder on the node it does not use yet
// with the most free GPUs (lowest id first), n1's free half. D (3 x 8, FIFO
// behind B) needs three empty nodes: at 150 B releases n0, n3 and n1's half,
// but A2 still holds n1 until 200, so D starts at 200 on n0, n1, n3 (which
// shows B's remainder was released). C (1 GPU) is behind D and goes to the
// emptiest node left, n2.
func TestUnequalGangByHand(t *testing.T) {
	pol, err := policies.New("fifo", yamlNode("placement: spread"))
	if err != nil {
		t.Fatal(err)
	}
	a := &gpuAudit{Policy: pol, fail: func(f string, args ...any) { t.Helper(); t.Fatalf(f, args...) }, placed: map[string]string{}}
	res := Run(t, Nodes(4, 8), a,
		MakeJob("A").GPUs(4).Dur(100).Obj(),
		MakeJob("A2").GPUs(4).Dur(200).Obj(),
		MakeJob("A3").GPUs(4).Dur(300).Obj(),
		split("B", 1, 50),
		MakeJob("D").GPUs(8).Replicas(3).At(2).Dur(10).Obj(),
		MakeJob("C").GPUs(1).At(3).Dur(10).Obj(),
	)
	want := map[string]float64{"A": 0, "A2": 0, "A3": 0, "B": 100, "D": 200, "C": 200}
	got := Starts(res)
	for _, id := range SortedIDs(want) {
		if got[id] != want[id] {
			t.Errorf("%s started at %g s, want %g", id, got[id], want[id])
		}
	}
	if p := a.placed["B"]; p != "n0:0,1,2,3,4,5,6,7;n3:0,1,2,3,4,5,6,7;n1:4,5,6,7" {
		t.Errorf("B placed %q, want n0 and n3 whole and n1:4-7", p)
	}
	if p := a.placed["D"]; p != "n0:0,1,2,3,4,5,6,7;n1:0,1,2,3,4,5,6,7;n3:0,1,2,3,4,5,6,7" {
		t.Errorf("D placed %q", p)
	}
	if p := a.placed["C"]; p != "n2:4" {
		t.Errorf("C placed %q, want n2:4", p)
	}
	for i := range res.Jobs {
		if res.Jobs[i].State != sim.StateCompleted {
			t.Errorf("%s ended %s", res.Jobs[i].Spec.ID, res.Jobs[i].State)
		}
	}
}

// TestUnequalGangPlacementModes: where each bucket placement puts the
// remainder. On 4 x 8 GPUs, x (3 GPUs, 100 s), y (5 GPUs, 5 s) and z (4 GPUs,
// 100 s) start at 0; first-fit and best-fit put x and y on n0 and z on n1, so
// when y ends n0 has 5 free, n1 4, n2 and n3 8. J (8+4, at 6 s) takes n2 whole;
// first-fit puts the remainder on the lowest node with room (n0), best-fit on
// the fewest free GPUs that fit (n1). Spread put x, y, z on n0, n1, n2 (5, 8,
// 4 free after y): J's full replica takes n1, its remainder the emptiest node it
// does not use yet, n3.
func TestUnequalGangPlacementModes(t *testing.T) {
	for _, c := range []struct{ mode, want string }{
		{"first-fit", "n2:0,1,2,3,4,5,6,7;n0:3,4,5,6"},
		{"best-fit", "n2:0,1,2,3,4,5,6,7;n1:4,5,6,7"},
		{"spread", "n1:0,1,2,3,4,5,6,7;n3:0,1,2,3"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			pol, err := policies.New("fifo", yamlNode("placement: "+c.mode))
			if err != nil {
				t.Fatal(err)
			}
			a := &gpuAudit{Policy: pol, fail: func(f string, args ...any) { t.Helper(); t.Fatalf(f, args...) }, placed: map[string]string{}}
			j := MakeJob("J").GPUs(8).Replicas(2).At(6).Dur(10).Obj()
			j.LastReplicaGPUs = 4
			Run(t, Nodes(4, 8), a,
				MakeJob("x").GPUs(3).Dur(100).Obj(),
				MakeJob("y").GPUs(5).Dur(5).Obj(),
				MakeJob("z").GPUs(4).Dur(100).Obj(),
				j)
			if a.placed["J"] != c.want {
				t.Errorf("%s: J placed %q, want %q", c.mode, a.placed["J"], c.want)
			}
		})
	}
}

// TestUnequalGangValidate: the spec's own rules for LastReplicaGPUs.
func TestUnequalGangValidate(t *testing.T) {
	ok := split("ok", 0, 1)
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	if ok.TotalGPUs() != 20 || ok.GPUDemandMilli() != 20000 || ok.ReplicaGPUs(1) != 8 || ok.ReplicaGPUs(2) != 4 {
		t.Fatalf("20-GPU split: total %d, demand %d, replica GPUs %d %d", ok.TotalGPUs(), ok.GPUDemandMilli(), ok.ReplicaGPUs(1), ok.ReplicaGPUs(2))
	}
	for _, bad := range []func(s *sim.JobSpec){
		func(s *sim.JobSpec) { s.LastReplicaGPUs = 8 },
		func(s *sim.JobSpec) { s.LastReplicaGPUs = -1 },
		func(s *sim.JobSpec) { s.Replicas = 1 },
		func(s *sim.JobSpec) { s.Sharing = sim.AcceptAny },
	} {
		s := split("bad", 0, 1)
		bad(&s)
		if err := s.Validate(); err == nil {
			t.Errorf("%+v: no error", s)
		}
	}
	c := Cluster(t, Nodes(2, 8))
	if err := c.Feasible(&ok); err == nil {
		t.Error("20 GPUs feasible on 16")
	}
	if c := Cluster(t, Nodes(3, 8)); c.Feasible(&ok) != nil {
		t.Errorf("8+8+4 infeasible on 3 x 8: %v", c.Feasible(&ok))
	}
	odd := []sim.NodeSpec{Nodes(1, 8)[0], Nodes(1, 4)[0]}
	odd[1].Name = "small"
	if c := Cluster(t, odd); c.Feasible(&ok) == nil {
		t.Error("8+8+4 feasible on 8 + 4 GPUs")
	}
	twelve := MakeJob("t").GPUs(8).Replicas(2).Dur(1).Obj()
	twelve.LastReplicaGPUs = 4
	if c := Cluster(t, odd); c.Feasible(&twelve) != nil {
		t.Errorf("8+4 infeasible on nodes of 8 and 4: %v", c.Feasible(&twelve))
	}
}

// TestUnequalGangChargeProperty: on random clusters and random mixes of equal
// and unequal gangs, under fifo, sjf, priority and EASY backfilling with the
// bucket placements, the GPUs charged equal the GPUs the running jobs requested
// at every scheduling point, every replica has its own GPU count on its node,
// and every job finishes.
func TestUnequalGangChargeProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		nn := rapid.IntRange(2, 6).Draw(rt, "nodes")
		per := int32(rapid.SampledFrom([]int{4, 8}).Draw(rt, "per"))
		nodes := Nodes(nn, per)
		cl, err := sim.NewCluster(nodes)
		if err != nil {
			rt.Fatal(err)
		}
		var jobs []sim.JobSpec
		for i := range rapid.IntRange(1, 20).Draw(rt, "jobs") {
			s := MakeJob(fmt.Sprintf("j%02d", i)).At(float64(rapid.IntRange(0, 100).Draw(rt, "at"))).
				Dur(float64(rapid.IntRange(1, 200).Draw(rt, "dur"))).Obj()
			total := int32(rapid.IntRange(1, nn*int(per)).Draw(rt, "total"))
			s.Replicas, s.GPUsPerReplica = (total+per-1)/per, min(total, per)
			if r := total % per; r != 0 && total > per {
				s.LastReplicaGPUs = r
			}
			if cl.Feasible(&s) != nil || s.TotalGPUs() != total {
				rt.Fatalf("%d GPUs as %d x %d + last %d: total %d, feasible: %v", total, s.Replicas, s.GPUsPerReplica, s.LastReplicaGPUs, s.TotalGPUs(), cl.Feasible(&s))
			}
			jobs = append(jobs, s)
		}
		pol := rapid.SampledFrom([]string{"fifo", "sjf", "priority", "easy-backfill", "conservative-backfill"}).Draw(rt, "policy")
		pl := rapid.SampledFrom([]string{"first-fit", "best-fit", "spread"}).Draw(rt, "placement")
		p, err := policies.New(pol, yamlNode("placement: "+pl))
		if err != nil {
			rt.Fatal(err)
		}
		e, err := sim.NewEngine(sim.Config{Cluster: cl, Jobs: jobs, Policy: &gpuAudit{Policy: p, fail: rt.Fatalf}, Seed: 1})
		if err != nil {
			rt.Fatal(err)
		}
		res, err := e.Run(context.Background())
		if err != nil {
			rt.Fatal(err)
		}
		for i := range res.Jobs {
			if res.Jobs[i].State != sim.StateCompleted {
				rt.Fatalf("%s ended %s under %s/%s", res.Jobs[i].Spec.ID, res.Jobs[i].State, pol, pl)
			}
		}
	})
}

// TestUnequalGangOtherPlacements: the placements that know equal gangs only
// (topology-aware, FGD) place an unequal gang as full replicas and give back
// the remainder's extra GPUs: the run stays consistent and every job finishes.
func TestUnequalGangOtherPlacements(t *testing.T) {
	for _, pl := range []string{"topology-best-fit", "tas", "hived", "binpack", "fgd", "pack"} {
		t.Run(pl, func(t *testing.T) {
			pol, err := policies.New("fifo", yamlNode("placement: "+pl))
			if err != nil {
				t.Fatal(err)
			}
			a := &gpuAudit{Policy: pol, fail: func(f string, args ...any) { t.Helper(); t.Fatalf(f, args...) }, placed: map[string]string{}}
			res := Run(t, Nodes(4, 8), a,
				MakeJob("A").GPUs(4).Dur(100).Obj(),
				split("B", 1, 50),
				MakeJob("C").GPUs(2).At(2).Dur(10).Obj())
			for i := range res.Jobs {
				if res.Jobs[i].State != sim.StateCompleted {
					t.Errorf("%s ended %s", res.Jobs[i].Spec.ID, res.Jobs[i].State)
				}
			}
			if got := Starts(res)["B"]; got != 1 {
				t.Errorf("B started at %g, want 1 (three empty nodes)", got)
			}
		})
	}
}
