package gavel

import (
	"math"
	"math/rand/v2"
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

// Finish-time fairness by hand (Themis's ρ as Gavel's
// FinishTimeFairnessPolicyWithPerf defines it). Types F and S, one GPU each.
// Job a runs 10 steps/s on F and 1 on S, has run 100 s and has 100 steps
// left; its isolated throughput is 1, so E_a = 100 + 100/1 = 200 and
// ρ_a = (100 + 100/thr_a)/200 >= 0.5, at best 0.55 with all of F. Job b runs 1
// step/s on either, has just arrived, 100 steps left and isolated throughput
// 0.5: E_b = 200, ρ_b = (100/thr_b)/200 >= 0.5, 0.5 with a whole GPU. Both bests
// fit together (a on F, b on S), so min max ρ = 0.55.
func TestFinishTimeFairnessByHand(t *testing.T) {
	tput := [][]float64{{10, 1}, {1, 1}}
	sf := []float64{1, 1}
	rem := []float64{100, 100}
	since := []float64{100, 0}
	workers := []float64{1, 1}
	x, err := finishTimeFairnessIso(tput, sf, rem, since, workers, []float64{1, 0.5})
	if err != nil {
		t.Fatal(err)
	}
	rho := func(j int, E float64) float64 {
		thr := tput[j][0]*x[j][0] + tput[j][1]*x[j][1]
		return (since[j] + rem[j]/thr) / E
	}
	ra, rb := rho(0, 200), rho(1, 200)
	if math.Abs(max(ra, rb)-0.55) > 1e-3 {
		t.Errorf("allocation %v: max ρ = max(%.4f, %.4f), want 0.55", x, ra, rb)
	}
	if x[0][0] < 0.99 {
		t.Errorf("job a gets %v of F, want all of it", x[0][0])
	}
	for w := range workers {
		if s := x[0][w] + x[1][w]; s > workers[w]+1e-9 {
			t.Errorf("type %d over-allocated: %v", w, s)
		}
	}

	// Through the isolated allocation: on one type, max-min already equalises
	// ρ at 1 for two identical jobs (each half the GPU), and nothing does better.
	x, err = finishTimeFairness([][]float64{{1}, {1}}, []float64{1, 1}, []float64{100, 300}, []float64{0, 50}, []float64{1})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(x[0][0]-0.5) > 1e-3 || math.Abs(x[1][0]-0.5) > 1e-3 {
		t.Errorf("one GPU, two jobs: allocation %v, want half each (ρ = 1 for both)", x)
	}
}

// Max sum throughput by hand: types F and S, one GPU each; job a runs 3
// steps/s on F and 1 on S, job b 2 and 2. The sum 3·x_aF + x_aS + 2·x_bF +
// 2·x_bS is largest with a on F and b on S (5 steps/s). Normalised by cost with
// F costing 4 and S 1, per-cost throughputs are a: 0.75 and 1, b: 0.5 and 2;
// the optimum puts b on S (2) and a on F (0.75): 2.75, against a on S and b on
// F (1.5).
func TestMaxSumThroughputByHand(t *testing.T) {
	tput := [][]float64{{3, 1}, {2, 2}}
	for _, c := range []struct {
		cost []float64
		want float64
	}{{[]float64{1, 1}, 5}, {[]float64{4, 1}, 2.75}} {
		x, err := maxSumThroughput(tput, []float64{1, 1}, []float64{1, 1}, c.cost)
		if err != nil {
			t.Fatal(err)
		}
		var got float64
		for j := range x {
			for w := range x[j] {
				got += tput[j][w] / c.cost[w] * x[j][w]
			}
		}
		if math.Abs(got-c.want) > 1e-9 || x[0][0] < 1-1e-9 || x[1][1] < 1-1e-9 {
			t.Errorf("costs %v: allocation %v, objective %v; want a on F, b on S, %v", c.cost, x, got, c.want)
		}
	}
}

// Max-min over job types gives the per-job LP's optimum. Random instances of
// up to 40 jobs drawn from 5 job types (so most jobs have twins), on 3 GPU
// types: the optimal t of the per-job LP (maxMinLP with every count 1, the
// formulation without aggregation) equals that of the aggregated LP to 1e-9,
// and the expanded allocation fits the cluster and gives every job at least t.
func TestMaxMinAggregationKeepsOptimum(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 14))
	for trial := range 30 {
		nt := 1 + rng.IntN(5)
		types := make([][]float64, nt)
		tsf := make([]float64, nt)
		for k := range types {
			types[k] = []float64{0.5 + 3*rng.Float64(), 0.5 + 2*rng.Float64(), 0.2 * rng.Float64()}
			tsf[k] = float64(int(1) << rng.IntN(3))
		}
		nj := 1 + rng.IntN(40)
		tput := make([][]float64, nj)
		sf := make([]float64, nj)
		norm := make([]float64, nj)
		ones := make([]int, nj)
		for j := range tput {
			k := rng.IntN(nt)
			tput[j], sf[j], norm[j], ones[j] = types[k], tsf[k], 1+float64(k), 1
		}
		workers := []float64{float64(1 + rng.IntN(8)), float64(rng.IntN(8)), float64(1 + rng.IntN(8))}
		_, tFull, err := maxMinLP(tput, sf, workers, norm, ones)
		if err != nil {
			t.Fatal(err)
		}
		x, err := maxMin(tput, sf, workers, norm)
		if err != nil {
			t.Fatal(err)
		}
		tAgg := math.Inf(1)
		used := make([]float64, len(workers))
		for j := range tput {
			var rate, share float64
			for w := range workers {
				rate += tput[j][w] * sf[j] * x[j*3+w] / norm[j]
				share += x[j*3+w]
				used[w] += sf[j] * x[j*3+w]
			}
			tAgg = min(tAgg, rate)
			if share > 1+1e-9 {
				t.Errorf("trial %d: job %d has time shares summing to %v", trial, j, share)
			}
		}
		for w := range workers {
			if used[w] > workers[w]+1e-9 {
				t.Errorf("trial %d: type %d uses %v of %v GPUs", trial, w, used[w], workers[w])
			}
		}
		if math.Abs(tAgg-tFull) > 1e-9*max(1, tFull) {
			t.Errorf("trial %d (%d jobs of %d types): aggregated min %v, per-job LP optimum %v", trial, nj, nt, tAgg, tFull)
		}
	}
}
