package binlog

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run when a goroutine the tests started is still running once they all
// ran: the syncer's, the pace check's, the capture test's server's.
func TestMain(m *testing.M) {
	// Taken before any test runs: goroutines the tests leak are not excused.
	before := goleak.IgnoreCurrent()
	code := m.Run()
	if err := goleak.Find(before); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "goroutines leaked:", err)
		code = 1
	}
	os.Exit(code)
}
