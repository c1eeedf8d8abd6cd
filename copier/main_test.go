package copier

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
)

// TestMain stops the shared MariaDB servers once every test ran, then fails the run when a
// goroutine the tests started is still running: the writers, the readers, the pools.
func TestMain(m *testing.M) {
	// Taken before any test runs: goroutines the tests leak are not excused.
	before := goleak.IgnoreCurrent()
	code := mysqltest.Run(m)
	if err := goleak.Find(before); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "goroutines leaked:", err)
		code = 1
	}
	os.Exit(code)
}
