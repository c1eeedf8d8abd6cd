package copier

import (
	"testing"

	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
)

// TestMain stops the shared MariaDB servers once every test ran, and fails the run on a goroutine
// the tests left running: the writers, the readers, the pools.
func TestMain(m *testing.M) { mysqltest.MainCheckingLeaks(m) }
