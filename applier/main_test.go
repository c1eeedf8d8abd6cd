package applier

import (
	"testing"

	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
)

// TestMain stops the MariaDB servers that tests on a real target (the planner's property test)
// share, once every test ran, and fails the run on a goroutine the tests left running: the
// workers, the lock watcher, the pools.
func TestMain(m *testing.M) { mysqltest.MainCheckingLeaks(m) }
