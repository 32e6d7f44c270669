package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpusim/gpusim/internal/fsutil"
	pp "github.com/gpusim/gpusim/policies/pollux"
	"github.com/gpusim/gpusim/scenarios"
	"github.com/gpusim/gpusim/traces"
	pm "github.com/gpusim/gpusim/workloads/pollux"
)

func init() {
	register(newCmdPollux)
}

func newCmdPollux(io *IO) *cobra.Command {
	var (
		load     string
		policies []string
		outDir   string
		parallel int
	)
	cmd := &cobra.Command{
		Use:   "pollux [SCENARIO.yaml]",
		Short: "Reproduce the Pollux OSDI'21 artifact: Tiresias, Optimus and Pollux with elastic jobs in 60 s rounds",
		Long: `Runs the Pollux artifact's round-based simulator model (60 s rounds, 30 s
restart after every allocation change, jobs whose speed and statistical
efficiency come from the artifact's profiles) under its three policies.

Without a scenario: the 8 embedded artifact workloads at --load, compared with
the authors' published mean JCTs. With a scenario: its pollux-format trace on
its cluster (one pool of identical nodes); the scenario's own policies are for
'gpusim run' and are not used here. See docs/pollux.md.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, p := range policies {
				if !slices.Contains(pp.Policies, p) {
					return UsageErrorf("--policy: unknown %q (want %s)", p, strings.Join(pp.Policies, ", "))
				}
			}
			cfg := pp.DefaultConfig()
			var runs []*pp.Run
			var err error
			published := len(args) == 0
			if len(args) == 0 {
				if !slices.Contains(pp.Loads, load) {
					return UsageErrorf("--load: want one of %s, got %q", strings.Join(pp.Loads, ", "), load)
				}
				if runs, err = pp.ArtifactRuns(load, policies); err != nil {
					return RuntimeError(err)
				}
			} else {
				jobs, name, c, err := polluxScenario(args[0], cfg)
				if err != nil {
					return err
				}
				cfg = c
				for _, p := range policies {
					runs = append(runs, &pp.Run{Workload: name, Jobs: jobs, Policy: p})
				}
			}
			t0 := time.Now()
			if err := pp.RunAll(runs, cfg, parallel); err != nil {
				return RuntimeError(err)
			}
			wall := time.Since(t0)
			var tab strings.Builder
			fmt.Fprintf(&tab, "workload,policy,jobs,mean_jct_s,published_mean_jct_s,diff_pct,restarts\n")
			fmt.Fprintf(io.Out, "%-12s %-9s %5s %13s %13s %8s %9s\n", "workload", "policy", "jobs", "mean JCT (s)", "published (s)", "diff", "restarts")
			for _, r := range runs {
				pub, diff := "", ""
				var w int
				if published {
					fmt.Sscanf(r.Workload, "workload-%d", &w)
					v := pp.Published[[2]string{r.Policy, load}][w-1]
					pub = fmt.Sprintf("%.1f", v)
					diff = fmt.Sprintf("%+.1f%%", 100*(r.Result.MeanJCT()/v-1))
				}
				rs := 0
				for _, n := range r.Result.Restarts {
					rs += n
				}
				fmt.Fprintf(io.Out, "%-12s %-9s %5d %13.1f %13s %8s %9d\n", r.Workload, r.Policy, len(r.Jobs), r.Result.MeanJCT(), pub, diff, rs)
				fmt.Fprintf(&tab, "%s,%s,%d,%.3f,%s,%s,%d\n", r.Workload, r.Policy, len(r.Jobs), r.Result.MeanJCT(), pub, strings.TrimSuffix(diff, "%"), rs)
			}
			fmt.Fprintf(io.Err, "%d runs in %.1f s\n", len(runs), wall.Seconds())
			if outDir != "" {
				if err := os.MkdirAll(outDir, 0o755); err != nil {
					return RuntimeError(err)
				}
				var jobs strings.Builder
				jobs.WriteString("workload,policy,job,application,submit_s,jct_s,restarts\n")
				for _, r := range runs {
					for i, n := range r.Result.Names {
						fmt.Fprintf(&jobs, "%s,%s,%s,%s,%g,%g,%d\n", r.Workload, r.Policy, n, r.Jobs[i].App, r.Jobs[i].Submit, r.Result.JCT[i], r.Result.Restarts[i])
					}
				}
				for name, data := range map[string]string{"summary.csv": tab.String(), "jobs.csv": jobs.String()} {
					if err := fsutil.WriteBytesAtomic(filepath.Join(outDir, name), []byte(data)); err != nil {
						return RuntimeError(err)
					}
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&load, "load", "1.0", "artifact workload load without a scenario: 1.0 (160 jobs each) or 0.5 (80)")
	cmd.Flags().StringSliceVar(&policies, "policy", slices.Clone(pp.Policies), "policies to run: tiresias, optimus, pollux")
	cmd.Flags().StringVarP(&outDir, "out", "o", "", "write summary.csv and jobs.csv (per-job JCT) here")
	cmd.Flags().IntVar(&parallel, "parallel", 0, "simulations at once (default GOMAXPROCS); results do not depend on it")
	return cmd
}

// polluxScenario reads the pollux-format trace and the cluster shape of a
// scenario for `gpusim pollux`.
func polluxScenario(path string, cfg pp.Config) ([]pm.Job, string, pp.Config, error) {
	sc, err := scenarios.Load(path, nil)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, "", cfg, UsageErrorf("scenario %s: %v", path, pe.Err)
		}
		return nil, "", cfg, UsageError(err)
	}
	tr := sc.Workload.Trace
	if tr == nil || tr.Format != traces.FormatPollux {
		return nil, "", cfg, UsageErrorf("%s: workload.trace.format: gpusim pollux needs a %q trace", path, traces.FormatPollux)
	}
	pools := sc.Cluster.Pools
	if len(pools) != 1 || pools[0].GPUs == nil || pools[0].Nodes < 1 {
		return nil, "", cfg, UsageErrorf("%s: cluster.pools: gpusim pollux needs one pool with nodes and gpus", path)
	}
	cfg.Nodes, cfg.GPUsPerNode = pools[0].Nodes, int(*pools[0].GPUs)
	if cfg.GPUsPerNode < 1 || cfg.GPUsPerNode > 4 {
		return nil, "", cfg, UsageErrorf("%s: cluster.pools[0].gpus: the artifact's profiles cover 1..4 GPUs per node, got %d", path, cfg.GPUsPerNode)
	}
	file := sc.Resolve(tr.Path)
	f, err := os.Open(file)
	if err != nil {
		return nil, "", cfg, UsageErrorf("%s: workload.trace.path: %v", path, err)
	}
	defer f.Close()
	jobs, err := pm.ReadWorkload(f, file)
	if err != nil {
		return nil, "", cfg, UsageError(err)
	}
	for _, j := range jobs {
		if total := cfg.Nodes * cfg.GPUsPerNode; j.Replicas > total {
			return nil, "", cfg, UsageErrorf("%s:%d: column num_replicas: job %s needs %d GPUs, the cluster (%s) has %d", file, j.Line, j.Name, j.Replicas, path, total)
		}
	}
	return jobs, strings.TrimSuffix(filepath.Base(file), filepath.Ext(file)), cfg, nil
}
