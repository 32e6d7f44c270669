package cli

import (
	"fmt"
	stdio "io"
	"os"

	"github.com/spf13/cobra"

	"github.com/gpusim/gpusim/calibrate"
	"github.com/gpusim/gpusim/internal/fsutil"
)

// CalibrateImportOptions are the flags of `calibrate import`.
type CalibrateImportOptions struct {
	Format   string // gavel or lucid
	In       string
	Out      string
	GPUModel string
	Mode     string
	Name     string
}

func calibrateImportCmd(io *IO) *cobra.Command {
	var o CalibrateImportOptions
	cmd := &cobra.Command{
		Use:   "import --format gavel|lucid IN -o interference.yaml",
		Short: "Convert published co-location measurements (Gavel, Lucid) to interference.yaml",
		Long: `import writes the same gpusim/v1alpha1 InterferenceMatrix that "calibrate run"
measures, from public data:

  --format gavel  Gavel's simulation_throughputs.json (or physical_cluster_throughputs.json):
                  one mode entry per GPU type (K80, P100, V100), single-GPU pairs only.
  --format lucid  Lucid's colocate_info.csv (non-commercial licence: keep it where you
                  downloaded it). --gpu-model sets metadata.gpuModel (none: any model).

Pairs are recorded under --mode (timeslice, the default, or mps). It needs no GPU.
See docs/calibrate.md.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return UsageErrorf("calibrate import needs exactly one input file")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.In = args[0]
			return RunCalibrateImport(io, o)
		},
	}
	cmd.Flags().StringVar(&o.Format, "format", "", "input format: gavel or lucid (required)")
	cmd.Flags().StringVarP(&o.Out, "out", "o", "", "output interference.yaml (required; written atomically)")
	cmd.Flags().StringVar(&o.GPUModel, "gpu-model", "", "gavel: import only this GPU type (k80, p100, v100); lucid: the GPU model to record")
	cmd.Flags().StringVar(&o.Mode, "mode", "", "sharing mode the pairs are recorded under: timeslice (default) or mps")
	cmd.Flags().StringVar(&o.Name, "name", "", "metadata.name (default <format>:<input file name>)")
	return cmd
}

// RunCalibrateImport implements `calibrate import`: bad flags or input exit 2
// (errors name file:line and field), a failed write exits 1.
func RunCalibrateImport(io *IO, o CalibrateImportOptions) error {
	if o.Out == "" {
		return UsageErrorf("calibrate import: -o FILE is required")
	}
	var imp func(string, stdio.Reader, calibrate.ImportOptions) (*calibrate.InterferenceMatrix, calibrate.ImportReport, error)
	switch o.Format {
	case "gavel":
		imp = calibrate.ImportGavel
	case "lucid":
		imp = calibrate.ImportLucid
	case "":
		return UsageErrorf("calibrate import: --format is required (gavel or lucid)")
	default:
		return UsageErrorf("calibrate import: --format %q: want gavel or lucid", o.Format)
	}
	f, err := os.Open(o.In)
	if err != nil {
		return UsageError(err)
	}
	defer f.Close()
	m, rep, err := imp(o.In, f, calibrate.ImportOptions{Name: o.Name, GPUModel: o.GPUModel, Mode: o.Mode})
	if err != nil {
		return UsageError(err)
	}
	if err := fsutil.WriteFileAtomic(o.Out, m.Write); err != nil {
		return RuntimeError(err)
	}
	fmt.Fprintf(io.Out, "%d workloads, %d pairs; skipped: %d with a zero throughput, %d multi-GPU entries, %d GPU types, %d repeated pairs\nwrote %s\n",
		rep.Workloads, rep.Pairs, rep.SkippedZero, rep.SkippedScale, rep.SkippedModels, rep.SkippedDupPair, o.Out)
	return nil
}
