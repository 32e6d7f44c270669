package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/policies/placement"
	"github.com/gpusim/gpusim/policies/placement/fgd"
)

func init() {
	register(func(io *IO) *cobra.Command {
		var long bool
		cmd := &cobra.Command{
			Use:   "policies",
			Short: "List the scheduling policies and placements",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				tw := tabwriter.NewWriter(io.Out, 0, 0, 2, ' ', 0)
				for _, p := range policies.Catalog() {
					fmt.Fprintf(tw, "%s\t%s\n", p.Name, p.Summary)
					if long && p.Params != "" {
						fmt.Fprintf(tw, "\t  params: %s\n", p.Params)
					}
				}
				tw.Flush()
				fmt.Fprintf(io.Out, "\nplacements (params.placement): %s\n", strings.Join(placement.Names, ", "))
				fmt.Fprintf(io.Out, "fill-experiment placers (policies[].name with experiment: {kind: fill}; docs/fgd.md): %s\n", strings.Join(fgd.Policies(), ", "))
				return nil
			},
		}
		cmd.Flags().BoolVarP(&long, "long", "l", false, "also show each policy's parameters")
		return cmd
	})
}

func completePolicies(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return policies.Names(), cobra.ShellCompDirectiveNoFileComp
}
