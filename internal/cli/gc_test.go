package cli

import (
	"os"
	"runtime/debug"
	"testing"
)

// tuneGC sets runGCPercent only when GOGC is not in the environment.
func TestTuneGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	old, had := os.LookupEnv("GOGC")
	defer func() {
		if had {
			os.Setenv("GOGC", old)
		} else {
			os.Unsetenv("GOGC")
		}
	}()
	os.Unsetenv("GOGC")
	tuneGC()
	if got := debug.SetGCPercent(100); got != runGCPercent {
		t.Errorf("GOGC unset: GC percent %d, want %d", got, runGCPercent)
	}
	os.Setenv("GOGC", "100")
	tuneGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=100 set: GC percent %d, want 100 (left alone)", got)
	}
}
