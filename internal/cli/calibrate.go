package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	stdio "io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpusim/gpusim/calibrate"
	"github.com/gpusim/gpusim/calibrate/nvml"
	"github.com/gpusim/gpusim/internal/fsutil"
)

// CalibrateProbeOptions selects the hardware probe of every calibrate subcommand.
type CalibrateProbeOptions struct {
	Fake    bool   // use the deterministic fake DGX-like node instead of NVML
	NVMLLib string // path of libnvidia-ml.so ("" = default)
}

// CalibrateDiscoverOptions are the flags of `calibrate discover`.
type CalibrateDiscoverOptions struct {
	CalibrateProbeOptions
	JSON        bool
	TemplateOut string
}

// CalibrateRunOptions are the arguments of `calibrate run`.
type CalibrateRunOptions struct {
	CalibrateProbeOptions
	Plan   string
	OutDir string
}

// CalibrateTelemetryOptions are the flags of `calibrate telemetry`.
type CalibrateTelemetryOptions struct {
	CalibrateProbeOptions
	Interval time.Duration
	Duration time.Duration
	Out      string
	GPUs     []int
}

// newCalibrateProbe builds the probe; tests replace it.
var newCalibrateProbe = func(o CalibrateProbeOptions) calibrate.Probe {
	if o.Fake {
		return calibrate.NewFake()
	}
	return nvml.New(o.NVMLLib)
}

// openProbe initializes the probe; a missing NVML library is a runtime error
// (exit 1) with a clear message.
func openProbe(o CalibrateProbeOptions) (calibrate.Probe, error) {
	p := newCalibrateProbe(o)
	if err := p.Init(); err != nil {
		if errors.Is(err, calibrate.ErrNVMLNotFound) {
			return nil, RuntimeError(fmt.Errorf("%w; run on a machine with an NVIDIA GPU and driver, or pass --fake to try the pipeline with a simulated node", err))
		}
		return nil, RuntimeError(fmt.Errorf("NVML: %w", err))
	}
	return p, nil
}

// hostInfo describes this machine; with fake set, the fake node's DGX-like host
// (224 CPUs, 2 TiB) so fake output does not depend on where it runs.
func hostInfo(fake bool) calibrate.Host {
	if fake {
		return calibrate.Host{Name: "fake-dgx", CPUs: 224, MemoryMiB: 2 << 20}
	}
	h := calibrate.Host{CPUs: runtime.NumCPU()}
	h.Name, _ = os.Hostname()
	if f, err := os.Open("/proc/meminfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) >= 2 && fs[0] == "MemTotal:" {
				if kb, err := strconv.ParseInt(fs[1], 10, 64); err == nil {
					h.MemoryMiB = kb / 1024
				}
			}
		}
	}
	return h
}

func init() {
	register(func(io *IO) *cobra.Command {
		var po CalibrateProbeOptions
		cmd := &cobra.Command{
			Use:   "calibrate",
			Short: "Measure a real GPU node: topology, co-location interference, telemetry",
			Long: `calibrate gives gpusim real numbers from a lab machine: the node's GPUs and
topology (discover), how much workloads slow each other down when they share a GPU
under time-slicing, MPS or MIG (run), and raw NVML telemetry (telemetry); import
converts published measurements (Gavel, Lucid) to the same interference.yaml.

It needs the NVIDIA driver (NVML). Without one every subcommand but import exits 1 with
"NVML library not found"; --fake uses a simulated 8-GPU node instead, which drives
the whole pipeline (workload commands still run for real). See docs/calibrate.md.`,
		}
		cmd.PersistentFlags().BoolVar(&po.Fake, "fake", false, "use a simulated DGX-like 8-GPU node instead of NVML")
		cmd.PersistentFlags().StringVar(&po.NVMLLib, "nvml-lib", "", "path of libnvidia-ml.so (default: the system's libnvidia-ml.so.1)")
		cmd.AddCommand(calibrateDiscoverCmd(io, &po), calibrateRunCmd(io, &po), calibrateTelemetryCmd(io, &po), calibrateImportCmd(io))
		return cmd
	})
}

