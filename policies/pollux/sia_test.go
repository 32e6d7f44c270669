package pollux

import (
	"math"
	"slices"
	"testing"

	"github.com/gpusim/gpusim/sim"
)

// TestSiaCostByHand: sia.py's objective entries. Goodput 4 on a job whose
// smallest is 2 is 2 normalised: 2^−0.5 = 0.7071 → 0.71 as its current
// configuration; elsewhere × factor 0.5 = 1 → 1.00. A tiny goodput floors at
// 1e-4 and its power clips at 3000.
func TestSiaCostByHand(t *testing.T) {
	for _, c := range []struct {
		gp, lo, factor float64
		cur            bool
		want           float64
	}{
		{4, 2, 0.5, true, 0.71},
		{4, 2, 0.5, false, 1},
		{1e-9, 1, 1, true, 100}, // (1e-4)^−0.5
		{1e-9, 1, 1e-3, false, 100},
	} {
		if got := siaCost(c.gp, c.lo, c.factor, -0.5, c.cur); got != c.want {
			t.Errorf("siaCost(%v, %v, %v, cur %v) = %v, want %v", c.gp, c.lo, c.factor, c.cur, got, c.want)
		}
	}
	if got := siaCost(1e-9, 1, 1, -2, true); got != 3000 {
		t.Errorf("p=-2 tiny goodput: %v, want the 3000 clip", got)
	}
}

// TestSiaSolveByHand: two GPU types of one 2-GPU node each, fast (t0) and
// slow (t1); λn = 1.1, p = −0.5. Job A has a model: goodput 2, 4 on 1, 2 fast
// GPUs and 1, 2 on slow ones, so normalised costs t0: 2^−.5, 4^−.5 = 0.71,
// 0.50 and t1: 1, 0.71. Job B has no model yet: 1 GPU of either type, cost 1.
// Greedy from nothing, decrease per GPU added: A→t0×1 (1.1−0.71 = 0.39) first;
// then A t0×1→t0×2 (0.21) beats B→t0×1 or t1×1 (0.1); then B→t1×1 (0.1).
// Result A on both fast GPUs, B on a slow one: 0.5 + 1 = 1.5, the optimum (A
// on slow 2, B fast 1 is 1.71; A fast 1, B fast 1 is 1.71).
func TestSiaSolveByHand(t *testing.T) {
	types := []siaType{{model: "fast", per: 2}, {model: "slow", per: 2}}
	types[0].nodes, types[1].nodes = []sim.NodeID{0}, []sim.NodeID{1}
	confs := []siaConfig{{0, 1, 1}, {0, 1, 2}, {1, 1, 1}, {1, 1, 2}}
	nan := math.NaN()
	cost := [][]float64{
		{0.71, 0.5, 1, 0.71},
		{1, nan, 1, nan},
	}
	pick := siaSolve(cost, confs, types, 1.1, nil)
	if !slices.Equal(pick, []int{1, 2}) {
		t.Fatalf("picks %v, want A on fast×2 (1), B on slow×1 (2)", pick)
	}
	if got := siaObjective(cost, pick, 1.1); math.Abs(got-1.5) > 1e-12 {
		t.Errorf("objective %v, want 1.5", got)
	}
	// From the current allocation A fast×1, B fast×1 , the greedy
	// cannot move B to slow (no decrease), so the fresh construction wins.
	keep := siaSolve(cost, confs, types, 1.1, []int{0, 0})
	if got := siaObjective(cost, keep, 1.1); got < 1.5 {
		t.Errorf("from the current allocation: %v (%v), want no better than 1.5", keep, got)
	}
}
