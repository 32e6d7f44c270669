package sim_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/policies/placement"
	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

// greedy starts pending jobs in queue order, skipping those that do not fit.
type greedy struct {
	pl placement.Placement
	p  placement.Placer
}

func (g *greedy) Name() string { return "greedy" }

func (g *greedy) Schedule(v *sim.View, p *sim.Plan) error {
	if g.p == nil {
		g.p, _ = placement.New("first-fit")
		if err := placement.Prepare(g.p, v); err != nil {
			return err
		}
	}
	for j := v.PendingHead(); j != nil; {
		next := v.NextPending(j)
		if g.p.Place(v.Cluster(), j, &g.pl) {
			if err := p.AddStart(j.Ref, g.pl.Nodes, g.pl.GPUs); err != nil {
				return err
			}
		}
		j = next
	}
	return nil
}

func withDAG(s sim.JobSpec, name string, deps ...string) sim.JobSpec {
	d := &sim.JobDAG{Name: name}
	for _, x := range deps {
		d.Deps = append(d.Deps, sim.JobID(x))
	}
	s.DAG = d
	return s
}

func find(res *sim.Result, id string) *sim.Job {
	for i := range res.Jobs {
		if string(res.Jobs[i].Spec.ID) == id {
			return &res.Jobs[i]
		}
	}
	panic(id)
}

// A join: t waits for both p1 (10 s) and p2 (30 s); t is released at 30 and
// starts then. q depends on p1 but is submitted at 50, after p1 ended: it
// arrives at 50 as usual.
func TestDAGReleaseOnLastPredecessor(t *testing.T) {
	res := Run(t, Nodes(1, 4), &greedy{},
		withDAG(MakeJob("p1").GPUs(1).Dur(10).Obj(), "pre"),
		withDAG(MakeJob("p2").GPUs(1).Dur(30).Obj(), "pre"),
		withDAG(MakeJob("t").GPUs(2).Dur(5).Obj(), "train", "p1", "p2"),
		withDAG(MakeJob("q").GPUs(1).Dur(5).At(50).Obj(), "eval", "p1"))
	st := Starts(res)
	if st["t"] != 30 || st["q"] != 50 {
		t.Errorf("t starts %v, q %v; want 30, 50\n%s", st["t"], st["q"], Schedule(res))
	}
	if tj := find(res, "t"); tj.Spec.Submit.Seconds() != 30 || tj.End.Seconds() != 35 {
		t.Errorf("t submit %v end %v, want 30 35", tj.Spec.Submit, tj.End)
	}
	// t: no "train" history; name key unknown, user "" mean of p1, p2 = 20.
	if p := res.DAG.Predicted[find(res, "t").Ref].Seconds(); p != 20 {
		t.Errorf("t predicted %v, want 20", p)
	}
	if w := res.DAG.Workflow; w[find(res, "q").Ref] != w[find(res, "p2").Ref] {
		t.Errorf("q and p2 are in one workflow: %v", w)
	}
}

// A predecessor that times out cancels its successors transitively; an
// unrelated branch still runs.
func TestDAGCancelOnFailure(t *testing.T) {
	res := Run(t, Nodes(1, 2), &greedy{},
		MakeJob("a").GPUs(1).Dur(10).Wall(4).Obj(),
		withDAG(MakeJob("b").GPUs(1).Dur(1).Obj(), "", "a"),
		withDAG(MakeJob("c").GPUs(1).Dur(1).Obj(), "", "b"),
		withDAG(MakeJob("d").GPUs(1).Dur(1).Obj(), "", "x"),
		MakeJob("x").GPUs(1).Dur(2).Obj())
	for _, id := range []string{"b", "c"} {
		j := find(res, id)
		if j.State != sim.StateKilled || j.FirstStart != sim.Never || j.End.Seconds() != 4 || !res.DAG.Cancelled[j.Ref] {
			t.Errorf("%s: state %s start %v end %v cancelled %v; want killed, never started, end 4, cancelled", id, j.State, j.FirstStart, j.End, res.DAG.Cancelled[j.Ref])
		}
	}
	if d := find(res, "d"); d.State != sim.StateCompleted || d.FirstStart.Seconds() != 2 {
		t.Errorf("d: %s start %v, want completed at 2", d.State, d.FirstStart)
	}
	for _, ev := range res.Log {
		if id := res.Jobs[ev.Job].Spec.ID; id == "b" || id == "c" {
			t.Errorf("cancelled job %s has event %s", id, ev.Kind)
		}
	}
}

