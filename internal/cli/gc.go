package cli

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// The garbage collector policy of `gpusim run` when neither GOGC nor
// GOMEMLIMIT is set. A run's heap is mostly long-lived (every job's state and
// the event log, kept until the output files are written), so what bounds the
// peak RSS is the headroom above the live heap, and what costs CPU is how
// often that headroom fills.
//
// Go's default GOGC=100 lets the heap grow to twice the live heap; the 1M-job
// benchmark (BenchmarkRunCommand1M) then peaks near 1.5 GiB. A fixed memory
// limit (e.g. GOMEMLIMIT=900MiB) holds it under 1 GiB with fewer collections,
// but a run whose live heap nears the limit collects without pause
// (thrashing). So the limit follows the run: after every collection it is
// set to max(runMemFloor, runLiveFactor x live heap). Below runMemFloor the
// heap may grow freely up to GOGC's goal (few collections while the trace
// loads and the engine is built); above it, the headroom is 40% of the live
// heap, as with GOGC=40, so a larger run never thrashes and its peak stays
// near 1.4x its live heap. GOGC or GOMEMLIMIT in the environment turns the
// policy off (GOGC then governs, as for any Go program; GOMEMLIMIT alone gets
// GOGC=runGCPercent).
const (
	runGCPercent  = 100
	runMemFloor   = 900 << 20
	runLiveFactor = 1.4
)

var gcPolicyOnce sync.Once

// tuneGC applies the policy above unless the user set GOGC or GOMEMLIMIT.
func tuneGC() {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	debug.SetGCPercent(runGCPercent)
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return
	}
	gcPolicyOnce.Do(func() {
		setRunMemLimit()
		armGCHook()
	})
}

// runMemLimit is the soft memory limit for a live heap of live bytes.
func runMemLimit(live uint64) int64 {
	return max(runMemFloor, int64(math.Min(float64(live)*runLiveFactor, math.MaxInt64/2)))
}

var liveSample = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}

// setRunMemLimit sets the limit from the live heap of the last collection.
// It runs on the finalizer goroutine only (and once before it starts).
func setRunMemLimit() {
	metrics.Read(liveSample)
	if liveSample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	debug.SetMemoryLimit(runMemLimit(liveSample[0].Value.Uint64()))
}

// gcHook is an object whose finalizer runs once after each collection: it
// resets the limit and allocates the next hook. It holds a pointer so it is
// not a tiny allocation (whose finalizer may be delayed).
type gcHook struct{ _ *int }

func armGCHook() {
	runtime.SetFinalizer(&gcHook{}, func(*gcHook) {
		setRunMemLimit()
		armGCHook()
	})
}
