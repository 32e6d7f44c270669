package qssf

import (
	"testing"

	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

func user(s sim.JobSpec, u string) sim.JobSpec { s.User = u; return s }

// Shortest predicted service first, by hand, on one GPU. X (u1, 10 s) runs
// 0-10 and Y (u2, 100 s) 10-110: u1's history says 10 s, u2's 100 s. A (u2),
// B and C (u1), all 30 s, arrive at 20-22. At 110 B (predicted 10) goes before
// A (100); at 140 u1's mean is 20, so C goes next; A last. FIFO would run A, B, C.
func TestShortestPredictedFirst(t *testing.T) {
	q, err := New(Params{})
	if err != nil {
		t.Fatal(err)
	}
	res := Run(t, Nodes(1, 1), q,
		user(MakeJob("X").GPUs(1).Dur(10).Obj(), "u1"),
		user(MakeJob("Y").GPUs(1).Dur(100).At(1).Obj(), "u2"),
		user(MakeJob("A").GPUs(1).Dur(30).At(20).Obj(), "u2"),
		user(MakeJob("B").GPUs(1).Dur(30).At(21).Obj(), "u1"),
		user(MakeJob("C").GPUs(1).Dur(30).At(22).Obj(), "u1"))
	st := Starts(res)
	if st["B"] != 110 || st["C"] != 140 || st["A"] != 170 {
		t.Errorf("starts B %v C %v A %v, want 110 140 170\n%s", st["B"], st["C"], st["A"], Schedule(res))
	}
}

// Head-of-line blocking (strict, the default) on two GPUs: u's history says 1 s
// and v's 50 s; "run" holds one GPU until 102. At 60 big (u, 2 GPUs: predicted
// 2 GPU-s) comes before small (v, 1 GPU: 50 GPU-s) and does not fit, which
// stops the pass: small waits until big has run (103). With strict: false small
// starts at once.
func TestStrict(t *testing.T) {
	jobs := []sim.JobSpec{
		user(MakeJob("h1").GPUs(1).Dur(1).Obj(), "u"),
		user(MakeJob("h2").GPUs(1).Dur(50).Obj(), "v"),
		user(MakeJob("run").GPUs(1).Dur(100).At(2).Obj(), "w"),
		user(MakeJob("big").GPUs(2).Dur(1).At(60).Obj(), "u"),
		user(MakeJob("small").GPUs(1).Dur(1).At(60).Obj(), "v"),
	}
	q, _ := New(Params{})
	if st := Starts(Run(t, Nodes(1, 2), q, jobs...)); st["big"] != 102 || st["small"] != 103 {
		t.Errorf("strict: big starts at %v, small at %v; want 102 and 103", st["big"], st["small"])
	}
	no := false
	q, _ = New(Params{Strict: &no})
	if st := Starts(Run(t, Nodes(1, 2), q, jobs...)); st["small"] != 60 {
		t.Errorf("non-strict: small starts at %v, want 60", st["small"])
	}
}