// The predictor prefers the (user, name) history, then the name, then the
// user, then all jobs, then the estimate.
func TestDAGPredictorKeys(t *testing.T) {
	u := func(s sim.JobSpec, user string) sim.JobSpec { s.User = user; return s }
	res := Run(t, Nodes(1, 1), &greedy{},
		u(withDAG(MakeJob("w1").GPUs(1).Dur(100).Obj(), "train"), "ann"),
		u(withDAG(MakeJob("w2").GPUs(1).Dur(10).Obj(), "eval", "w1"), "bob"),
		u(withDAG(MakeJob("w3").GPUs(1).Dur(7).Obj(), "train", "w2"), "bob"), // name: 100
		u(withDAG(MakeJob("w4").GPUs(1).Dur(7).Obj(), "other", "w3"), "bob"), // user bob: (10+7)/2
		u(withDAG(MakeJob("w5").GPUs(1).Dur(7).Obj(), "train", "w4"), "bob"), // pair (bob, train): 7
		u(withDAG(MakeJob("w6").GPUs(1).Dur(7).Obj(), "x", "w5"), "cy"))      // all: 131/5
	want := map[string]float64{"w1": 100, "w2": 100, "w3": 100, "w4": 8.5, "w5": 7, "w6": 26.2}
	for id, w := range want {
		if p := res.DAG.Predicted[find(res, id).Ref].Seconds(); p != w {
			t.Errorf("%s predicted %v, want %v", id, p, w)
		}
	}
}

func TestDAGErrors(t *testing.T) {
	for _, tc := range []struct {
		jobs []sim.JobSpec
		want string
	}{
		{[]sim.JobSpec{withDAG(MakeJob("a").GPUs(1).Dur(1).Obj(), "", "zz")}, `job "a": deps: unknown job "zz"`},
		{[]sim.JobSpec{withDAG(MakeJob("a").GPUs(1).Dur(1).Obj(), "", "a")}, `job "a": deps: the job depends on itself`},
		{[]sim.JobSpec{withDAG(MakeJob("a").GPUs(1).Dur(1).Obj(), "", "b"), withDAG(MakeJob("b").GPUs(1).Dur(1).Obj(), "", "a"),
			MakeJob("c").GPUs(1).Dur(1).Obj()}, "deps: dependency cycle among jobs a, b"},
	} {
		_, err := sim.NewEngine(sim.Config{Cluster: Cluster(t, Nodes(1, 1)), Jobs: tc.jobs, Policy: &greedy{}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}

// Jobs without DAG leave Result.DAG nil.
func TestDAGOffNil(t *testing.T) {
	e, err := sim.NewEngine(sim.Config{Cluster: Cluster(t, Nodes(1, 1)), Jobs: []sim.JobSpec{MakeJob("a").GPUs(1).Dur(1).Obj()}, Policy: &greedy{}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background())
	if err != nil || res.DAG != nil {
		t.Errorf("err %v, DAG %v; want nil, nil", err, res.DAG)
	}
}

// The order of the input jobs does not matter: reversed input gives the same
// event log and DAG record.
func TestDAGInputOrder(t *testing.T) {
	jobs := []sim.JobSpec{
		withDAG(MakeJob("p1").GPUs(1).Dur(10).Obj(), "pre"),
		withDAG(MakeJob("p2").GPUs(2).Dur(30).Obj(), "pre"),
		withDAG(MakeJob("t").GPUs(2).Dur(5).Obj(), "train", "p1", "p2"),
		withDAG(MakeJob("e").GPUs(1).Dur(5).At(3).Obj(), "eval", "t"),
		MakeJob("x").GPUs(3).Dur(7).At(1).Obj(),
	}
	a := Run(t, Nodes(1, 4), &greedy{}, jobs...)
	rev := make([]sim.JobSpec, len(jobs))
	for i := range jobs {
		rev[len(jobs)-1-i] = jobs[i]
	}
	b := Run(t, Nodes(1, 4), &greedy{}, rev...)
	if x, y := Schedule(a), Schedule(b); x != y {
		t.Errorf("schedules differ:\n%s\n---\n%s", x, y)
	}
	for i := range a.Jobs {
		if a.DAG.Released[i] != b.DAG.Released[i] || a.DAG.Predicted[i] != b.DAG.Predicted[i] || a.DAG.Workflow[i] != b.DAG.Workflow[i] {
			t.Errorf("job %s: DAG record differs", a.Jobs[i].Spec.ID)
		}
	}
}
