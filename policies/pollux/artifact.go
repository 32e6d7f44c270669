package pollux

import (
	"fmt"
	"runtime"
	"sync"

	pm "github.com/gpusim/gpusim/workloads/pollux"
)

// Policies are the artifact's three policies, in the order of its results.
var Policies = []string{"tiresias", "optimus", "pollux"}

// Loads are the relative loads of the embedded workloads: "1.0" is
// data/workloads (160 jobs each), "0.5" data/workloads-0.5 (80 jobs).
var Loads = []string{"1.0", "0.5"}

// ArtifactWorkload reads the embedded workload-N.csv (1..8) of a load.
func ArtifactWorkload(load string, n int) ([]pm.Job, error) {
	dir := "data/workloads"
	switch load {
	case "1.0":
	case "0.5":
		dir = "data/workloads-0.5"
	default:
		return nil, fmt.Errorf("pollux: unknown load %q (want 1.0 or 0.5)", load)
	}
	name := fmt.Sprintf("%s/workload-%d.csv", dir, n)
	f, err := pm.DataFS().Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return pm.ReadWorkload(f, name)
}

// Run is one (workload, policy) simulation of a batch.
type Run struct {
	Workload string
	Jobs     []pm.Job
	Policy   string
	Result   *Result
	Err      error
}

// RunAll simulates every run with up to `parallel` goroutines (GOMAXPROCS when
// < 1). Runs are independent, so results do not depend on parallelism. The
// first error (in run order) is returned.
func RunAll(runs []*Run, cfg Config, parallel int) error {
	if parallel < 1 {
		parallel = runtime.GOMAXPROCS(0)
	}
	var wg sync.WaitGroup
	next := make(chan *Run)
	for range min(parallel, len(runs)) {
		wg.Go(func() {
			for r := range next {
				r.Result, r.Err = Simulate(r.Jobs, r.Policy, cfg)
			}
		})
	}
	for _, r := range runs {
		next <- r
	}
	close(next)
	wg.Wait()
	for _, r := range runs {
		if r.Err != nil {
			return fmt.Errorf("%s under %s: %w", r.Workload, r.Policy, r.Err)
		}
	}
	return nil
}

// ArtifactRuns builds the runs of the embedded workloads 1..8 of a load under
// the given policies (workload-major order).
func ArtifactRuns(load string, policies []string) ([]*Run, error) {
	var runs []*Run
	for w := 1; w <= 8; w++ {
		jobs, err := ArtifactWorkload(load, w)
		if err != nil {
			return nil, err
		}
		for _, p := range policies {
			runs = append(runs, &Run{Workload: fmt.Sprintf("workload-%d", w), Jobs: jobs, Policy: p})
		}
	}
	return runs, nil
}
