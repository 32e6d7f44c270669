package reports

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestAppendSecsMatchesAppendFloat checks the integer fast path of appendSecs
// against strconv's shortest formatting on microsecond values of every
// magnitude (and on values that are not whole microseconds).
func TestAppendSecsMatchesAppendFloat(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	check := func(x float64) {
		t.Helper()
		got := string(appendSecs(nil, x))
		want := strconv.FormatFloat(x, 'f', -1, 64)
		if got != want {
			t.Fatalf("appendSecs(%v) = %q, want %q", x, got, want)
		}
	}
	for _, us := range []int64{1, -1, 10, 999999, 1000000, 1000001, 1 << 52, 1<<32*1e6 - 1, 4294967295999999, 86400 * 1e6, 123456789012} {
		check(float64(us) / 1e6)
	}
	for _, x := range []float64{0, math.Copysign(0, -1), 0.5, 1e-7, 1.0000001, 4294967296, 5e9, 1e21, 0.1 + 0.2, math.Inf(1), math.Inf(-1), 1.234567} {
		check(x)
	}
	for i := 0; i < 300_000; i++ {
		shift := r.IntN(53)
		us := r.Int64N(1<<shift + 1)
		if r.IntN(2) == 0 {
			us = -us
		}
		check(float64(us) / 1e6)
		check(r.Float64() * math.Pow(10, float64(r.IntN(12)-3)))
	}
}

// TestWholeMicros: only exact microsecond values below 2^32 s take the fast path.
func TestWholeMicros(t *testing.T) {
	for _, c := range []struct {
		x  float64
		us int64
		ok bool
	}{{1.5, 1500000, true}, {-0.000001, -1, true}, {0, 0, false}, {1e-7, 0, false}, {4294967296, 0, false}, {math.NaN(), 0, false}, {0.1234567, 0, false}} {
		us, ok := wholeMicros(c.x)
		if ok != c.ok || ok && us != c.us {
			t.Errorf("wholeMicros(%v) = %d, %v; want %d, %v", c.x, us, ok, c.us, c.ok)
		}
	}
}
