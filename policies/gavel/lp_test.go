package gavel

import (
	"math"
	"testing"
)

// Three jobs on one GPU each of types A and B, by hand. Throughputs (steps/s):
// j1 2 on A and 1 on B, j2 1 and 1, j3 1 and 2; 1000 steps each. The makespan LP's
// optimum gives j1 half of A, j3 half of B and j2 the other halves: every job
// runs at 1 step/s, so T* = 1000 s. Gavel's binary search stops within 5 %
// above it, and the allocation found there finishes every job by that T.
func TestMinTotalDurationByHand(t *testing.T) {
	tput := [][]float64{{2, 1}, {1, 1}, {1, 2}}
	sf := []float64{1, 1, 1}
	rem := []float64{1000, 1000, 1000}
	workers := []float64{1, 1}
	x, err := minTotalDuration(tput, sf, rem, workers)
	if err != nil {
		t.Fatal(err)
	}
	var T float64
	for j := range x {
		rate := tput[j][0]*x[j][0] + tput[j][1]*x[j][1]
		T = max(T, rem[j]/rate)
		if s := x[j][0] + x[j][1]; s > 1+1e-9 {
			t.Errorf("job %d time shares sum to %v", j, s)
		}
	}
	for w := range workers {
		if s := x[0][w] + x[1][w] + x[2][w]; s > workers[w]+1e-9 {
			t.Errorf("type %d over-allocated: %v", w, s)
		}
	}
	if T < 1000-1e-6 || T > 1050 {
		t.Errorf("allocation %v finishes by %v s, want within [1000, 1050]", x, T)
	}
	// the analytic center at T keeps j1 mostly on A and j3 on B
	if !(x[0][0] > x[0][1] && x[2][1] > x[2][0]) {
		t.Errorf("allocation %v: j1 should lean on A and j3 on B", x)
	}
}

// Max-min fairness by hand. A has 2 GPUs and B 1; two 1-GPU jobs, j1 3x faster
// on A: there is room for both all the time, so the optimum allocates each job
// fully (time shares summing to 1).
func TestMaxMinFairnessByHand(t *testing.T) {
	tput := [][]float64{{3, 1}, {1, 1}}
	x, err := maxMinFairness(tput, []float64{1, 1}, []float64{2, 1})
	if err != nil {
		t.Fatal(err)
	}
	for j := range x {
		if s := x[j][0] + x[j][1]; math.Abs(s-1) > 1e-9 {
			t.Errorf("job %d time shares sum to %v, want 1 (room for both)", j, s)
		}
	}
	// Two 2-GPU gangs and one 1-GPU job on 2 GPUs of one type. The agnostic LP
	// equalises sf_j x_j: x_iso = (1/3, 1/3, 2/3) (2/3 + 2/3 + 2/3 = 2 GPUs), so
	// iso = (1/3, 1/3, 2/3). The perf LP equalises sf_j x_j / iso_j: 6 x1 = 6 x2
	// = 1.5 x3 under 2 x1 + 2 x2 + x3 <= 2, i.e. x = (1/4, 1/4, 1): Gavel's
	// normalisation divides by an isolated throughput that already holds the
	// scale factor, so a gang's sf counts twice (as in Gavel).
	x, err = maxMinFairness([][]float64{{1}, {1}, {1}}, []float64{2, 2, 1}, []float64{2})
	if err != nil {
		t.Fatal(err)
	}
	for j, want := range []float64{0.25, 0.25, 1} {
		if math.Abs(x[j][0]-want) > 1e-9 {
			t.Errorf("gangs: x = %v, want (1/4, 1/4, 1)", x)
			break
		}
	}
}
