package cli

import (
	"os"
	"runtime/debug"
	"testing"
)

// tuneGC leaves the collector alone when GOGC is set, and with GOMEMLIMIT
// alone sets only runGCPercent.
func TestTuneGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	old, had := os.LookupEnv("GOGC")
	defer func() {
		if had {
			os.Setenv("GOGC", old)
		} else {
			os.Unsetenv("GOGC")
		}
	}()
	os.Setenv("GOGC", "60")
	debug.SetGCPercent(77)
	tuneGC()
	if got := debug.SetGCPercent(60); got != 77 {
		t.Errorf("GOGC set: GC percent %d, want 77 (left alone)", got)
	}
	os.Unsetenv("GOGC")
	t.Setenv("GOMEMLIMIT", "1GiB")
	tuneGC()
	if got := debug.SetGCPercent(60); got != runGCPercent {
		t.Errorf("GOGC unset: GC percent %d, want %d", got, runGCPercent)
	}
}

// The soft limit is the floor for small live heaps and 1.4x the live heap
// above it, so a large run keeps 40% headroom instead of thrashing.
func TestRunMemLimit(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int64
	}{{0, runMemFloor}, {500 << 20, runMemFloor}, {1 << 30, 1 << 30 * 14 / 10}, {10 << 30, 10 << 30 * 14 / 10}, {1 << 63, 1<<63 - 1}} {
		got := runMemLimit(c.live)
		if d := got - c.want; d < -1<<20 || d > 1<<20 {
			if !(c.live == 1<<63 && got > 1<<61) {
				t.Errorf("runMemLimit(%d) = %d, want %d", c.live, got, c.want)
			}
		}
	}
}
