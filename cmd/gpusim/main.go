// Command gpusim is the gpusim command line; see internal/cli and the README.
package main

import (
	"os"

	"github.com/gpusim/gpusim/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
