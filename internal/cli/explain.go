package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/gpusim/gpusim/reports"
	"github.com/gpusim/gpusim/scenarios"
	"github.com/gpusim/gpusim/sim"
)

func init() { register(func(io *IO) *cobra.Command { return NewCmdExplain(io) }) }

// NewCmdExplain builds `gpusim explain`: why a job waited.
func NewCmdExplain(io *IO) *cobra.Command {
	var job string
	cmd := &cobra.Command{
		Use:   "explain RUN_DIR --job ID",
		Short: "Explain why a job waited (timeline of wait reasons, reservations, starts)",
		Long: `Explain reads a run directory (DIR/<policy> written by 'gpusim run -o DIR')
and prints one job's timeline from events.parquet: arrival, every change of the
wait reason the policy reported (no-capacity, topology, quota, blocked,
reservation, fair-share, not-tested, preempting), backfill reservations, starts,
preemptions and the end, followed by the pending time per reason.

Pending time with no recorded reason means the policy did not examine the job:
it stopped at an earlier job in queue order. For a job still pending when the
run stopped, explain loads the effective scenario saved next to the run
(RUN_DIR/../scenario.yaml) and estimates the earliest start from the running
jobs' estimated ends. See docs/explain.md.`,
		Example: `  gpusim run s.yaml -o out && gpusim explain out/fifo --job J3`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return UsageErrorf("explain needs exactly one RUN_DIR")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if job == "" {
				return UsageErrorf("explain: --job ID is required")
			}
			return runExplain(io, args[0], job)
		},
	}
	cmd.Flags().StringVar(&job, "job", "", "job ID (as in jobs.csv)")
	return cmd
}

func runExplain(io *IO, dir, job string) error {
	if _, err := os.Stat(filepath.Join(dir, reports.SummaryFile)); err != nil && !isTempRunDir(dir) {
		if m, merr := reports.ReadManifest(dir); merr == nil && m != nil {
			return UsageErrorf("run dir %s: holds the runs %v; give one policy directory such as %s", dir, m.Policies, filepath.Join(dir, m.Policies[0]))
		}
		return UsageErrorf("run dir %s: no %s (give a policy directory such as out/fifo)", dir, reports.SummaryFile)
	}
	if err := reports.CheckRunDir(dir); err != nil {
		return UsageError(err)
	}
	run, err := reports.ReadRunDir(dir, true)
	if err != nil {
		return UsageError(err)
	}
	x, err := reports.ExplainJob(run, job)
	if err != nil {
		return UsageError(err)
	}
	var note string
	if x.Job.State == sim.StatePending.String() {
		est, err := estimateFromScenario(dir, run, job, x.EndU)
		if err != nil {
			note = fmt.Sprintf("\nno start estimate: %v\n", err)
		}
		x.Estimate = est
	}
	if err := x.WriteText(io.Out); err != nil {
		return RuntimeError(err)
	}
	if note != "" {
		fmt.Fprint(io.Out, note)
	}
	return nil
}

// estimateFromScenario loads RUN_DIR/../scenario.yaml, rebuilds the cluster and
// the job's spec, and estimates its earliest start from the run's final state.
func estimateFromScenario(dir string, run *reports.Run, job string, endU int64) (*reports.StartEstimate, error) {
	path := filepath.Join(filepath.Dir(filepath.Clean(dir)), "scenario.yaml")
	sc, err := scenarios.Load(path, nil)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s: %v", path, pe.Err)
		}
		return nil, err
	}
	nodes, err := sc.Nodes()
	if err != nil {
		return nil, err
	}
	cluster, err := sim.NewCluster(nodes)
	if err != nil {
		return nil, fmt.Errorf("%s: cluster: %w", path, err)
	}
	specs, _, err := sc.Jobs(cluster)
	if err != nil {
		return nil, err
	}
	for i := range specs {
		if string(specs[i].ID) == job {
			return reports.EstimateStart(nodes, run.Jobs, reports.LastStarts(run.Events), &specs[i], endU), nil
		}
	}
	return nil, fmt.Errorf("%s: job %q is not in the scenario's workload", path, job)
}
