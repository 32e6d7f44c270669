// Package cli implements the gpusim command line (cobra). It is the only package
// that reads the wall clock (progress, wall_seconds) and maps errors to exit codes:
// 0 ok, 1 runtime error, 2 usage/validation error, 3 regression gate failed.
package cli

import (
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/spf13/cobra"
)

// IO holds the streams a command writes to (injectable for tests).
type IO struct {
	In       io.Reader
	Out      io.Writer
	Err      io.Writer
	ErrIsTTY bool // stderr is a terminal: progress bars are drawn
}

// subcommands are registered by each command's file in init, so command files stay
// independent of each other.
var subcommands []func(*IO) *cobra.Command

// register adds a top-level command constructor.
func register(f func(*IO) *cobra.Command) { subcommands = append(subcommands, f) }

// NewRootCmd builds the command tree.
func NewRootCmd(io *IO) *cobra.Command {
	root := &cobra.Command{
		Use:   "gpusim",
		Short: "Discrete-event simulator and policy lab for GPU clusters",
		Long: `gpusim replays job traces (real or synthetic) against a modeled GPU cluster
under real scheduling policies and reports queue time, JCT, utilization,
fragmentation and fairness.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(io.Out)
	root.SetErr(io.Err)
	root.SetIn(io.In)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return UsageError(fmt.Errorf("%w (see '%s --help')", err, c.CommandPath()))
	})
	cmds := make([]*cobra.Command, 0, len(subcommands))
	for _, f := range subcommands {
		cmds = append(cmds, f(io))
	}
	sort.Slice(cmds, func(a, b int) bool { return cmds[a].Name() < cmds[b].Name() })
	root.AddCommand(cmds...)
	return root
}

// Main runs the command line with args (without the program name) and returns the
// exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	io := &IO{In: stdin, Out: stdout, Err: stderr}
	if f, ok := stderr.(*os.File); ok {
		io.ErrIsTTY = isTerminal(f)
	}
	root := NewRootCmd(io)
	root.SetArgs(args)
	err := root.Execute()
	if err != nil {
		fmt.Fprintf(stderr, "gpusim: %v\n", err)
		code := exitCode(err)
		if code == ExitRuntime && isCobraUsageError(err) {
			code = ExitUsage
		}
		return code
	}
	return ExitOK
}
