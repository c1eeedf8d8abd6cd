// Command vplayer replicates a MySQL or MariaDB source's row-based binary log into a target
// database, exactly once. See README.md and `vplayer --help`.
package main

import (
	"os"

	"github.com/vplayer/vplayer/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
