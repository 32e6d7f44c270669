package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpusim/gpusim/reports"
	"github.com/gpusim/gpusim/scenarios"
	"github.com/gpusim/gpusim/sim"
)

// CompareOptions are the flags of `gpusim compare`.
type CompareOptions struct {
	Scenario string
	Demo     bool
	OutDir   string
	Policies []string
	Sets     []string
	Seeds    int
	Seed     int64
	SeedSet  bool
	Parallel int
	Quiet    bool
	// With are saved run directories (e.g. a 'gpusim live' run) added to the
	// report beside the compared runs.
	With []string
}

func init() { register(func(io *IO) *cobra.Command { return NewCmdCompare(io) }) }

// NewCmdCompare builds `gpusim compare`: policies side by side over seeds, with a
// report.
func NewCmdCompare(io *IO) *cobra.Command {
	opts := &CompareOptions{}
	cmd := &cobra.Command{
		Use:   "compare SCENARIO.yaml [-o DIR]",
		Short: "Run policies side by side over several seeds and write a report",
		Long: `Compare runs the scenario's policies (or those given with --policy) for N
seeds and writes a report. The seeds are S, S+1, ..., S+N-1 where S is the
scenario's seed after --set/--seed; seed S+k is applied as --set seed=S+k, so
every derived stream (workload generation, policy randomness) changes with it.
All (seed, policy) runs execute in parallel; results do not depend on the order.

Layout of DIR:

  seed-<S+k>/scenario.yaml     the effective scenario of that seed
  seed-<S+k>/<policy>/          a run directory (as written by 'gpusim run')
  index.html, summary.md, summary.csv, *.png, *.svg
                                the report over all run directories, ordered by
                                seed, then policy label (byte order)

'gpusim report DIR/seed-<S> DIR/seed-<S+1> ... -o R' (seed directories in the
same order) regenerates the same summary.csv.`,
		Example: `  gpusim compare --demo -o out/cmp --seeds 3
  gpusim compare s.yaml --policy fifo --policy easy-backfill --seeds 5 --set workload.synthetic.load=0.9`,
		Args: func(cmd *cobra.Command, args []string) error {
			if opts.Demo && len(args) == 0 || !opts.Demo && len(args) == 1 {
				return nil
			}
			return UsageErrorf("compare needs exactly one SCENARIO file (or --demo)")
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Scenario = args[0]
			}
			opts.SeedSet = cmd.Flags().Changed("seed")
			return runCompare(cmd.Context(), io, opts)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.OutDir, "output", "o", "", "output directory (default out/<scenario name>-compare)")
	f.StringArrayVar(&opts.Policies, "policy", nil, "compare only this policy (label or name; repeatable); unlisted names are added with default params")
	f.StringArrayVar(&opts.Sets, "set", nil, "override a scenario field: path=value (repeatable)")
	f.IntVar(&opts.Seeds, "seeds", DefaultCompareSeeds, "number of seeds: S, S+1, ..., S+N-1 (S = the scenario seed); the report shows mean ± standard deviation over them")
	f.Int64Var(&opts.Seed, "seed", 0, "first seed S (default: the scenario's seed)")
	f.IntVar(&opts.Parallel, "parallel", 0, "runs at once (default: CPU count)")
	f.BoolVarP(&opts.Quiet, "quiet", "q", false, "print nothing but errors")
	f.BoolVar(&opts.Demo, "demo", false, "compare on the embedded demo scenario")
	f.StringArrayVar(&opts.With, "with", nil, "also show this saved run directory in the report (repeatable), e.g. a 'gpusim live' run: the fidelity section compares it with the run of the same seed and policy (docs/live.md)")
	_ = cmd.RegisterFlagCompletionFunc("policy", completePolicies)
	return cmd
}

// DefaultCompareSeeds is how many seeds compare runs when --seeds is not given:
// enough for a spread (mean ± standard deviation) in the report.
const DefaultCompareSeeds = 3

// compareTask is one (seed, policy) run.
type compareTask struct {
	seed  uint64
	label string
	dir   string // seed directory
	run   scenarios.PolicyRun
	fill  scenarios.FillRun // fill experiments
	err   error
}

