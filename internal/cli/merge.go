package cli

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/gpusim/gpusim/reports"
	"github.com/gpusim/gpusim/scenarios/sweep"
)

func init() { register(func(io *IO) *cobra.Command { return NewCmdMerge(io) }) }

// NewCmdMerge builds `gpusim merge`: sweep shards into one table.
func NewCmdMerge(io *IO) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "merge SHARD_DIR... -o DIR",
		Short: "Merge the output directories of sweep shards into one table and report",
		Long: `Merge reads the output directories of 'gpusim sweep --shard i/n' runs (their
sweep.json and sweep.parquet), checks that they come from the same sweep file and
cover every point exactly once, and writes DIR/sweep.csv, sweep.parquet,
sweep.json and sweep.md: byte for byte what an unsharded sweep writes. When every
shard saved run directories (--runs), DIR/report/ is a report over all of them.`,
		Example: `  gpusim merge out/sweep/shard-0 out/sweep/shard-1 out/sweep/shard-2 -o out/sweep/all`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return UsageErrorf("merge needs at least one SHARD_DIR")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return UsageErrorf("merge: -o DIR is required")
			}
			t, m, runDirs, err := sweep.Merge(args)
			if err != nil {
				return UsageError(err)
			}
			if err := sweep.WriteOutputs(out, t, m); err != nil {
				return RuntimeError(err)
			}
			if len(runDirs) > 0 {
				if err := reports.BuildReport(runDirs, filepath.Join(out, "report")); err != nil {
					return RuntimeError(err)
				}
			}
			fmt.Fprintf(io.Out, "merged %d director(ies), %d points, into %s\n", len(args), len(t.Rows), filepath.Join(out, reports.SweepCSVFile))
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "output directory (created if missing)")
	return cmd
}
