package binlog

import (
	"testing"

	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
)

// TestMain fails the run on a goroutine the tests left running: the syncer's, the pace check's,
// the capture test's server's.
func TestMain(m *testing.M) { mysqltest.MainCheckingLeaks(m) }