func runCompare(ctx context.Context, io *IO, opts *CompareOptions) error {
	if opts.Seeds < 1 {
		return UsageErrorf("--seeds must be >= 1")
	}
	var seed *int64
	if opts.SeedSet {
		if opts.Seed < 0 {
			return UsageErrorf("--seed must be >= 0")
		}
		seed = &opts.Seed
	}
	base, err := loadScenario(opts.Scenario, opts.Demo, opts.Sets, seed)
	if err != nil {
		return err
	}
	idx, err := base.Select(opts.Policies)
	if err != nil {
		return UsageError(err)
	}
	labels := make([]string, len(idx))
	for k, i := range idx {
		labels[k] = base.Policies[i].DisplayName()
	}
	slices.Sort(labels)
	out := opts.OutDir
	if out == "" {
		name := base.Name
		if name == "" {
			name = strings.TrimSuffix(filepath.Base(opts.Scenario), filepath.Ext(opts.Scenario))
		}
		out = filepath.Join("out", name+"-compare")
	}
	// Every seed's scenario is loaded (and validated) before anything runs.
	s0 := base.SeedValue()
	seedSets := make([][]string, opts.Seeds)
	seedScen := make([]*scenarios.Scenario, opts.Seeds)
	for k := range seedSets {
		seedSets[k] = append(append([]string(nil), opts.Sets...), "seed="+strconv.FormatUint(s0+uint64(k), 10))
		sc, err := loadScenario(opts.Scenario, opts.Demo, seedSets[k], nil)
		if err != nil {
			return err
		}
		if _, err := sc.Select(opts.Policies); err != nil {
			return UsageError(err)
		}
		seedScen[k] = sc
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return RuntimeError(err)
	}
	// The policies of one seed run concurrently into one seed directory: it is
	// prepared (temporary leftovers removed, stale runs of another scenario
	// dropped) once before, and its manifest written once after.
	keep := make([][]string, opts.Seeds)
	for k, sc := range seedScen {
		var err error
		if keep[k], err = sc.PrepareOutDir(filepath.Join(out, fmt.Sprintf("seed-%d", s0+uint64(k)))); err != nil {
			return RuntimeError(err)
		}
	}
	fill := base.Experiment != nil
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()

	var tasks []*compareTask
	for k := range seedSets {
		sd := s0 + uint64(k)
		for _, l := range labels {
			tasks = append(tasks, &compareTask{seed: sd, label: l, dir: filepath.Join(out, fmt.Sprintf("seed-%d", sd))})
		}
	}
	par := opts.Parallel
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	prog := newProgress(io, opts.Quiet, len(tasks))
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for ti, t := range tasks {
		sets := seedSets[ti/len(labels)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			key := fmt.Sprintf("seed-%d/%s", t.seed, t.label)
			// Each task loads its own copy: Run resolves policies on the scenario.
			sc, err := loadScenario(opts.Scenario, opts.Demo, sets, nil)
			if err == nil {
				_, err = sc.Select(opts.Policies)
			}
			ro := scenarios.RunOptions{Policies: []string{t.label}, OutDir: t.dir, Parallel: 1, SharedOutDir: true,
				Version: VersionString(), Now: time.Now, Progress: func(_ string, p sim.Progress) { prog.update(key, p) }}
			switch {
			case err == nil && fill:
				var fr []scenarios.FillRun
				if fr, err = scenarios.RunFill(ctx, sc, ro); err == nil {
					t.fill = fr[0]
					t.run.Dir = fr[0].Dir
				}
			case err == nil:
				var runs []scenarios.PolicyRun
				if runs, err = scenarios.Run(ctx, sc, ro); err == nil {
					t.run = runs[0]
					t.run.Label = key
				}
			}
			t.err = err
		}()
	}
	wg.Wait()
	prog.finish()
	var runs []scenarios.PolicyRun
	var dirs []string
	for _, t := range tasks {
		if t.err != nil {
			return classifyRunError(fmt.Errorf("seed %d: %w", t.seed, t.err))
		}
		runs = append(runs, t.run)
		dirs = append(dirs, t.run.Dir)
	}
	for k, sc := range seedScen {
		if err := sc.FinishOutDir(filepath.Join(out, fmt.Sprintf("seed-%d", s0+uint64(k))), keep[k], labels); err != nil {
			return RuntimeError(err)
		}
	}
	if fill {
		if err := reports.BuildFillReport(dirs, out); err != nil {
			return RuntimeError(err)
		}
		if !opts.Quiet {
			var fr []scenarios.FillRun
			for _, t := range tasks {
				fr = append(fr, t.fill)
			}
			printFillTable(io.Out, fr)
			fmt.Fprintf(io.Out, "runs in %s/seed-<seed>/<policy>/; report in %s\n", out, filepath.Join(out, "index.html"))
		}
		return nil
	}
	if len(opts.With) > 0 {
		with, err := expandRunDirs(opts.With)
		if err != nil {
			return UsageError(fmt.Errorf("--with: %w", err))
		}
		dirs = append(dirs, with...)
	}
	if err := buildReport(dirs, out); err != nil {
		return RuntimeError(err)
	}
	if opts.Quiet {
		return nil
	}
	printCompareTable(io.Out, labels, runs, opts.Seeds)
	fmt.Fprintf(io.Out, "runs in %s/seed-<seed>/<policy>/; report in %s\n", out, filepath.Join(out, "index.html"))
	return nil
}
