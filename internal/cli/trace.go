package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gpusim/gpusim/traces"
)

// traceErr maps a traces error to an exit code: bad input (a bad row, an unknown
// format) is a usage error (2); anything else (I/O) is a runtime error (1).
func traceErr(err error) error {
	if err == nil {
		return nil
	}
	if traces.IsRowError(err) || errors.Is(err, traces.ErrUnknownFormat) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, traces.ErrCorruptParquet) {
		return UsageError(err)
	}
	return RuntimeError(err)
}

func init() {
	register(func(io *IO) *cobra.Command {
		cmd := &cobra.Command{
			Use:   "trace",
			Short: "Inspect and convert job traces and node lists",
			Long: `Inspect and convert job traces. --format names the importer (see
'gpusim trace formats'); the native format is CSV, or Parquet for *.parquet.
See docs/traces.md for every format and column.`,
		}
		cmd.AddCommand(traceStatsCmd(io), traceConvertCmd(io), traceFormatsCmd(io), traceNodesCmd(io))
		return cmd
	})
}

func traceStatsCmd(io *IO) *cobra.Command {
	var format, cluster, clusterFormat string
	var asJSON, strict bool
	var gpus int64
	c := &cobra.Command{
		Use:   "stats FILE",
		Short: "Summarise a job trace: rows, skips, span, GPU histogram, percentiles, load",
		Long: `Summarise a job trace: rows imported and skipped (with reasons), submit span,
GPU-request histogram (fractional shares included), total GPU demand, duration and
inter-arrival percentiles (nearest rank), per-queue/class/user counts and, with
--gpus N or --cluster NODES.csv, the offered load on a cluster of that many GPUs.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if gpus < 0 {
				return UsageErrorf("--gpus must be >= 0")
			}
			if cluster != "" {
				if gpus > 0 {
					return UsageErrorf("--gpus and --cluster are exclusive")
				}
				nodes, err := traces.ReadNodes(clusterFormat, cluster)
				if err != nil {
					return traceErr(err)
				}
				for _, n := range nodes {
					gpus += int64(n.GPUs)
				}
			}
			r, err := traces.OpenJobsWith(format, args[0], traces.ReadOptions{Strict: strict})
			if err != nil {
				return traceErr(err)
			}
			defer r.Close()
			st, err := traces.ComputeStats(r, gpus)
			if err != nil {
				return traceErr(err)
			}
			if asJSON {
				return RuntimeError(st.WriteJSON(io.Out))
			}
			return RuntimeError(st.WriteText(io.Out))
		},
	}
	c.Flags().StringVarP(&format, "format", "f", traces.FormatNative, "trace format (see 'gpusim trace formats')")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().BoolVar(&strict, "strict", false, "treat rows an importer would skip as errors")
	c.Flags().Int64Var(&gpus, "gpus", 0, "cluster size in GPUs for the offered load (0 = not shown)")
	c.Flags().StringVar(&cluster, "cluster", "", "node list whose GPU count sizes the offered load")
	c.Flags().StringVar(&clusterFormat, "cluster-format", traces.FormatOpenBNodes, "format of --cluster (see 'gpusim trace formats')")
	return c
}

func traceNodesCmd(io *IO) *cobra.Command {
	var format string
	c := &cobra.Command{
		Use:   "nodes FILE",
		Short: "Summarise a node list: nodes, GPUs, CPU and memory per pool",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			nodes, err := traces.ReadNodes(format, args[0])
			if err != nil {
				return traceErr(err)
			}
			type agg struct {
				nodes        int
				gpus         int64
				cpuMilli     int64
				memMiB       int64
				shapesByName map[string]int
			}
			pools := map[string]*agg{}
			var names []string
			var total agg
			for _, n := range nodes {
				a := pools[n.Pool]
				if a == nil {
					a = &agg{shapesByName: map[string]int{}}
					pools[n.Pool] = a
					names = append(names, n.Pool)
				}
				for _, x := range []*agg{a, &total} {
					x.nodes++
					x.gpus += int64(n.GPUs)
					x.cpuMilli += n.CPUMilli
					x.memMiB += n.MemoryMiB
				}
				a.shapesByName[fmt.Sprintf("%d GPUs, %d mCPU, %d MiB", n.GPUs, n.CPUMilli, n.MemoryMiB)]++
			}
			tw := tabwriter.NewWriter(io.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "pool\tnodes\tGPUs\tCPU (cores)\tmemory (GiB)\tnode shapes")
			for _, p := range names {
				a := pools[p]
				fmt.Fprintf(tw, "%s\t%d\t%d\t%g\t%g\t%d\n", p, a.nodes, a.gpus, float64(a.cpuMilli)/1000, float64(a.memMiB)/1024, len(a.shapesByName))
			}
			fmt.Fprintf(tw, "total\t%d\t%d\t%g\t%g\t\n", total.nodes, total.gpus, float64(total.cpuMilli)/1000, float64(total.memMiB)/1024)
			return RuntimeError(tw.Flush())
		},
	}
	c.Flags().StringVarP(&format, "format", "f", traces.FormatOpenBNodes, "node-list format (see 'gpusim trace formats')")
	return c
}

func traceConvertCmd(io *IO) *cobra.Command {
	var format, out string
	var strict bool
	c := &cobra.Command{
		Use:   "convert IN -o OUT",
		Short: "Convert a trace to the native format (Parquet if OUT ends in .parquet, else CSV)",
		Long: `Stream a trace of any job format into a native trace. The output is Parquet
when OUT ends in .parquet and CSV otherwise, so native Parquet converts back to CSV
with --format native. Memory stays bounded (one row group of 131072 jobs plus a
hash per job for the duplicate-ID check); OUT is written atomically.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return UsageErrorf("-o OUT is required")
			}
			if a, b := absPath(args[0]), absPath(out); a == b {
				return UsageErrorf("output %s is the input file", out)
			}
			rep, err := traces.ConvertFile(format, args[0], out, traces.ReadOptions{Strict: strict})
			if err != nil {
				return traceErr(err)
			}
			fmt.Fprintf(io.Out, "%s: %d rows, %d jobs written to %s, %d skipped\n", args[0], rep.Rows, rep.Imported, out, rep.SkippedTotal())
			for _, k := range rep.Reasons() {
				fmt.Fprintf(io.Out, "  skipped %d: %s (first at line %d)\n", rep.Skipped[k], k, rep.FirstSkip[k])
			}
			for _, n := range rep.Notes {
				fmt.Fprintf(io.Out, "  note: %s\n", n)
			}
			return nil
		},
	}
	c.Flags().StringVarP(&format, "format", "f", traces.FormatNative, "input trace format (see 'gpusim trace formats')")
	c.Flags().StringVarP(&out, "output", "o", "", "output file (.parquet or .csv)")
	c.Flags().BoolVar(&strict, "strict", false, "treat rows an importer would skip as errors")
	return c
}

func traceFormatsCmd(io *IO) *cobra.Command {
	return &cobra.Command{
		Use:   "formats",
		Short: "List the job-trace and node-list formats",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			tw := tabwriter.NewWriter(io.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "job traces (workload.trace.format, --format):")
			for _, f := range traces.JobFormats() {
				fmt.Fprintf(tw, "  %s\t%s\n", f, traces.FormatDoc(f))
			}
			fmt.Fprintln(tw, "node lists (cluster.from.format):")
			for _, f := range traces.NodeFormats() {
				fmt.Fprintf(tw, "  %s\t%s\n", f, traces.FormatDoc(f))
			}
			return RuntimeError(tw.Flush())
		},
	}
}

func absPath(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	if r, err := filepath.EvalSymlinks(a); err == nil {
		return r
	}
	if _, err := os.Stat(a); err != nil {
		return strings.TrimSpace(a)
	}
	return a
}
