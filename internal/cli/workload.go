package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpusim/gpusim/internal/fsutil"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/traces"
	"github.com/gpusim/gpusim/workloads"
)

func init() { register(func(io *IO) *cobra.Command { return NewCmdWorkload(io) }) }

// NewCmdWorkload builds `gpusim workload` with its subcommands fit, generate and
// default.
func NewCmdWorkload(io *IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workload",
		Short: "Generate synthetic workloads and fit them to traces",
		Long: `Synthetic workloads: print the default workload.synthetic block, generate a
job trace from a block, or fit a block to a real trace so a larger workload
statistically like it can be generated. See docs/workloads.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newCmdWorkloadFit(io), newCmdWorkloadGenerate(io), newCmdWorkloadDefault(io))
	return cmd
}

func newCmdWorkloadDefault(io *IO) *cobra.Command {
	return &cobra.Command{
		Use:   "default",
		Short: "Print the embedded default workload.synthetic block",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s := workloads.DefaultSynthetic()
			b, err := s.MarshalYAMLBlock()
			if err != nil {
				return RuntimeError(err)
			}
			_, err = io.Out.Write(b)
			return RuntimeError(err)
		},
	}
}

// WorkloadFitOptions are the flags of `gpusim workload fit`.
type WorkloadFitOptions struct {
	Format string
	Output string
	GPUs   int64
}

func newCmdWorkloadFit(io *IO) *cobra.Command {
	o := &WorkloadFitOptions{}
	cmd := &cobra.Command{
		Use:   "fit TRACE",
		Short: "Fit a workload.synthetic block to a job trace",
		Long: `Fit reads a job trace and estimates a workload.synthetic block: the class
mix, per-class GPU sizes, log-normal durations (maximum likelihood), walltime
over-estimation factors and rounding, priorities, CPU/memory per GPU, queues,
teams and users, and the arrival process (poisson, or diurnal with its
peak-to-trough ratio and peak hour when the trace spans two days or more).

The block's load depends on the cluster: with --gpus N it is set to the trace's
offered load on N GPUs; otherwise it stays at the default and the trace's GPU
demand rate is printed in the header comment.`,
		Example: `  gpusim workload fit jobs.csv
  gpusim workload fit pods.csv --format openb-pods --gpus 6212 -o synthetic.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runWorkloadFit(io, args[0], o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Format, "format", traces.FormatNative, "trace format (see 'gpusim validate' or docs/traces.md)")
	f.StringVarP(&o.Output, "output", "o", "", "write the block to this file instead of stdout")
	f.Int64Var(&o.GPUs, "gpus", 0, "cluster GPUs the trace ran on: sets load to the trace's offered load")
	return cmd
}

