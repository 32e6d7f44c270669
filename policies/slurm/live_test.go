package slurm

import (
	"math"
	"testing"

	"github.com/gpusim/gpusim/sim"
)

type liveNop struct{}

func (liveNop) Start(*sim.Job) error    { return nil }
func (liveNop) Stop(*sim.Preempt) error { return nil }

// A job of a user no account lists, submitted to a running sim.Live after the
// policy's set-up, extends the association tree, the per-association usage
// table and the fair-share factors. Classic fair share, hand-worked:
//
//	before: root -> a (1 share) -> u0 (1). u0 ran 1 GPU for 60 s, charged at the
//	        calc step of t=60 s: U(u0) = U(a) = 1 (all of root's usage);
//	        normS(u0) = 1, fs(u0) = 2^-(1/1) = 0.5.
//	after bob's job (no team) at t=130 s, between calc steps (the set-up's
//	        recompute, not a calc step's): root -> {a, default (1 share) -> bob (1)};
//	        normS(u0) = normS(bob) = 1/2; UE(u0) = 1 so fs(u0) = 2^-(1/0.5) = 0.25;
//	        UE(bob) = 0 so fs(bob) = 2^0 = 1.
//
// bob's job then ends and charges its 60 GPU-s through bob's new slot of
// pendUsage.
func TestLiveSubmitNewUserExtendsTree(t *testing.T) {
	s := newSlurm(t, `
priority:
  weights: {fairshare: 1000}
  fairTree: false
  calcPeriod: 1m
accounts:
  - {name: a, users: [{name: u0}]}
`)
	c, err := sim.NewCluster([]sim.NodeSpec{{Name: "n", GPUModel: "H100", GPUs: 8, CPUMilli: 64000, MemoryMiB: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := sim.NewLive(sim.Config{Cluster: c, Policy: s}, liveNop{}, 4, sim.Second)
	if err != nil {
		t.Fatal(err)
	}
	job := func(id, user string) sim.JobSpec {
		return sim.JobSpec{ID: sim.JobID(id), User: user, Replicas: 1, GPUsPerReplica: 1, GPUMilli: sim.WholeGPU, Duration: sim.Seconds(60)}
	}
	step := func(at sim.Time, ends []sim.Ended, sub *sim.JobSpec) {
		t.Helper()
		if err := l.Advance(at, ends); err != nil {
			t.Fatal(err)
		}
		if sub != nil {
			if _, err := l.Submit(*sub); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Schedule(true); err != nil {
			t.Fatal(err)
		}
	}
	j0 := job("j0", "u0")
	step(0, nil, &j0)
	step(sim.Time(sim.Seconds(60)), []sim.Ended{{Job: 0}}, nil)
	step(sim.Time(sim.Seconds(120)), nil, nil) // a calc step: usage recorded, factors recomputed
	fs := func(user string) float64 {
		t.Helper()
		as := s.tree.users[user]
		if len(as) != 1 {
			t.Fatalf("user %s: %d associations", user, len(as))
		}
		return s.tree.a[as[0]].fs
	}
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-12 }
	if s.tree.damp != 1 {
		t.Fatalf("dampening %v, the hand-worked numbers assume 1", s.tree.damp)
	}
	if f := fs("u0"); !near(f, 0.5) {
		t.Fatalf("fs(u0) = %v before bob, want 0.5", f)
	}
	bob := job("j1", "bob")
	step(sim.Time(sim.Seconds(130)), nil, &bob) // between calc steps (120 s, 180 s)
	if len(s.tree.a) != 5 || len(s.pendUsage) != len(s.tree.a) || len(s.jobs) != 2 {
		t.Fatalf("tree %d associations (want 5: root, a, u0, default, bob), pendUsage %d, jobs %d", len(s.tree.a), len(s.pendUsage), len(s.jobs))
	}
	if d := s.tree.a[s.tree.users["bob"][0]].parent; s.tree.a[d].name != "default" {
		t.Fatalf("bob under %s, want default", s.tree.a[d].name)
	}
	if f := fs("u0"); !near(f, 0.25) {
		t.Errorf("fs(u0) = %v after bob, want 0.25", f)
	}
	if f := fs("bob"); !near(f, 1) {
		t.Errorf("fs(bob) = %v, want 1", f)
	}
	if r := l.View().Running(); len(r) != 1 || r[0].Spec.ID != "j1" {
		t.Fatalf("running %v, want j1", r)
	}
	step(sim.Time(sim.Seconds(190)), []sim.Ended{{Job: 1}}, nil)
	// 60 GPU-seconds through bob's pendUsage slot, recorded at the calc
	// step of t=180 s, which the scheduling point at t=190 s runs (decay
	// over it: < 0.1%).
	if u := s.tree.a[s.tree.users["bob"][0]].usage; math.Abs(u-60) > 0.1 {
		t.Errorf("bob's usage %v GPU-s, want 60", u)
	}
}
