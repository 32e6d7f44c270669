// Package cli implements the gpusim command line (cobra). It is the only package
// that reads the wall clock (progress, wall_seconds) and maps errors to exit codes:
// 0 ok, 1 runtime error, 2 usage/validation error, 3 regression gate failed.
package cli

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

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
	strictCompletion(root)
	return root
}

// Main runs the command line with args (without the program name) and returns the
// exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	out := &trackingWriter{w: stdout}
	io := &IO{In: stdin, Out: out, Err: stderr}
	if f, ok := stderr.(*os.File); ok {
		io.ErrIsTTY = isTerminal(f)
	}
	root := NewRootCmd(io)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil && out.err != nil {
		// Output that did not reach stdout (a closed pipe, a full disk) is a
		// failure even when the command itself succeeded.
		err = RuntimeError(fmt.Errorf("write standard output: %w", out.err))
	}
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

// trackingWriter remembers the first write error of the standard output, so a
// command whose output was lost exits 1 instead of 0.
type trackingWriter struct {
	w   io.Writer
	err error
}

func (t *trackingWriter) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	if err != nil && t.err == nil {
		t.err = err
	}
	return n, err
}

// strictCompletion makes 'gpusim completion SHELL' with an unknown shell a usage
// error (exit 2) instead of cobra's help text and exit 0.
func strictCompletion(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		var shells []string
		for _, sc := range c.Commands() {
			shells = append(shells, sc.Name())
		}
		sort.Strings(shells)
		c.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return UsageErrorf("completion: unknown shell %q (want one of %s)", args[0], strings.Join(shells, ", "))
			}
			return nil
		}
		c.RunE = func(cmd *cobra.Command, args []string) error {
			return UsageErrorf("completion: name a shell (%s)", strings.Join(shells, ", "))
		}
	}
}
