package applier

import (
	"testing"

	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
)

// TestMain stops the MariaDB servers that tests on a real target (the planner's property test)
// share, once every test ran. Tests that need none start none.
func TestMain(m *testing.M) { mysqltest.Main(m) }
