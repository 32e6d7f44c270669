package cli

import (
	"os"
	"runtime/debug"
)

// runGCPercent is the garbage collector target of `gpusim run`
// when GOGC is not set: a run's heap is mostly long-lived (every job's state
// and the event log, kept until the output files are written), and with Go's
// default of 100 the heap grows to twice that before each collection; 40 holds
// the 1M-job benchmark (BenchmarkRunCommand1M) under 1 GiB peak RSS for a few
// percent more CPU. GOGC in the environment (e.g. GOGC=100 for speed, or a
// GOMEMLIMIT) overrides it.
const runGCPercent = 40

// tuneGC applies runGCPercent unless the user set GOGC.
func tuneGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(runGCPercent)
	}
}
