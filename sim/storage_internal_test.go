package sim

import "testing"

// TestStorageNext works the checkpoint positions by hand, with and without a
// stagger offset.
func TestStorageNext(t *testing.T) {
	st := &storageState{}
	if got := st.next(0, 0, 100); got != 100 {
		t.Errorf("next(0) = %d, want 100", got)
	}
	if got := st.next(0, 100, 100); got != 200 {
		t.Errorf("next(100) = %d, want 200", got)
	}
	st.off = []Duration{30, 0}
	for _, c := range []struct{ done, want Duration }{{0, 30}, {29, 30}, {30, 130}, {129, 130}, {130, 230}} {
		if got := st.next(0, c.done, 100); got != c.want {
			t.Errorf("offset 30: next(%d) = %d, want %d", c.done, got, c.want)
		}
	}
	if got := st.next(1, 0, 100); got != 100 {
		t.Errorf("offset 0: next(0) = %d, want 100", got)
	}
	// the offset depends on the seed and the ID only
	a1, a1again := staggerHash(1, "a"), staggerHash(1, string([]byte{'a'}))
	if a1 != a1again || a1 == staggerHash(2, "a") || a1 == staggerHash(1, "b") {
		t.Error("staggerHash is not a function of (seed, id)")
	}
}
