package pollux

import (
	"math"
	"testing"

	"github.com/gpusim/gpusim/sim"
)

// TestAdaptiveRateByHand: the tuned configuration (4 GPUs on one node, the
// job's batch) runs at rate 1 in every epoch, so a fixed-batch job's work is
// its TunedRunTime; twice the batch on the same GPUs runs at gain(2b, e) ·
// T_tuned / (T(2b) · gain(b, e)), the formula of simulator.py:Job.step.
func TestAdaptiveRateByHand(t *testing.T) {
	apps, err := Apps()
	if err != nil {
		t.Fatal(err)
	}
	a := apps["cifar10"]
	b := 4 * a.MinLocalBsz
	m, err := NewElasticModel(Job{Name: "x", App: "cifar10", Replicas: 4, BatchSize: b}, 4)
	if err != nil {
		t.Fatal(err)
	}
	if got := Placement([]sim.NodeID{3, 1, 3, 3, 1}, nil); len(got) != 2 || got[0] != 3 || got[1] != 2 {
		t.Fatalf("Placement %v, want [3 2]", got)
	}
	at, acc := a.FixedBatch(b, 4)
	for e := range a.MaxEpochs {
		r, _, _, err := m.AdaptiveRate([]int{4}, at, acc, e)
		if err != nil || math.Abs(r-1) > 1e-12 {
			t.Fatalf("epoch %d: tuned rate %v (%v), want 1", e, r, err)
		}
	}
	gain := func(batch float64, e int) float64 {
		sqr, vr, _ := a.GradStats(batch, e)
		return (vr + sqr) / (vr/(batch/float64(a.InitBatchSize)) + sqr)
	}
	st1, sy1, _ := a.Throughput([]int{4}, at)
	at2, acc2 := a.FixedBatch(2*b, 4)
	st2, sy2, _ := a.Throughput([]int{4}, at2)
	t1 := st1 + (st1-sy1)*float64(acc)
	t2 := st2 + (st2-sy2)*float64(acc2)
	for _, e := range []int{0, 10} {
		want := gain(float64(4*at2*(acc2+1)), e) * t1 / (t2 * gain(float64(b), e))
		r, st, _, err := m.AdaptiveRate([]int{4}, at2, acc2, e)
		if err != nil || math.Abs(r/want-1) > 1e-12 || st != st2 {
			t.Errorf("epoch %d: rate %v step %v (%v), want %v and %v", e, r, st, err, want, st2)
		}
	}
	if m.EpochEnd(a.MaxEpochs) != m.Duration() || m.EpochEnd(0) <= 0 {
		t.Errorf("EpochEnd: %s .. %s, duration %s", m.EpochEnd(0), m.EpochEnd(a.MaxEpochs), m.Duration())
	}
}

// TestNDCornerByHand: atAnywhere at the largest node and replica counts the
// interpolation is linear in the local batch along the points there (10 →
// (1, 0.5), 20 → (3, 1.5)): batch 15 gives (2, 1), also 10⁻⁶ off the corner
// as throughputAnywhere queries it; batch 25 is outside.
func TestNDCornerByHand(t *testing.T) {
	in := newNDInterp([][3]float64{{1, 1, 10}, {1, 1, 20}, {2, 2, 10}, {2, 4, 10}, {2, 4, 20}},
		[][2]float64{{9, 9}, {9, 9}, {9, 9}, {1, 0.5}, {3, 1.5}})
	for _, q := range [][3]float64{{2, 4, 15}, {2 - 1.1e-6, 4 - 0.7e-6, 15}} {
		y, ok := in.atAnywhere(q)
		if !ok || math.Abs(y[0]-2) > 1e-12 || math.Abs(y[1]-1) > 1e-12 {
			t.Errorf("at %v = %v %v, want (2, 1)", q, y, ok)
		}
	}
	if _, ok := in.atAnywhere([3]float64{2, 4, 25}); ok {
		t.Error("batch 25 at the corner: ok, want outside")
	}
}
