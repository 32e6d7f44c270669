package reports

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// sortFloats orders as slices.Sort does (NaN inputs fall back to it; -0 and
// +0 may differ in order only).
func TestSortFloats(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	gens := map[string]func() float64{
		"uniform": func() float64 { return rng.Float64()*2e6 - 1e6 },
		"zeros":   func() float64 { return []float64{0, math.Copysign(0, -1), 1, -1}[rng.IntN(4)] },
		"skewed":  func() float64 { return math.Exp(rng.NormFloat64() * 5) },
		"specials": func() float64 {
			return []float64{math.Inf(1), math.Inf(-1), math.MaxFloat64, -math.SmallestNonzeroFloat64, 3}[rng.IntN(5)]
		},
		"nan":   func() float64 { return []float64{math.NaN(), 1, -2}[rng.IntN(3)] },
		"const": func() float64 { return 42 },
	}
	for name, gen := range gens {
		for _, n := range []int{0, 1, 100, radixMin, radixMin*3 + 7} {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = gen()
			}
			want := slices.Clone(xs)
			slices.Sort(want)
			sortFloats(xs)
			for i := range xs {
				same := xs[i] == want[i] || math.IsNaN(xs[i]) && math.IsNaN(want[i])
				if !same {
					t.Fatalf("%s n=%d: [%d] = %v, want %v", name, n, i, xs[i], want[i])
				}
			}
			if m, w := mean(xs), mean(want); m != w && !(math.IsNaN(m) && math.IsNaN(w)) {
				t.Errorf("%s n=%d: mean differs", name, n)
			}
		}
	}
}

func BenchmarkSortFloats(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]float64, 1<<20)
	for i := range src {
		src[i] = math.Exp(rng.NormFloat64() * 3)
	}
	xs := make([]float64, len(src))
	for _, f := range []struct {
		name string
		sort func([]float64)
	}{{"radix", sortFloats}, {"slices", slices.Sort[[]float64]}} {
		b.Run(f.name, func(b *testing.B) {
			for b.Loop() {
				copy(xs, src)
				f.sort(xs)
			}
		})
	}
}
