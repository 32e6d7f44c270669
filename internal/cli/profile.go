package cli

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// startProfiles starts a CPU profile into cpuPath (when not "") and returns a
// function that stops it and, when memPath is not "", writes a heap profile
// (sampled allocations since the start of the process, after a GC so in-use
// figures are current) into memPath. Both files are for `go tool pprof`.
// Errors name the file and are runtime errors (exit 1); stop must be called
// exactly once, also when the command fails.
func startProfiles(cpuPath, memPath string) (stop func() error, err error) {
	var cpu *os.File
	if cpuPath != "" {
		if cpu, err = os.Create(cpuPath); err != nil {
			return nil, RuntimeError(fmt.Errorf("--cpuprofile: %w", err))
		}
		if err = pprof.StartCPUProfile(cpu); err != nil {
			cpu.Close()
			return nil, RuntimeError(fmt.Errorf("--cpuprofile %s: %w", cpuPath, err))
		}
	}
	return func() error {
		var first error
		if cpu != nil {
			pprof.StopCPUProfile()
			if err := cpu.Close(); err != nil {
				first = RuntimeError(fmt.Errorf("--cpuprofile %s: %w", cpuPath, err))
			}
		}
		if memPath != "" {
			f, err := os.Create(memPath)
			if err != nil {
				return RuntimeError(fmt.Errorf("--memprofile: %w", err))
			}
			runtime.GC()
			err = pprof.Lookup("allocs").WriteTo(f, 0)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil && first == nil {
				first = RuntimeError(fmt.Errorf("--memprofile %s: %w", memPath, err))
			}
		}
		return first
	}, nil
}
