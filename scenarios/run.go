package scenarios

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/reports"
	"github.com/gpusim/gpusim/sim"
)

// RunOptions control Run.
type RunOptions struct {
	// Policies selects policies by label or name (nil = all in the scenario); a name
	// the scenario does not list is added with default parameters.
	Policies []string
	// OutDir, if set, receives one subdirectory per policy (summary.json, jobs.csv,
	// jobs.parquet, timeseries.parquet, events.parquet).
	OutDir string
	// Parallel bounds concurrent policy runs (default GOMAXPROCS). Results do not
	// depend on it.
	Parallel int
	// Version is written into provenance.
	Version string
	// Now reads the wall clock for wall_seconds (injected by the CLI; nil = zero).
	Now func() time.Time
	// Progress is called from each run's goroutine (must be safe for concurrent use).
	Progress func(policy string, p sim.Progress)
	// NoLog disables the event log (and events.parquet).
	NoLog bool
	// SharedOutDir says the caller runs several Runs into OutDir at once and
	// prepares it and writes its manifest itself (Scenario.PrepareOutDir and
	// FinishOutDir); Run then only writes its policy directories.
	SharedOutDir bool
}

// PolicyRun is the outcome of one policy.
type PolicyRun struct {
	Label   string
	Result  *sim.Result
	Summary *reports.Summary
	Wall    time.Duration
	Dir     string // output directory ("" when not written)
}

// Select resolves the policies to run: indexes into s.Policies (adding unlisted
// names with default parameters). Unknown names are an error.
func (s *Scenario) Select(names []string) ([]int, error) {
	if len(names) == 0 {
		idx := make([]int, len(s.Policies))
		for i := range idx {
			idx[i] = i
		}
		return idx, nil
	}
	var idx []int
	seen := map[int]bool{}
	for _, n := range names {
		found := -1
		for i := range s.Policies {
			if s.Policies[i].DisplayName() == n || s.Policies[i].Label == "" && s.Policies[i].Name == n {
				found = i
				break
			}
		}
		if found < 0 {
			p := PolicySpec{Name: n}
			s.Policies = append(s.Policies, p)
			if fe := s.validate(); len(fe) > 0 {
				s.Policies = s.Policies[:len(s.Policies)-1]
				return nil, fmt.Errorf("--policy %s: %w", n, s.problems(fe))
			}
			found = len(s.Policies) - 1
		}
		if !seen[found] {
			idx = append(idx, found)
			seen[found] = true
		}
	}
	return idx, nil
}

