package scenarios

import (
	"context"
	"math"
	"testing"
)

// TestSiaHeterogeneousExample: the Sia-cluster example (docs/shapes.md) splits
// its jobs into full nodes plus a remainder (ee9e8c-1277: 8+8+4), completes
// them all, and runs each
// 1-GPU job at its GPU type's throughput relative to the reference RTX 2080 Ti
// (T4 0.21/0.17, A100 1/0.17, RTX 2080 Ti 1), with all three types used.
func TestSiaHeterogeneousExample(t *testing.T) {
	sc, err := Load("examples/sia-heterogeneous.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := Run(context.Background(), sc, RunOptions{NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0.21 / 0.17, 1 / 0.17, 1}
	for _, r := range runs {
		seen := make([]int, len(want))
		unequal := 0
		for i := range r.Result.Jobs {
			j := &r.Result.Jobs[i]
			if j.Spec.Unequal() {
				unequal++
			}
			if j.Spec.TotalGPUs() != 1 {
				continue
			}
			speed := j.Spec.Duration.Seconds() / (j.End - j.FirstStart).Seconds()
			k := -1
			for i, w := range want {
				if math.Abs(speed/w-1) < 1e-3 {
					k = i
				}
			}
			if k < 0 {
				t.Fatalf("%s: job %s ran at speed %g, want one of %v", r.Label, j.Spec.ID, speed, want)
			}
			seen[k]++
		}
		t.Logf("%s: 1-GPU jobs on T4, A100, RTX 2080 Ti: %v; unequal gangs %d; completed %d", r.Label, seen, unequal, r.Summary.Jobs.Completed)
		if r.Summary.Jobs.Completed != len(r.Result.Jobs) || slicesMin(seen) == 0 || unequal != 1 {
			t.Errorf("%s: %d of %d completed, 1-GPU jobs per type %v, %d unequal gangs (want 1)", r.Label, r.Summary.Jobs.Completed, len(r.Result.Jobs), seen, unequal)
		}
	}
}

func slicesMin(x []int) int {
	m := x[0]
	for _, v := range x {
		m = min(m, v)
	}
	return m
}
