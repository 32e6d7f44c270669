package dagcp

import (
	"testing"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

func dep(s sim.JobSpec, deps ...string) sim.JobSpec {
	d := &sim.JobDAG{}
	for _, x := range deps {
		d.Deps = append(d.Deps, sim.JobID(x))
	}
	s.DAG = d
	return s
}

// pipeline is the hand-worked case of docs/dag.md: on one node of 2 GPUs, two
// independent 1-GPU jobs a1, a2 (15 s each) and a chain c1 (10 s) -> c2 (20 s)
// -> c3 (5 s), all submitted at 0. The chain's critical path is 35 s.
func pipeline() []sim.JobSpec {
	return []sim.JobSpec{
		MakeJob("a1").GPUs(1).Dur(15).Obj(),
		MakeJob("a2").GPUs(1).Dur(15).Obj(),
		dep(MakeJob("c1").GPUs(1).Dur(10).Obj()),
		dep(MakeJob("c2").GPUs(1).Dur(20).Obj(), "c1"),
		dep(MakeJob("c3").GPUs(1).Dur(5).Obj(), "c2"),
	}
}

// FIFO runs a1, a2 at 0 (both to 15), then the chain one stage at a time:
// c1 15-25, c2 25-45, c3 45-50; makespan 50.
//
// Critical path, by hand. t=0: nothing has finished, so predictions are the
// estimates (no walltime: the durations): rank c1 = 10+20+5 = 35, a1 = a2 =
// 15: c1 and a1 start. t=10: c1 ends (history: mean 10 s); c2 is released,
// predicted 10 s (user mean), rank c2 = 10 + 10 (c3 predicted 10) = 20 > a2's
// 10: c2 starts on the free GPU (to 30). t=15: a1 ends, a2 starts (to 30).
// t=30: c2 ends, c3 is released and starts (to 35). Makespan 35 = the critical
// path.
func TestCriticalPathHandWorked(t *testing.T) {
	fifo, err := policies.New("fifo", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"a1": 0, "a2": 0, "c1": 15, "c2": 25, "c3": 45}
	res := Run(t, Nodes(1, 2), fifo, pipeline()...)
	if st := Starts(res); !same(st, want) {
		t.Errorf("fifo starts %v, want %v\n%s", st, want, Schedule(res))
	}
	if res.Makespan.Seconds() != 50 {
		t.Errorf("fifo makespan %v, want 50", res.Makespan.Seconds())
	}
	cp, err := New(Params{})
	if err != nil {
		t.Fatal(err)
	}
	res = Run(t, Nodes(1, 2), cp, pipeline()...)
	want = map[string]float64{"c1": 0, "a1": 0, "c2": 10, "a2": 15, "c3": 30}
	if st := Starts(res); !same(st, want) {
		t.Errorf("critical-path starts %v, want %v\n%s", st, want, Schedule(res))
	}
	if res.Makespan.Seconds() != 35 {
		t.Errorf("critical-path makespan %v, want 35", res.Makespan.Seconds())
	}
	// Predictions at release: c1 10 (estimate), c2 10 (mean of c1),
	// c3 15 (mean of c1 10, a1 15, c2 20: a2 also ends at 30 with 15).
	d := res.DAG
	for id, w := range map[string]float64{"a1": 15, "c1": 10, "c2": 10, "c3": 15} {
		r := ref(res, id)
		if got := d.Predicted[r].Seconds(); got != w {
			t.Errorf("%s predicted %v, want %v", id, got, w)
		}
	}
	if r := ref(res, "c3"); d.Released[r].Seconds() != 30 || res.Jobs[r].Spec.Submit.Seconds() != 30 || d.TraceSubmit[r] != 0 {
		t.Errorf("c3 released %v submit %v trace %v, want 30 30 0", d.Released[r], res.Jobs[r].Spec.Submit, d.TraceSubmit[r])
	}
}

// Determinism: the same run twice gives the same event log.
func TestCriticalPathDeterministic(t *testing.T) {
	a, _ := New(Params{})
	b, _ := New(Params{})
	if x, y := Schedule(Run(t, Nodes(1, 2), a, pipeline()...)), Schedule(Run(t, Nodes(1, 2), b, pipeline()...)); x != y {
		t.Errorf("runs differ:\n%s\n---\n%s", x, y)
	}
}

func ref(res *sim.Result, id string) sim.JobRef {
	for i := range res.Jobs {
		if string(res.Jobs[i].Spec.ID) == id {
			return sim.JobRef(i)
		}
	}
	panic("no job " + id)
}

func same(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func userOf(s sim.JobSpec, u string) sim.JobSpec { s.User = u; return s }

// Pre-warming by hand, on 1 node of 4 GPUs: p (1 GPU, 10 s) -> s (4 GPUs,
// 20 s) at 0, b (2 GPUs, 15 s) at 5. Without a hold b starts at 5, s finds
// 2 free GPUs when p ends at 10 and waits for b: s 20-40. With prewarm
// (horizon 60 s) s holds 4 GPUs from 0 (p predicted to end at 10, within the
// horizon); at 5 b (rank 15 < s's 20, predicted end 20 after s's release at
// 10) would leave 1 free GPU: it waits. At 10 s is released and starts (ties
// with b at rank 10 after p's history; s was submitted first): s 10-30,
// b 30-45.
func TestPrewarmHolds(t *testing.T) {
	jobs := []sim.JobSpec{
		dep(MakeJob("p").GPUs(1).Dur(10).Obj()),
		dep(MakeJob("s").GPUs(4).Dur(20).Obj(), "p"),
		MakeJob("b").GPUs(2).Dur(15).At(5).Obj(),
	}
	off, _ := New(Params{})
	if st := Starts(Run(t, Nodes(1, 4), off, jobs...)); st["b"] != 5 || st["s"] != 20 {
		t.Errorf("no prewarm: b %v s %v, want 5 20", st["b"], st["s"])
	}
	on, err := New(Params{Prewarm: &Prewarm{Horizon: policies.Dur(60 * sim.Second), Decay: policies.Dur(20 * sim.Second)}})
	if err != nil {
		t.Fatal(err)
	}
	res := Run(t, Nodes(1, 4), on, jobs...)
	if st := Starts(res); st["s"] != 10 || st["b"] != 30 {
		t.Errorf("prewarm: s %v b %v, want 10 30\n%s", st["s"], st["b"], Schedule(res))
	}
}

// A wrong forecast decays. Users u (q 5 s) and v (q2 2 s) finish first; p
// (u, true 50 s) is predicted 5 s from u's history: predicted end 10. s (4
// GPUs, rank 5) holds 4 GPUs; b (v, 2 GPUs, predicted 2 s: rank 2) arrives at
// 12. With decay 20 s the hold after the overrun is ceil(4·(1 − over/20)):
// 4 at 12, 3 at 15, 2 at 20, 1 at 25, when b (leaving 1 GPU free) may start.
// With decay 0 the hold is gone at once: b starts at 12.
func TestPrewarmDecays(t *testing.T) {
	jobs := []sim.JobSpec{
		userOf(MakeJob("q").GPUs(1).Dur(5).Obj(), "u"),
		userOf(MakeJob("q2").GPUs(1).Dur(2).Obj(), "v"),
		userOf(dep(MakeJob("p").GPUs(1).Dur(50).At(5).Obj()), "u"),
		userOf(dep(MakeJob("s").GPUs(4).Dur(20).At(5).Obj(), "p"), "u"),
		userOf(MakeJob("b").GPUs(2).Dur(15).At(12).Obj(), "v"),
	}
	for _, c := range []struct {
		decay float64
		want  float64
	}{{20, 25}, {0, 12}} {
		pol, _ := New(Params{Prewarm: &Prewarm{Horizon: policies.Dur(60 * sim.Second), Decay: policies.Dur(sim.Seconds(c.decay))}})
		res := Run(t, Nodes(1, 4), pol, jobs...)
		if st := Starts(res); st["b"] != c.want || st["p"] != 5 {
			t.Errorf("decay %v: b starts %v (p %v), want %v\n%s", c.decay, st["b"], st["p"], c.want, Schedule(res))
		}
	}
	if _, err := New(Params{Prewarm: &Prewarm{}}); err == nil {
		t.Error("prewarm without horizon accepted")
	}
}
