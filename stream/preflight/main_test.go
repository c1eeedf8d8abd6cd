package preflight

import (
	"testing"

	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
)

func TestMain(m *testing.M) { mysqltest.Main(m) }