func calibrateDiscoverCmd(io *IO, po *CalibrateProbeOptions) *cobra.Command {
	var o CalibrateDiscoverOptions
	cmd := &cobra.Command{
		Use:   "discover",
		Short: "List GPUs, MIG instances, NVLink and the pairwise topology; write a node template",
		Long: `discover prints every GPU (index, UUID, name, memory, compute capability, PCI bus
id, NUMA node, MIG mode and instances, NVLink links and peers), the pairwise
topology matrix (self, nvlink, pcie-switch, host-bridge, numa-node, system) and
the driver and CUDA versions. --template-out writes a node template a scenario
can use as a custom pool template.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.CalibrateProbeOptions = *po
			return RunCalibrateDiscover(io, o)
		},
	}
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the report as JSON")
	cmd.Flags().StringVar(&o.TemplateOut, "template-out", "", "write the node template YAML to this file")
	return cmd
}

// RunCalibrateDiscover implements `calibrate discover`.
func RunCalibrateDiscover(io *IO, o CalibrateDiscoverOptions) error {
	p, err := openProbe(o.CalibrateProbeOptions)
	if err != nil {
		return err
	}
	defer p.Shutdown()
	r, err := calibrate.Discover(p, hostInfo(o.Fake))
	if err != nil {
		return RuntimeError(fmt.Errorf("discover: %w", err))
	}
	if o.JSON {
		enc := json.NewEncoder(io.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return RuntimeError(err)
		}
	} else if err := r.WriteText(io.Out); err != nil {
		return RuntimeError(err)
	}
	if o.TemplateOut != "" {
		src := "host " + r.Host
		if o.Fake {
			src = "fake node"
		}
		if err := fsutil.WriteFileAtomic(o.TemplateOut, func(w stdio.Writer) error {
			return calibrate.WriteTemplate(w, r.Template, src)
		}); err != nil {
			return RuntimeError(err)
		}
		fmt.Fprintf(io.Err, "node template written to %s\n", o.TemplateOut)
	}
	return nil
}

func calibrateRunCmd(io *IO, po *CalibrateProbeOptions) *cobra.Command {
	var o CalibrateRunOptions
	cmd := &cobra.Command{
		Use:   "run PLAN.yaml -o DIR",
		Short: "Measure co-location slowdowns of the plan's workloads; write interference.yaml",
		Long: `run measures every cell of the plan (each workload alone, then every pair/triple,
under each sharing mode, for each repetition) and writes DIR/interference.yaml
(apiVersion gpusim/v1alpha1, kind InterferenceMatrix), DIR/samples.parquet and a
pair heatmap per mode. Finished cells are journaled in DIR/journal.jsonl: after
Ctrl-C or a crash, run the same command again to resume. Workloads run in their
own process groups and are killed on timeout or interrupt; the GPU's MIG mode and
clocks are never changed.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return UsageErrorf("calibrate run needs exactly one PLAN file")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.CalibrateProbeOptions = *po
			o.Plan = args[0]
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return RunCalibrateRun(ctx, io, o)
		},
	}
	cmd.Flags().StringVarP(&o.OutDir, "out", "o", "", "output directory (required; reused to resume)")
	return cmd
}

// RunCalibrateRun implements `calibrate run`: bad plans exit 2, measurement or
// hardware failures exit 1.
func RunCalibrateRun(ctx context.Context, io *IO, o CalibrateRunOptions) error {
	if o.OutDir == "" {
		return UsageErrorf("calibrate run: -o DIR is required")
	}
	plan, err := calibrate.LoadPlan(o.Plan)
	if err != nil {
		return UsageError(err)
	}
	p, err := openProbe(o.CalibrateProbeOptions)
	if err != nil {
		return err
	}
	defer p.Shutdown()
	ro := calibrate.RunOptions{Probe: p, Plan: plan, OutDir: o.OutDir, Log: io.Err,
		Host: hostInfo(o.Fake).Name, Created: time.Now(), Fake: o.Fake}
	if o.Fake {
		ro.MPS = &calibrate.NoMPS{}
		fmt.Fprintln(io.Err, "calibrate: --fake: simulated NVML node; no MPS daemon is started")
	}
	sum, err := calibrate.Run(ctx, ro)
	if sum != nil {
		fmt.Fprintf(io.Out, "cells: %d in plan, %d measured now, %d resumed from the journal, %d failed\n",
			sum.Cells, sum.Measured, sum.Skipped, len(sum.Failed))
		for _, f := range sum.Outputs {
			fmt.Fprintf(io.Out, "wrote %s\n", f)
		}
	}
	if err != nil {
		return RuntimeError(err)
	}
	return nil
}

