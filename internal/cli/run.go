package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/reports"
	"github.com/gpusim/gpusim/scenarios"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/traces"
)

// RunOptions are the flags of `gpusim run`.
type RunOptions struct {
	Scenario string
	Demo     bool
	OutDir   string
	Policies []string
	Sets     []string
	Seed     int64
	SeedSet  bool
	Quiet    bool
	Parallel int
	NoEvents bool
	// CPUProfile and MemProfile, when set, receive pprof profiles of the run
	// (hidden flags --cpuprofile and --memprofile).
	CPUProfile string
	MemProfile string
}

func init() { register(func(io *IO) *cobra.Command { return NewCmdRun(io, nil) }) }

// NewCmdRun builds `gpusim run`. runF replaces the behaviour in tests of flag parsing.
func NewCmdRun(io *IO, runF func(*RunOptions) error) *cobra.Command {
	opts := &RunOptions{}
	cmd := &cobra.Command{
		Use:   "run SCENARIO.yaml",
		Short: "Run a scenario's policies and write result files",
		Long: `Run replays the scenario's workload on its cluster under each policy (in
parallel; each result is identical to running that policy alone) and writes, per
policy, DIR/<policy>/{summary.json, jobs.csv, jobs.parquet, timeseries.parquet,
events.parquet}. With --demo it runs the embedded demo scenario (no files needed).`,
		Example: `  gpusim run scenarios/examples/philly-vc.yaml -o out/philly
  gpusim run --demo -o out/demo
  gpusim run s.yaml --policy fifo --policy easy-backfill --set seed=7 --set workload.synthetic.load=0.9`,
		Args: func(cmd *cobra.Command, args []string) error {
			if opts.Demo && len(args) == 0 || !opts.Demo && len(args) == 1 {
				return nil
			}
			return UsageErrorf("run needs exactly one SCENARIO file (or --demo)")
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Scenario = args[0]
			}
			opts.SeedSet = cmd.Flags().Changed("seed")
			if runF != nil {
				return runF(opts)
			}
			stop, err := startProfiles(opts.CPUProfile, opts.MemProfile)
			if err != nil {
				return err
			}
			err = runRun(cmd.Context(), io, opts)
			if perr := stop(); err == nil {
				err = perr
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.OutDir, "output", "o", "", "output directory (default out/<scenario name>)")
	f.StringArrayVar(&opts.Policies, "policy", nil, "run only this policy (label or name; repeatable); unlisted names are added with default params")
	f.StringArrayVar(&opts.Sets, "set", nil, "override a scenario field: path=value (repeatable), e.g. --set seed=7")
	f.Int64Var(&opts.Seed, "seed", 0, "override the scenario seed")
	f.BoolVarP(&opts.Quiet, "quiet", "q", false, "print nothing but errors")
	f.IntVar(&opts.Parallel, "parallel", 0, "policies run at once (default: CPU count)")
	f.BoolVar(&opts.NoEvents, "no-events", false, "do not record the event log (events.parquet is then empty)")
	f.BoolVar(&opts.Demo, "demo", false, "run the embedded demo scenario")
	f.StringVar(&opts.CPUProfile, "cpuprofile", "", "write a CPU profile of the run to this file (for go tool pprof)")
	f.StringVar(&opts.MemProfile, "memprofile", "", "write a heap (allocation) profile at the end of the run to this file")
	_ = f.MarkHidden("cpuprofile")
	_ = f.MarkHidden("memprofile")
	_ = cmd.RegisterFlagCompletionFunc("policy", completePolicies)
	return cmd
}

// loadScenario loads a scenario (file or the embedded demo) with overrides, mapping
// errors to exit code 2.
func loadScenario(path string, demo bool, sets []string, seed *int64) (*scenarios.Scenario, error) {
	if seed != nil {
		sets = append(append([]string(nil), sets...), fmt.Sprintf("seed=%d", *seed))
	}
	var sc *scenarios.Scenario
	var err error
	if demo {
		sc, err = scenarios.Demo(sets)
	} else {
		sc, err = scenarios.Load(path, sets)
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, UsageErrorf("scenario %s: %v", path, pe.Err)
		}
		return nil, UsageError(err)
	}
	return sc, nil
}