// Run builds the cluster and workload once and runs the selected policies, each in
// its own engine (in parallel up to opts.Parallel). Each result is identical to
// running that policy alone. Results come back in selection order.
func Run(ctx context.Context, s *Scenario, opts RunOptions) ([]PolicyRun, error) {
	if s.Experiment != nil {
		return nil, s.fieldErr("experiment", fmt.Errorf("this scenario is a %s experiment, not a replay: gpusim run, compare and report handle it (docs/fgd.md); this command does not", s.Experiment.Kind))
	}
	if s.Federation != nil {
		return s.runFederation(ctx, opts)
	}
	idx, err := s.Select(opts.Policies)
	if err != nil {
		return nil, err
	}
	nodes, err := s.Nodes()
	if err != nil {
		return nil, err
	}
	cluster, err := sim.NewCluster(nodes)
	if err != nil {
		return nil, s.fieldErr("cluster", err)
	}
	if cluster.NumGPUs() == 0 {
		return nil, s.fieldErr("cluster", fmt.Errorf("the cluster has no GPUs"))
	}
	jobs, _, err := s.Jobs(cluster)
	if err != nil {
		return nil, err
	}
	keep, err := s.openOutDir(opts.OutDir, opts.SharedOutDir)
	if err != nil {
		return nil, err
	}
	shared := &sharedJobs{jobs: jobs, users: len(idx)}
	jobs = nil
	out := make([]PolicyRun, len(idx))
	err = parallel(len(idx), opts.Parallel, func(k int) (err error) {
		out[k], err = s.runOne(ctx, cluster, shared, idx[k], opts)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := finishRuns(s, opts, keep, out, func(r *PolicyRun) string { return r.Label }); err != nil {
		return nil, err
	}
	return out, nil
}

// sharedJobs hands the workload to the policies of one Run and drops it once
// each of them has built its engine (the engine keeps its own copy of every
// spec), so the workload is not held twice in memory while the runs go on.
type sharedJobs struct {
	mu    sync.Mutex
	jobs  []sim.JobSpec
	users int // runs that have not called done yet
}

// get returns the workload; valid until this run calls done.
func (sj *sharedJobs) get() []sim.JobSpec {
	sj.mu.Lock()
	defer sj.mu.Unlock()
	return sj.jobs
}

// done says one run no longer needs the workload; the last one drops it.
func (sj *sharedJobs) done() {
	sj.mu.Lock()
	defer sj.mu.Unlock()
	if sj.users--; sj.users <= 0 {
		sj.jobs = nil
	}
}

func (s *Scenario) runOne(ctx context.Context, cluster *sim.Cluster, shared *sharedJobs, i int, opts RunOptions) (PolicyRun, error) {
	pol, err := s.Policy(i)
	if err != nil {
		shared.done()
		return PolicyRun{}, err
	}
	label := s.Policies[i].DisplayName()
	cfg, err := s.engineConfig(pol, cluster, nil)
	if err != nil {
		shared.done()
		return PolicyRun{}, err
	}
	if cfg.Failures, err = s.FailureConfig(i, cluster); err != nil {
		shared.done()
		return PolicyRun{}, err
	}
	cfg.NoLog = opts.NoLog
	if opts.Progress != nil {
		cfg.Progress = func(p sim.Progress) { opts.Progress(label, p) }
	}
	var t0 time.Time
	if opts.Now != nil {
		t0 = opts.Now()
	}
	// With an output directory, events.parquet is written while the engine
	// runs (from its published log), in the policy's temporary directory.
	var feed *sim.LogFeed
	if opts.OutDir != "" && !cfg.NoLog {
		feed = sim.NewLogFeed()
		cfg.LogFeed = feed
	}
	cfg.Jobs = shared.get()
	e, err := sim.NewEngine(cfg)
	cfg.Jobs = nil
	shared.done()
	if err != nil {
		return PolicyRun{}, fmt.Errorf("policy %s: %w", label, err)
	}
	run := func() (*sim.Result, time.Duration, error) {
		res, err := e.Run(ctx)
		if err != nil {
			var ce *policies.ConfigError
			if errors.As(err, &ce) { // the run stopped on its configuration: locate it as validate does
				return nil, 0, fmt.Errorf("policy %s: %w", label, &Error{File: s.file, Problems: s.policyProblems(i, ce)})
			}
			return nil, 0, fmt.Errorf("policy %s: %w", label, err)
		}
		var wall time.Duration
		if opts.Now != nil {
			wall = opts.Now().Sub(t0)
		}
		res.Policy = label
		return res, wall, nil
	}
	prov := reports.Provenance{Version: opts.Version, GoVersion: runtime.Version(), Seed: s.SeedValue(), Scenario: s.Name, ScenarioSHA256: s.hash}
	summarizer := func(res *sim.Result, wall time.Duration) func() *reports.Summary {
		return func() *reports.Summary {
			sum := reports.SummarizeWith(res, prov, wall, s.Prices())
			if qq, ok := pol.(policies.QueueQuotas); ok {
				for name, g := range sum.PerQueue {
					if n, ok := qq.QueueNominalGPUs(name); ok && n > 0 {
						g.NominalGPUs = n
						sum.PerQueue[name] = g
					}
				}
			}
			inner := pol
			if l, ok := pol.(labeled); ok {
				inner = l.Policy
			}
			if fr, ok := inner.(policies.ForecastReporter); ok {
				if st, on := fr.ForecastStats(res.End); on {
					sum.Forecast = reports.NewForecastSummary(res, st.MinGPUs, st.HeldGPUSeconds, st.QueueHeldGPUSeconds, st.Predictions, st.Hits, st.Misses, st.Early, st.Open)
				}
			}
			return sum
		}
	}
	if opts.OutDir == "" {
		res, wall, err := run()
		if err != nil {
			return PolicyRun{}, err
		}
		return PolicyRun{Label: label, Result: res, Wall: wall, Summary: summarizer(res, wall)()}, nil
	}
	// The summary is computed while the data files are written, into a temporary
	// directory renamed into place when complete (writePolicyDir).
	var pr PolicyRun
	dir, err := writePolicyDir(opts.OutDir, label, func(dir string) error {
		var events func() error
		if feed != nil {
			events = reports.StartEventsFeed(dir, feed)
		}
		res, wall, err := run()
		if err != nil {
			if events != nil {
				events() // returns sim.ErrRunAborted once the run has ended
			}
			return err
		}
		pr = PolicyRun{Label: label, Result: res, Wall: wall}
		if events != nil {
			pr.Summary, err = reports.WriteRunDirFuncStreamed(dir, res, summarizer(res, wall), events)
		} else {
			pr.Summary, err = reports.WriteRunDirFunc(dir, res, summarizer(res, wall))
		}
		return err
	})
	if err != nil {
		return PolicyRun{}, err
	}
	pr.Dir = dir
	return pr, nil
}

// saveTo writes dir/scenario.yaml (creating dir); nothing when dir is "".
func (s *Scenario) saveTo(dir string) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return s.Save(filepath.Join(dir, "scenario.yaml"))
}

// parallel runs fn(0..n-1) on at most par goroutines (GOMAXPROCS when par <= 0)
// and returns the error of the lowest index that failed, so the outcome does not
// depend on scheduling.
func parallel(n, par int, fn func(k int) error) error {
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	errs := make([]error, n)
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for k := 0; k < n; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[k] = fn(k)
		}(k)
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// openOutDir readies dir for a run's results: it clears what an earlier run
// there owned and refuses foreign content (PrepareOutDir; skipped when shared,
// as when a sweep writes several runs into one directory), then saves the
// effective scenario. keep lists what PrepareOutDir kept for the manifest.
func (s *Scenario) openOutDir(dir string, shared bool) (keep []string, err error) {
	if !shared {
		if keep, err = s.PrepareOutDir(dir); err != nil {
			return nil, err
		}
	}
	if err := s.saveTo(dir); err != nil {
		return nil, err
	}
	return keep, nil
}
