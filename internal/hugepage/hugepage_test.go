package hugepage

import "testing"

// Advise accepts any slice (empty, small, large, unaligned) and leaves its
// contents alone.
func TestAdvise(t *testing.T) {
	Advise([]int(nil))
	Advise(make([]byte, 10))
	big := make([]int64, (minBytes+3<<20)/8)
	big[len(big)-1] = 7
	Advise(big)
	Advise(big[1:])
	if big[len(big)-1] != 7 || big[0] != 0 {
		t.Fatal("contents changed")
	}
}
