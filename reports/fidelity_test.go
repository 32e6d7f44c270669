package reports

import (
	"math"
	"testing"
)

func TestKendallTauB(t *testing.T) {
	for _, c := range []struct {
		x, y []float64
		want float64
	}{
		{[]float64{1, 2, 3}, []float64{1, 2, 3}, 1},
		{[]float64{1, 2, 3}, []float64{3, 2, 1}, -1},
		{[]float64{1, 2, 3}, []float64{1, 3, 2}, 1.0 / 3}, // C=2, D=1
		// scipy.stats.kendalltau([1,1,2],[1,2,3]) = 0.8164965809: C=2, Tx=1
		{[]float64{1, 1, 2}, []float64{1, 2, 3}, 2 / math.Sqrt(6)},
		// joint tie (pair 0,1) counts in neither: C=2, tau=1
		{[]float64{1, 1, 2}, []float64{5, 5, 6}, 1},
	} {
		if got := KendallTauB(c.x, c.y); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("tau(%v, %v) = %v, want %v", c.x, c.y, got, c.want)
		}
	}
	if !math.IsNaN(KendallTauB([]float64{1}, []float64{1})) || !math.IsNaN(KendallTauB([]float64{1, 1}, []float64{1, 2})) {
		t.Error("degenerate inputs should give NaN")
	}
}

// TestCompareFidelity: three jobs by hand. Sim starts 0, 10, 20 and JCTs 10,
// 20, 30; live starts 1, 12, 11 (c before b) and JCTs 11, 22, 33; job d is
// only live.
func TestCompareFidelity(t *testing.T) {
	row := func(id string, start, jct float64) JobRow {
		return JobRow{ID: id, Start: start, JCT: jct, State: "completed"}
	}
	sim := []JobRow{row("a", 0, 10), row("b", 10, 20), row("c", 20, 30)}
	live := []JobRow{row("a", 1, 11), row("b", 12, 22), row("c", 11, 33), row("d", 0, 1)}
	f := CompareFidelity("fifo", sim, live)
	if f.Started != 3 || f.Completed != 3 || len(f.Jobs) != 3 {
		t.Fatalf("started %d completed %d jobs %d", f.Started, f.Completed, len(f.Jobs))
	}
	// |errors| 1, 2, 9 -> mean 4; nearest-rank p95 = 9
	if f.MeanAbsStartErrS != 4 || f.P95AbsStartErrS != 9 {
		t.Errorf("start error mean %v p95 %v", f.MeanAbsStartErrS, f.P95AbsStartErrS)
	}
	// mean JCT 20 vs 22: +10 %; every ratio 1.1
	if math.Abs(f.MeanJCTDiff-0.1) > 1e-12 || math.Abs(f.RatioP50-1.1) > 1e-12 {
		t.Errorf("JCT diff %v ratio p50 %v", f.MeanJCTDiff, f.RatioP50)
	}
	// start order a,b,c vs a,c,b: C=2, D=1 -> 1/3
	if math.Abs(f.KendallTau-1.0/3) > 1e-12 {
		t.Errorf("tau %v, want 1/3", f.KendallTau)
	}
}
