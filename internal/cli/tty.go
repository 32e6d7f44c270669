package cli

import (
	"os"
	"strings"

	"golang.org/x/term"
)

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// isCobraUsageError recognizes cobra's own argument errors (unknown command,
// wrong number of args), which carry no exit code.
func isCobraUsageError(err error) bool {
	s := err.Error()
	for _, p := range []string{"unknown command", "accepts ", "requires at least", "requires at most", "unknown flag", "unknown shorthand", "invalid argument"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}
