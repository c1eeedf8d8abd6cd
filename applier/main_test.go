package applier

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
)

// TestMain stops the MariaDB servers that tests on a real target (the planner's property test)
// share, once every test ran (tests that need none start none), then fails the run when a
// goroutine the tests started is still running: the workers, the lock watcher, the pools.
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