func runWorkloadFit(io *IO, path string, o *WorkloadFitOptions) error {
	if o.GPUs < 0 {
		return UsageErrorf("workload fit: --gpus must be >= 0, got %d", o.GPUs)
	}
	jobs, rep, err := traces.ReadJobs(o.Format, path)
	if err != nil {
		return traceError(fmt.Errorf("workload fit: read %s: %w", path, err))
	}
	s, err := workloads.Fit(jobs)
	if err != nil {
		return UsageError(fmt.Errorf("workload fit: %s: %w", path, err))
	}
	st, err := workloads.Stats(jobs)
	if err != nil {
		return UsageError(fmt.Errorf("workload fit: %s: %w", path, err))
	}
	if o.GPUs > 0 {
		if l := st.Load(o.GPUs); l > 0 && l <= workloads.MaxLoad {
			s.Load = l
			if r := math.Round(l*1e4) / 1e4; r > 0 {
				s.Load = r // readable, unless that would round a tiny load to 0
			}
		}
	}
	block, err := s.MarshalYAMLBlock()
	if err != nil {
		return RuntimeError(err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# workload.synthetic fitted by gpusim workload fit from %s (format %s)\n", path, o.Format)
	if rep != nil {
		for _, line := range strings.Split(strings.TrimRight(rep.String(), "\n"), "\n") {
			fmt.Fprintf(&b, "# import: %s\n", line)
		}
	}
	fmt.Fprintf(&b, "# trace: %d jobs over %.1f h; %.2f jobs/h; GPU demand %.2f GPU-h/h\n",
		st.Jobs, st.SpanS/3600, st.RatePerHour, st.GPUHoursPerHour)
	fmt.Fprintf(&b, "# arrivals: gap CV %.2f; daily amplitude %.3f, peak hour %.1f, score %.1f (significant > %g)",
		st.GapCV, st.DiurnalAmp, st.PeakHour, st.DiurnalScore, float64(workloads.DiurnalScoreMin))
	if bu := st.Burst; bu.Process != "" {
		fmt.Fprintf(&b, "; bursts: factor %.2f, mean %.0f s, fraction %.3f", bu.BurstFactor, float64(bu.MeanBurstS), bu.BurstFraction)
	}
	b.WriteString("\n")
	if o.GPUs > 0 {
		fmt.Fprintf(&b, "# load: the trace's offered load on %d GPUs\n", o.GPUs)
	} else {
		fmt.Fprintf(&b, "# load: default; the trace offered %.2f GPU-h/h (load = that / cluster GPUs; use --gpus)\n", st.GPUHoursPerHour)
	}
	b.Write(block)
	if o.Output == "" {
		_, err = io.Out.Write(b.Bytes())
		return RuntimeError(err)
	}
	if err := fsutil.WriteBytesAtomic(o.Output, b.Bytes()); err != nil {
		return RuntimeError(fmt.Errorf("workload fit: write %s: %w", o.Output, err))
	}
	fmt.Fprintf(io.Err, "wrote %s (%d classes, %d jobs)\n", o.Output, len(s.Classes), s.Jobs)
	return nil
}

// traceError classifies a trace-reading error: bad input (unknown format, missing
// file, malformed rows) exits 2, anything else 1.
func traceError(err error) error {
	if errors.Is(err, traces.ErrUnknownFormat) || errors.Is(err, fs.ErrNotExist) || traces.IsRowError(err) {
		return UsageError(err)
	}
	return RuntimeError(err)
}

// WorkloadGenerateOptions are the flags of `gpusim workload generate`.
type WorkloadGenerateOptions struct {
	Config  string
	GPUs    int64
	PerNode int32
	Seed    uint64
	Output  string
	Jobs    int
	Load    float64
}

func newCmdWorkloadGenerate(io *IO) *cobra.Command {
	o := &WorkloadGenerateOptions{}
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Generate a native job trace from a workload.synthetic block",
		Long: `Generate draws jobs from a workload.synthetic block (the embedded default
without --config; the file may be the bare block or a scenario holding it at
workload.synthetic) for a cluster of --gpus GPUs with --gpus-per-node GPUs per
node, and writes a native trace: CSV, or Parquet when the output ends in
.parquet. The same seed always gives the same jobs.`,
		Example: `  gpusim workload generate --gpus 128 --seed 1 -o jobs.csv
  gpusim workload generate --config synthetic.yaml --gpus 512 --jobs 20000 -o jobs.parquet`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runWorkloadGenerate(io, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Config, "config", "", "YAML file with the workload.synthetic block (default: the embedded demo block)")
	f.Int64Var(&o.GPUs, "gpus", 128, "cluster GPUs (sets the arrival rate for the block's load)")
	f.Int32Var(&o.PerNode, "gpus-per-node", 8, "GPUs per node (larger jobs are split into replicas)")
	f.Uint64Var(&o.Seed, "seed", 1, "master random seed")
	f.StringVarP(&o.Output, "output", "o", "-", "output trace (.csv or .parquet; - for CSV on stdout)")
	f.IntVar(&o.Jobs, "jobs", 0, "override the block's job count")
	f.Float64Var(&o.Load, "load", 0, "override the block's target load")
	return cmd
}

func runWorkloadGenerate(io *IO, o *WorkloadGenerateOptions) error {
	var s workloads.Synthetic
	if o.Config == "" {
		s = workloads.DefaultSynthetic()
	} else {
		data, err := os.ReadFile(o.Config)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return UsageError(fmt.Errorf("workload generate: %w", err))
			}
			return RuntimeError(fmt.Errorf("workload generate: %w", err))
		}
		s, err = workloads.DecodeYAML(data)
		if err != nil {
			return UsageError(fmt.Errorf("workload generate: %s: %w", o.Config, err))
		}
	}
	if o.Jobs != 0 {
		s.Jobs = o.Jobs
	}
	if o.Load != 0 {
		s.Load = o.Load
	}
	if o.GPUs < 1 {
		return UsageErrorf("workload generate: --gpus must be >= 1, got %d", o.GPUs)
	}
	if o.PerNode < 1 {
		return UsageErrorf("workload generate: --gpus-per-node must be >= 1, got %d", o.PerNode)
	}
	s.SetDefaults()
	if fe := s.Validate(); len(fe) > 0 {
		return UsageError(fmt.Errorf("workload generate: invalid workload.synthetic:\n%w", fe))
	}
	jobs, err := s.Generate(o.Seed, o.GPUs, o.PerNode)
	if err != nil {
		return UsageError(fmt.Errorf("workload generate: %w", err))
	}
	if o.Output == "-" || o.Output == "" {
		if err := traces.WriteNativeCSV(io.Out, jobs); err != nil {
			return RuntimeError(fmt.Errorf("workload generate: write: %w", err))
		}
		return nil
	}
	if _, err := traces.WriteNativeFile(o.Output, traces.SliceReader(jobs)); err != nil {
		return RuntimeError(fmt.Errorf("workload generate: write %s: %w", o.Output, err))
	}
	span := sim.Time(0)
	if len(jobs) > 0 {
		span = jobs[len(jobs)-1].Submit
	}
	fmt.Fprintf(io.Err, "wrote %s: %d jobs over %.1f h, offered load %.3f on %d GPUs\n",
		o.Output, len(jobs), span.Seconds()/3600, workloads.OfferedLoad(jobs, o.GPUs), o.GPUs)
	return nil
}
