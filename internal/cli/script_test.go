package cli

import (
	"fmt"
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets testscript run the gpusim command line as a subprocess named
// "gpusim" (and "gpusim-exitcode", which prints "exit-code=N" on stderr and always
// succeeds, so scripts can assert the exact exit code).
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"gpusim": func() { os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
		"gpusim-exitcode": func() {
			code := Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
			fmt.Fprintf(os.Stderr, "exit-code=%d\n", code)
			os.Exit(0)
		},
		// gpusim-gzipcheck FILE...: fails unless every file is non-empty gzip
		// (the pprof format), for the profile flags' test.
		"gpusim-gzipcheck": func() {
			for _, f := range os.Args[1:] {
				b, err := os.ReadFile(f)
				if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
					fmt.Fprintf(os.Stderr, "%s: not a gzip file (%v)\n", f, err)
					os.Exit(1)
				}
			}
			os.Exit(0)
		},
	})
}

// TestScripts runs the end-to-end CLI scripts in testdata/script/*.txtar.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/script"})
}