func calibrateTelemetryCmd(io *IO, po *CalibrateProbeOptions) *cobra.Command {
	var o CalibrateTelemetryOptions
	var gpus string
	cmd := &cobra.Command{
		Use:   "telemetry -o FILE.parquet",
		Short: "Sample every GPU's health counters into a Parquet file",
		Long: `telemetry samples each GPU every --interval for --duration (Ctrl-C stops early and
still writes the file): utilization, memory used, power, SM and memory clocks,
temperature, throttle reasons, PCIe throughput and volatile ECC error counts.
Counters a GPU does not support are written as -1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.CalibrateProbeOptions = *po
			if gpus != "" {
				for _, s := range strings.Split(gpus, ",") {
					g, err := strconv.Atoi(strings.TrimSpace(s))
					if err != nil {
						return UsageErrorf("--gpus: %q is not a GPU index", s)
					}
					o.GPUs = append(o.GPUs, g)
				}
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return RunCalibrateTelemetry(ctx, io, o)
		},
	}
	cmd.Flags().DurationVar(&o.Interval, "interval", time.Second, "sampling interval")
	cmd.Flags().DurationVar(&o.Duration, "duration", 10*time.Minute, "how long to sample (0 = until Ctrl-C)")
	cmd.Flags().StringVarP(&o.Out, "out", "o", "", "output Parquet file (required)")
	cmd.Flags().StringVar(&gpus, "gpus", "", "comma-separated GPU indexes (default: all)")
	return cmd
}

// RunCalibrateTelemetry implements `calibrate telemetry`.
func RunCalibrateTelemetry(ctx context.Context, io *IO, o CalibrateTelemetryOptions) error {
	if o.Out == "" {
		return UsageErrorf("calibrate telemetry: -o FILE.parquet is required")
	}
	if o.Interval <= 0 {
		return UsageErrorf("calibrate telemetry: --interval must be > 0, got %s", o.Interval)
	}
	if o.Duration < 0 {
		return UsageErrorf("calibrate telemetry: --duration must be >= 0, got %s", o.Duration)
	}
	if dir := filepath.Dir(o.Out); dir != "" {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return UsageErrorf("calibrate telemetry: output directory %s does not exist", dir)
		}
	}
	p, err := openProbe(o.CalibrateProbeOptions)
	if err != nil {
		return err
	}
	defer p.Shutdown()
	n, err := p.DeviceCount()
	if err != nil {
		return RuntimeError(err)
	}
	for _, g := range o.GPUs {
		if g < 0 || g >= n {
			return UsageErrorf("--gpus: GPU %d does not exist (the node has %d)", g, n)
		}
	}
	// Stream rounds into the (temporary, atomically renamed) Parquet file so long
	// runs use bounded memory; a sampling error still keeps what was taken.
	var total int
	var serr error
	werr := fsutil.WriteFileAtomic(o.Out, func(w stdio.Writer) error {
		sw, err := calibrate.NewSampleWriter(w, false)
		if err != nil {
			return err
		}
		_, serr = calibrate.Telemetry(ctx, p, calibrate.TelemetryOptions{Interval: o.Interval, Duration: o.Duration, GPUs: o.GPUs,
			Emit: func(batch []calibrate.Sample) error {
				total += len(batch)
				rows := make([]calibrate.SampleRow, len(batch))
				for i, s := range batch {
					rows[i] = calibrate.SampleRow{Sample: s}
				}
				return sw.Write(rows...)
			}})
		return sw.Close()
	})
	if werr != nil {
		return RuntimeError(errors.Join(serr, werr))
	}
	fmt.Fprintf(io.Out, "wrote %d samples to %s\n", total, o.Out)
	if serr != nil {
		return RuntimeError(fmt.Errorf("telemetry: %w", serr))
	}
	return nil
}
