package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gpusim/gpusim/scenarios"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/traces"
)

func init() {
	register(func(io *IO) *cobra.Command {
		var sets []string
		var demo bool
		cmd := &cobra.Command{
			Use:   "validate SCENARIO.yaml",
			Short: "Check a scenario: schema, values, cluster, workload and policies",
			Long: `Validate decodes the scenario strictly, applies defaults and --set overrides,
reports every problem with file:line and field path, then builds the cluster and
the workload and checks that every job can run on the empty cluster. Last, it
builds every policy and its engine as run does and runs the policy's start-up
checks (Kueue: every job queue maps to a LocalQueue; Slurm: node expressions
match nodes, every job maps to a partition that can hold it; Volcano: queue
guarantees fit the cluster): when validate says ok, every policy starts. Exit
code 0 when valid, 2 otherwise.`,
			Args: func(cmd *cobra.Command, args []string) error {
				if demo && len(args) == 0 || !demo && len(args) == 1 {
					return nil
				}
				return UsageErrorf("validate needs exactly one SCENARIO file (or --demo)")
			},
			RunE: func(cmd *cobra.Command, args []string) error {
				path := ""
				if len(args) == 1 {
					path = args[0]
				}
				sc, err := loadScenario(path, demo, sets, nil)
				if err != nil {
					return err
				}
				nodes, err := sc.Nodes()
				if err != nil {
					return classifyRunError(err)
				}
				c, err := sim.NewCluster(nodes)
				if err != nil {
					return UsageError(err)
				}
				jobs, rep, err := sc.Jobs(c)
				if err != nil {
					return classifyRunError(err)
				}
				// Every policy must start: the checks run makes at t=0.
				if err := sc.Preflight(c, jobs); err != nil {
					return classifyRunError(err)
				}
				names := make([]string, len(sc.Policies))
				for i := range sc.Policies {
					names[i] = sc.Policies[i].DisplayName()
				}
				fmt.Fprintf(io.Out, "%s: ok\n  cluster: %d nodes, %d GPUs (%v)\n  workload: %d jobs\n  policies: %v\n  seed: %d  sha256: %s\n",
					describe(sc, path), c.NumNodes(), c.NumGPUs(), c.Models(), len(jobs), names, sc.SeedValue(), sc.SHA256()[:16])
				for _, w := range sc.Warnings() {
					fmt.Fprintf(io.Out, "  warning: %s\n", w)
				}
				if rep != nil && rep.Format == traces.FormatK8s {
					for _, n := range rep.Notes { // what the manifests ask for but is not simulated
						fmt.Fprintf(io.Out, "  warning: workload.trace: %s\n", n)
					}
				}
				if rep != nil && rep.SkippedTotal() > 0 {
					fmt.Fprintf(io.Out, "  trace: %d rows skipped\n", rep.SkippedTotal())
				}
				return nil
			},
		}
		cmd.Flags().StringArrayVar(&sets, "set", nil, "override a scenario field: path=value (repeatable)")
		cmd.Flags().BoolVar(&demo, "demo", false, "validate the embedded demo scenario")
		return cmd
	})
}

func describe(sc *scenarios.Scenario, path string) string {
	if path == "" {
		return "demo scenario"
	}
	return path
}
