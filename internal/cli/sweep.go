package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpusim/gpusim/reports"
	"github.com/gpusim/gpusim/scenarios/sweep"
)

// SweepOptions are the flags of `gpusim sweep`.
type SweepOptions struct {
	File     string
	OutDir   string
	Shard    string
	Runs     bool
	List     bool
	Parallel int
	Quiet    bool
}

func init() { register(func(io *IO) *cobra.Command { return NewCmdSweep(io) }) }

// NewCmdSweep builds `gpusim sweep`: a parameter grid over a scenario.
func NewCmdSweep(io *IO) *cobra.Command {
	opts := &SweepOptions{}
	cmd := &cobra.Command{
		Use:   "sweep SWEEP.yaml [-o DIR] [--shard i/n]",
		Short: "Run a parameter grid (policies x --set values x loads x seeds) and write one table",
		Long: `Sweep reads a sweep file (apiVersion: gpusim/v1alpha1, kind: Sweep) naming a
base scenario and a grid, validates every grid entry and point before running
anything, runs the points in parallel and writes into DIR:

  sweep.csv, sweep.parquet   one row per point: point, grid columns, headline metrics
  sweep.json                 what the table holds (sweep sha256, points, shard)
  sweep.md                   the table in Markdown
  runs/point-<k>/<policy>/   per-point run directories (with --runs)
  report/                    a report over the run directories (with --runs)

Points are the cartesian product of grid.set (first path slowest), grid.load,
grid.seeds and grid.policies (fastest), numbered 0, 1, ... in that order.
--shard i/n runs only the points k with k mod n = i and writes a partial table;
'gpusim merge' combines the shards' directories into the whole table, byte for
byte equal to an unsharded run. See docs/sweeps.md.`,
		Example: `  gpusim sweep examples/sweep/sweep.yaml -o out/sweep
  gpusim sweep examples/sweep/sweep.yaml -o out/sweep/shard-1 --shard 1/3
  gpusim merge out/sweep/shard-0 out/sweep/shard-1 out/sweep/shard-2 -o out/sweep/all`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return UsageErrorf("sweep needs exactly one SWEEP file")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.File = args[0]
			return runSweep(cmd.Context(), io, opts)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.OutDir, "output", "o", "", "output directory (default out/<sweep name>, or out/<sweep name>/shard-<i>-of-<n>)")
	f.StringVar(&opts.Shard, "shard", "", "run only shard i of n (i/n, 0-based): the points k with k mod n = i")
	f.BoolVar(&opts.Runs, "runs", false, "also write per-point run directories (runs/point-<k>/<policy>/) and a report")
	f.BoolVar(&opts.List, "list", false, "print the points (with their shard under --shard) and exit without running")
	f.IntVar(&opts.Parallel, "parallel", 0, "points run at once (default: CPU count)")
	f.BoolVarP(&opts.Quiet, "quiet", "q", false, "print nothing but errors")
	return cmd
}

func loadSweep(path string) (*sweep.Sweep, error) {
	sw, err := sweep.Load(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, UsageErrorf("sweep %s: %v", path, pe.Err)
		}
		return nil, UsageError(err)
	}
	return sw, nil
}

func runSweep(ctx context.Context, io *IO, opts *SweepOptions) error {
	shard := sweep.Shard{I: 0, N: 1}
	if opts.Shard != "" {
		s, err := sweep.ParseShard(opts.Shard)
		if err != nil {
			return UsageError(err)
		}
		shard = s
	}
	sw, err := loadSweep(opts.File)
	if err != nil {
		return err
	}
	points := shard.Select(sw.Points())
	if opts.List {
		for _, p := range points {
			fmt.Fprintf(io.Out, "%d\tshard %d/%d\t%s\n", p.Index, p.Index%shard.N, shard.N, sw.Describe(p))
		}
		return nil
	}
	out := opts.OutDir
	if out == "" {
		out = filepath.Join("out", sw.Name)
		if shard.N > 1 {
			out = filepath.Join(out, fmt.Sprintf("shard-%d-of-%d", shard.I, shard.N))
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return RuntimeError(err)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	ro := sweep.Options{Parallel: opts.Parallel, Version: VersionString(), Now: time.Now}
	if opts.Runs {
		ro.RunsDir = filepath.Join(out, "runs")
	}
	prog := newProgress(io, opts.Quiet, len(points))
	ro.Progress = prog.update
	t, err := sw.Run(ctx, points, ro)
	prog.finish()
	if err != nil {
		return classifyRunError(err)
	}
	if err := sweep.WriteOutputs(out, t, sw.Meta(shard, len(t.Rows), opts.Runs)); err != nil {
		return RuntimeError(err)
	}
	if opts.Runs {
		if dirs := sweep.RunDirs(out, t); len(dirs) > 0 {
			if err := reports.BuildReport(dirs, filepath.Join(out, "report")); err != nil {
				return RuntimeError(err)
			}
		}
	}
	if !opts.Quiet {
		what := fmt.Sprintf("%d points", len(t.Rows))
		if shard.N > 1 {
			what = fmt.Sprintf("shard %s: %d of %d points", shard, len(t.Rows), sw.NumPoints())
		}
		fmt.Fprintf(io.Out, "sweep %s: %s; table in %s (and %s)\n", sw.Name, what,
			filepath.Join(out, reports.SweepCSVFile), reports.SweepParquetFile)
	}
	return nil
}
