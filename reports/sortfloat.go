package reports

import (
	"math"
	"slices"
	"sync"
)

// radixMin is the length from which sortFloats uses a radix sort.
const radixMin = 1 << 12

// radixScratch holds the two key buffers of sortFloats between calls.
var radixScratch = sync.Pool{New: func() any { return new([2][]uint64) }}

// sortFloats sorts xs ascending, as slices.Sort does; long inputs without NaN
// use an LSD radix sort (8-bit digits, digits equal in every key skipped),
// several times faster than a comparison sort on the million-value slices of
// a large run's summary. The order of values that compare equal is the only
// possible difference: -0 comes before +0, which slices.Sort leaves in any
// order; every statistic computed from the result is the same.
func sortFloats(xs []float64) {
	n := len(xs)
	if n < radixMin {
		slices.Sort(xs)
		return
	}
	sc := radixScratch.Get().(*[2][]uint64)
	defer radixScratch.Put(sc)
	if cap(sc[0]) < n {
		sc[0], sc[1] = make([]uint64, n), make([]uint64, n)
	}
	src, dst := sc[0][:n], sc[1][:n]
	// Map each float to a key whose unsigned order is the float order:
	// negatives have every bit flipped, non-negatives the sign bit set.
	for i, x := range xs {
		if x != x {
			slices.Sort(xs) // NaN: slices.Sort's order
			return
		}
		k := math.Float64bits(x)
		if k>>63 != 0 {
			k = ^k
		} else {
			k |= 1 << 63
		}
		src[i] = k
	}
	var cnt [256]int
	for shift := uint(0); shift < 64; shift += 8 {
		clear(cnt[:])
		for _, k := range src {
			cnt[byte(k>>shift)]++
		}
		if cnt[byte(src[0]>>shift)] == n {
			continue
		}
		pos := 0
		for b, c := range cnt {
			cnt[b] = pos
			pos += c
		}
		for _, k := range src {
			b := byte(k >> shift)
			dst[cnt[b]] = k
			cnt[b]++
		}
		src, dst = dst, src
	}
	for i, k := range src {
		if k>>63 != 0 {
			k &^= 1 << 63
		} else {
			k = ^k
		}
		xs[i] = math.Float64frombits(k)
	}
}