// classifyRunError maps errors from scenarios.Run to exit codes: input problems
// (scenario, trace rows, impossible clusters) are 2, the rest 1.
func classifyRunError(err error) error {
	var se *scenarios.Error
	var re *traces.RowError
	var pe *fs.PathError
	var ce *policies.ConfigError
	switch {
	case errors.Is(err, context.Canceled):
		return InterruptedError(err)
	case errors.As(err, &se), errors.As(err, &re), errors.As(err, &ce):
		return UsageError(err)
	case errors.As(err, &pe):
		return &ExitError{Code: pathErrorCode(pe), Err: err}
	}
	return RuntimeError(err)
}

func runRun(ctx context.Context, io *IO, opts *RunOptions) error {
	tuneGC()
	var seed *int64
	if opts.SeedSet {
		if opts.Seed < 0 {
			return UsageErrorf("--seed must be >= 0")
		}
		seed = &opts.Seed
	}
	sc, err := loadScenario(opts.Scenario, opts.Demo, opts.Sets, seed)
	if err != nil {
		return err
	}
	out := opts.OutDir
	if out == "" {
		name := sc.Name
		if name == "" {
			name = strings.TrimSuffix(filepath.Base(opts.Scenario), filepath.Ext(opts.Scenario))
		}
		out = filepath.Join("out", name)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return RuntimeError(err)
	}
	if !opts.Quiet {
		for _, w := range sc.Warnings() {
			fmt.Fprintf(io.Err, "gpusim: warning: %s\n", w)
		}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	if sc.Experiment != nil {
		fruns, err := scenarios.RunFill(ctx, sc, scenarios.RunOptions{Policies: opts.Policies, OutDir: out, Parallel: opts.Parallel, Version: VersionString(), Now: time.Now})
		if err != nil {
			return classifyRunError(err)
		}
		if !opts.Quiet {
			printFillTable(io.Out, fruns)
			fmt.Fprintf(io.Out, "fill experiment at load %.2f; results in %s/<policy>/summary.json\n", fruns[0].Summary.Fill.Load, out)
		}
		return nil
	}
	nruns := len(sc.Policies)
	if idx, err := sc.Select(opts.Policies); err == nil {
		nruns = len(idx)
	}
	prog := newProgress(io, opts.Quiet, nruns)
	runs, err := scenarios.Run(ctx, sc, scenarios.RunOptions{
		Policies: opts.Policies, OutDir: out, Parallel: opts.Parallel, Version: VersionString(),
		Now: time.Now, Progress: prog.update, NoLog: opts.NoEvents,
	})
	prog.finish()
	if err != nil {
		return classifyRunError(err)
	}
	if opts.Quiet {
		return nil
	}
	printRunTable(io.Out, runs)
	fmt.Fprintf(io.Out, "results in %s/<policy>/\n", out)
	return nil
}

func printRunTable(w io.Writer, runs []scenarios.PolicyRun) {
	var groups []*reports.Group
	var speed []string
	for _, r := range runs {
		groups = append(groups, &reports.Group{Label: r.Label, Runs: []*reports.Run{{Summary: r.Summary}}})
		speed = append(speed, fmt.Sprintf("%s %.3g", r.Label, r.Summary.EventsPerSecond))
	}
	reports.WriteHeadlineText(w, reports.Headline(groups))
	fmt.Fprintf(w, "engine events/s: %s\n", strings.Join(speed, ", "))
}

// printCompareTable prints the headline table of a compare: one row per policy,
// mean ± sd over the seeds.
func printCompareTable(w io.Writer, labels []string, runs []scenarios.PolicyRun, seeds int) {
	byLabel := map[string]*reports.Group{}
	var groups []*reports.Group
	for _, l := range labels {
		g := &reports.Group{Label: l}
		byLabel[l] = g
		groups = append(groups, g)
	}
	for _, r := range runs {
		l := r.Label
		if i := strings.LastIndexByte(l, '/'); i >= 0 {
			l = l[i+1:]
		}
		if g := byLabel[l]; g != nil {
			g.Runs = append(g.Runs, &reports.Run{Summary: r.Summary})
		}
	}
	fmt.Fprintf(w, "%d polic%s x %d seed%s\n", len(groups), map[bool]string{true: "y", false: "ies"}[len(groups) == 1], seeds, map[bool]string{true: "", false: "s"}[seeds == 1])
	reports.WriteHeadlineText(w, reports.Headline(groups))
}

// progress draws one bar on a terminal's stderr for all policies of a run:
// jobs ended out of jobs x policies, with simulated time and events/s.
type progress struct {
	mu    sync.Mutex
	bar   *progressbar.ProgressBar
	runs  int // runs expected in all (policies x seeds); 0 = unknown
	ended map[string]int
	total map[string]int
	ev    map[string]int64
	now   map[string]sim.Time
	t0    time.Time
	shown int64 // per-mille done last drawn; the bar never goes back
}

// progressScale is the bar's resolution: it counts per-mille of all runs' jobs.
const progressScale = 1000

// newProgress draws a progress bar on a terminal's stderr for runs runs (0 when
// unknown). Its percentage is the mean over the runs of each run's fraction of
// jobs ended, a run not started yet counting 0, so it never goes backwards when
// runs start one after another.
func newProgress(io *IO, quiet bool, runs int) *progress {
	p := &progress{runs: runs, ended: map[string]int{}, total: map[string]int{}, ev: map[string]int64{}, now: map[string]sim.Time{}, t0: time.Now()}
	if quiet || !io.ErrIsTTY {
		return p
	}
	p.bar = progressbar.NewOptions64(progressScale, progressbar.OptionSetWriter(io.Err), progressbar.OptionSetDescription("simulating"),
		progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish(),
		progressbar.OptionSetWidth(30))
	return p
}

// done returns the per-mille of the work done so far, never less than before.
func (p *progress) done() int64 {
	n := max(p.runs, len(p.total))
	var frac float64
	for k, t := range p.total {
		if t > 0 {
			frac += float64(p.ended[k]) / float64(t)
		}
	}
	v := int64(progressScale * frac / float64(max(n, 1)))
	p.shown = max(p.shown, min(v, progressScale))
	return p.shown
}

func (p *progress) update(policy string, s sim.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended[policy], p.total[policy], p.ev[policy], p.now[policy] = s.Ended, s.Total, s.Events, s.Now
	done := p.done()
	if p.bar == nil {
		return
	}
	var ev int64
	var tmax sim.Time
	for k := range p.total {
		ev += p.ev[k]
		tmax = max(tmax, p.now[k])
	}
	el := time.Since(p.t0).Seconds()
	p.bar.Describe(fmt.Sprintf("sim t=%.0fs  %.2g events/s", tmax.Seconds(), float64(ev)/max(el, 1e-9)))
	_ = p.bar.Set64(done)
}

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}

// printFillTable prints one row per fill run (policy, pods, unscheduled pods and
// the ratios at the target load).
func printFillTable(w io.Writer, fruns []scenarios.FillRun) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tseed\tpods\tunscheduled\tGPU allocation %\tfragmented GPU %\t")
	for _, r := range fruns {
		f := r.Summary.Fill
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.2f\t%.2f\t\n", r.Label, r.Summary.Provenance.Seed, f.Pods, f.UnscheduledPods, f.GPUAllocationRatio, f.FragmentedGPURatio)
	}
	tw.Flush()
}
