//go:build lpsolve && cgo

package pack

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestILPMatchesBruteForce: on random instances (<= 8 GPUs, <= 12 jobs) the
// ILP's decision is valid, proved optimal, and its objective equals the
// brute-force optimum; greedy's is never above it.
func TestILPMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	n := 300
	if testing.Short() {
		n = 60
	}
	for i := range n {
		p := randomProblem(r, 8, 12, ILP)
		p.Budget = 10 * time.Second
		res := solve(t, p)
		opt := bruteForce(t, p)
		if !res.Optimal || res.Fallback || res.TimedOut {
			t.Fatalf("instance %d: not solved to optimality: %+v", i, res)
		}
		if math.Abs(res.Objective-opt) > 1e-6 {
			t.Fatalf("instance %d: ILP %.9f, brute force %.9f", i, res.Objective, opt)
		}
		p.Mode = Greedy
		if g := solve(t, p); g.Objective > res.Objective+1e-6 {
			t.Fatalf("instance %d: greedy %.6f above the ILP %.6f", i, g.Objective, res.Objective)
		}
	}
}

// TestILPBudgetReported: with a budget far too small for the 64-GPU, 40-job
// benchmark instance, the ILP reports hitting it and still returns a valid
// decision, at least as good as greedy's.
func TestILPBudgetReported(t *testing.T) {
	p := benchProblem(64, 40, ILP)
	p.Budget = time.Microsecond
	res := solve(t, p)
	if !res.TimedOut || res.Optimal || res.Warning == "" {
		t.Fatalf("budget not reported: %+v", res)
	}
	p.Mode = Greedy
	if g := solve(t, p); g.Objective > res.Objective+1e-9 {
		t.Fatalf("timed-out ILP %.6f below greedy %.6f", res.Objective, g.Objective)
	}
}

// TestILPBudgetCoversEnumeration: on the 1,024-GPU, 500-job instance the
// enumeration of groups alone exceeds a 100 ms budget; the ILP stops there,
// reports it and greedy decides.
func TestILPBudgetCoversEnumeration(t *testing.T) {
	p := benchProblem(1024, 500, ILP)
	p.Budget = 100 * time.Millisecond
	t0 := time.Now()
	res := solve(t, p)
	if el := time.Since(t0); el > 5*time.Second {
		t.Errorf("took %v with a 100 ms budget", el)
	}
	if !res.TimedOut || res.Mode != Greedy || res.Warning == "" {
		t.Fatalf("budget not reported: %+v", res)
	}
}
