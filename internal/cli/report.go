package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpusim/gpusim/internal/fsutil"
	"github.com/gpusim/gpusim/reports"
)

func init() { register(func(io *IO) *cobra.Command { return NewCmdReport(io) }) }

// NewCmdReport builds `gpusim report`: plots and summary tables from saved run
// directories.
func NewCmdReport(io *IO) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "report RUN_DIR... -o REPORT_DIR",
		Short: "Plot and tabulate saved runs (index.html, summary.md/csv, PNG+SVG plots)",
		Long: `Report reads run directories written by 'gpusim run -o DIR' (one per policy:
DIR/<policy>) and writes into REPORT_DIR:

  index.html          one self-contained page: scenario, provenance, summary table, plots
  summary.md          the summary table in Markdown
  summary.csv         one row per run directory (policy, seed, headline metrics)
  *.png, *.svg        queue-time and JCT CDFs (per policy and per job class),
                      GPU utilization and queue length over time, headline bars,
                      and a GPU-allocation Gantt per policy for clusters <= 64 GPUs

A directory that holds no summary.json but has run directories below it (the
output of one 'gpusim run') is expanded to those. Several run directories of the
same policy (e.g. different seeds) are pooled in CDFs and shown as mean and
min-max in the headline bars. See docs/outputs.md.`,
		Example: `  gpusim report out/demo -o report
  gpusim report seed1/fifo seed2/fifo seed1/sjf seed2/sjf -o report`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return UsageErrorf("report needs at least one RUN_DIR")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return UsageErrorf("report: -o REPORT_DIR is required")
			}
			dirs, err := expandRunDirs(args)
			if err != nil {
				return UsageError(err)
			}
			if w := reports.MixedScenarios(dirs); w != "" {
				fmt.Fprintf(io.Err, "gpusim: warning: %s\n", w)
			}
			nfill := 0
			for _, d := range dirs {
				if reports.IsFillRunDir(d) {
					nfill++
				}
			}
			build := buildReport
			switch {
			case nfill == len(dirs):
				build = reports.BuildFillReport
			case nfill > 0:
				return UsageErrorf("report: %d of the %d run directories are fill experiments and the others replays; report them separately", nfill, len(dirs))
			}
			if err := build(dirs, out); err != nil {
				var pe *fs.PathError
				if errors.As(err, &pe) && !errors.Is(err, fs.ErrNotExist) {
					return RuntimeError(err)
				}
				return UsageError(err)
			}
			fmt.Fprintf(io.Out, "wrote report for %d run(s) to %s\n", len(dirs), filepath.Join(out, "index.html"))
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "report directory (created if missing)")
	return cmd
}

// expandRunDirs keeps directories holding a summary.json and replaces a
// directory without one by the policy directories its run manifest lists
// (gpusim-run.json, written by 'gpusim run'), or, for directories written before
// manifests existed, by its immediate subdirectories that have one (sorted).
// Every directory returned is complete (reports.CheckRunDir); an incomplete one
// is an error.
func expandRunDirs(args []string) ([]string, error) {
	var dirs []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, fmt.Errorf("run dir: %w", err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("run dir %s: not a directory", a)
		}
		if _, err := os.Stat(filepath.Join(a, reports.SummaryFile)); err == nil || isTempRunDir(a) {
			if err := reports.CheckRunDir(a); err != nil {
				return nil, err
			}
			dirs = append(dirs, a)
			continue
		}
		m, err := reports.ReadManifest(a)
		if err != nil {
			return nil, fmt.Errorf("run dir: %w", err)
		}
		if m != nil {
			for _, p := range m.Policies {
				d := filepath.Join(a, p)
				if err := reports.CheckRunDir(d); err != nil {
					return nil, err
				}
				dirs = append(dirs, d)
			}
			continue
		}
		ents, err := os.ReadDir(a)
		if err != nil {
			return nil, fmt.Errorf("run dir: %w", err)
		}
		n := 0
		for _, e := range ents { // ReadDir sorts by name
			if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
				continue // temporary directories of unfinished runs start with "."
			}
			d := filepath.Join(a, e.Name())
			if _, err := os.Stat(filepath.Join(d, reports.SummaryFile)); err == nil {
				if err := reports.CheckRunDir(d); err != nil {
					return nil, err
				}
				dirs = append(dirs, d)
				n++
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("run dir %s: no %s in it or in its subdirectories (an unfinished run? run it again)", a, reports.SummaryFile)
		}
	}
	return dirs, nil
}

// isTempRunDir reports whether dir is the temporary directory of a run being
// written (or killed): ".<policy>.tmp-<random>".
func isTempRunDir(dir string) bool {
	b := filepath.Base(filepath.Clean(dir))
	return strings.HasPrefix(b, ".") && strings.Contains(b, fsutil.TempInfix)
}
