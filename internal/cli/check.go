package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gpusim/gpusim/reports"
)

// CheckOptions are the flags of `gpusim check`.
type CheckOptions struct {
	Baseline      string
	Current       string
	MaxRegression string
	RangeSpec     string
}

func init() { register(func(io *IO) *cobra.Command { return NewCmdCheck(io) }) }

// NewCmdCheck builds `gpusim check`: a CI regression gate on summary.json files.
func NewCmdCheck(io *IO) *cobra.Command {
	opts := &CheckOptions{}
	cmd := &cobra.Command{
		Use:   "check [RUN_DIR | summary.json]",
		Short: "Gate a run against a baseline or absolute bounds (exit 3 on regression)",
		Long: `Check compares a run's summary.json against a baseline summary with relative
tolerances (--baseline, --current, --max-regression), and/or against absolute
bounds in a range spec (--range-spec). Metrics are dotted paths into summary.json
(wait_s.p99, jct_s.mean, classes.training.wait_s.p95, gpu_utilization, ...); each
knows which direction is worse (higher for wait/jct/slowdown/makespan/unfinished,
lower for utilization/completed/fairness; either for plain counts).

A tolerance of 0.05 (or 5%) lets a metric get 5% worse than the baseline. Without
--max-regression the default gates are:
  ` + reports.DefaultTolerances + `

Exit status: 0 within tolerance, 3 on a regression, 2 on bad input (unreadable or
malformed files, unknown metric paths, bad tolerance syntax).`,
		Example: `  gpusim check --baseline base/fifo/summary.json --current out/fifo/summary.json \
      --max-regression gpu_utilization=0.01,wait_s.p99=0.05
  gpusim check --range-spec ci/rangespec.yaml out/fifo`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if opts.Current != "" {
					return UsageErrorf("give the current run either as an argument or with --current, not both")
				}
				opts.Current = args[0]
			}
			return runCheck(io, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Baseline, "baseline", "", "baseline summary.json (or run directory)")
	f.StringVar(&opts.Current, "current", "", "current summary.json (or run directory)")
	f.StringVar(&opts.MaxRegression, "max-regression", "", "relative tolerances: metric=limit,... (limit as a fraction or percent)")
	f.StringVar(&opts.RangeSpec, "range-spec", "", "RangeSpec YAML with absolute min/max per metric")
	return cmd
}

func runCheck(io *IO, o *CheckOptions) error {
	if o.Current == "" {
		return UsageErrorf("check: no current run (give RUN_DIR, summary.json or --current)")
	}
	if o.Baseline == "" && o.RangeSpec == "" {
		return UsageErrorf("check: give --baseline (relative gate) and/or --range-spec (absolute bounds)")
	}
	if o.Baseline == "" && o.MaxRegression != "" {
		return UsageErrorf("check: --max-regression needs --baseline")
	}
	cur, err := reports.ReadDoc(o.Current)
	if err != nil {
		return UsageError(fmt.Errorf("--current: %w", err))
	}
	failed := false
	if o.Baseline != "" {
		spec := o.MaxRegression
		if spec == "" {
			spec = reports.DefaultTolerances
		}
		tols, err := reports.ParseTolerances(spec)
		if err != nil {
			return UsageError(fmt.Errorf("--max-regression: %w", err))
		}
		base, err := reports.ReadDoc(o.Baseline)
		if err != nil {
			return UsageError(fmt.Errorf("--baseline: %w", err))
		}
		rows, err := reports.Compare(base, cur, tols)
		if err != nil {
			return UsageError(fmt.Errorf("--max-regression: %w", err))
		}
		fmt.Fprintf(io.Out, "baseline: %s\ncurrent:  %s\n\n", base.Name, cur.Name)
		if err := reports.WriteCheckTable(io.Out, rows); err != nil {
			return RuntimeError(err)
		}
		failed = failed || reports.Regressed(rows)
	}
	if o.RangeSpec != "" {
		rs, err := reports.ReadRangeSpec(o.RangeSpec)
		if err != nil {
			return UsageError(fmt.Errorf("--range-spec: %w", err))
		}
		rows, err := reports.CheckRanges(rs, cur)
		if err != nil {
			return UsageError(fmt.Errorf("--range-spec: %w", err))
		}
		if o.Baseline != "" {
			fmt.Fprintln(io.Out)
		}
		fmt.Fprintf(io.Out, "range spec: %s\ncurrent:    %s\n\n", o.RangeSpec, cur.Name)
		if err := reports.WriteRangeTable(io.Out, rows); err != nil {
			return RuntimeError(err)
		}
		failed = failed || reports.RangeRegressed(rows)
	}
	if failed {
		fmt.Fprintln(io.Out, "\nFAIL: regression beyond tolerance")
		return &ExitError{Code: ExitRegression, Err: errors.New("check failed: at least one metric regressed (see table)")}
	}
	fmt.Fprintln(io.Out, "\nPASS")
	return nil
}
