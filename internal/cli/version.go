package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Version is gpusim's version; release builds set it with
// -ldflags "-X github.com/gpusim/gpusim/internal/cli.Version=v1.2.3".
var Version = "v0.1.0-dev"

// VersionString returns the version plus the module's VCS revision when known.
func VersionString() string {
	v := Version
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += "+" + s.Value[:12]
			}
		}
	}
	return v
}

func init() {
	register(func(io *IO) *cobra.Command {
		return &cobra.Command{
			Use:   "version",
			Short: "Print the gpusim version",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				fmt.Fprintf(io.Out, "gpusim %s (%s %s/%s)\n", VersionString(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
				return nil
			},
		}
	})
}
