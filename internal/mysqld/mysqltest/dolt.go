package mysqltest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/vplayer/vplayer/internal/mysqld"
)

// DoltServerID is the server id of the shared Dolt source.
const DoltServerID = 3

// doltStartTimeout bounds finding, building (about 5 minutes on 2 cores, once per machine: the
// binary is cached) and starting Dolt.
const doltStartTimeout = 15 * time.Minute

var (
	doltMu       sync.Mutex
	doltServer   *mysqld.Server // nil until started, and after stop
	doltStartErr error
)

// Dolt returns the shared Dolt sql-server, a MySQL-flavour binlog primary (see mysqld.StartDolt),
// starting it on first use; MariaDB targets come from Pair. When no dolt of the pinned version is
// installed it is built with the go toolchain and cached. Without dolt and without a way to build
// it, Dolt skips the test, or fails it when VPLAYER_REQUIRE_MYSQL=1.
//
// Tests that restart the server (Server.Restart) must not run in parallel with others using it.
func Dolt(t testing.TB) *mysqld.Server {
	t.Helper()
	if !mainCalled.Load() {
		t.Fatalf("mysqltest: Dolt needs mysqltest.Main(m) (or Run) in the package's TestMain, which stops the servers")
	}
	s, err := dolt()
	if err != nil {
		if errors.Is(err, mysqld.ErrDoltNotFound) && os.Getenv(EnvRequire) != "1" {
			t.Skipf("mysqltest: %v (set %s=1 to fail instead)", err, EnvRequire)
		}
		t.Fatalf("mysqltest: %v", err)
	}
	return s
}

func dolt() (*mysqld.Server, error) {
	doltMu.Lock()
	defer doltMu.Unlock()
	if doltServer == nil && doltStartErr == nil {
		doltServer, doltStartErr = startDolt()
	}
	return doltServer, doltStartErr
}

func startDolt() (*mysqld.Server, error) {
	ctx, cancel := context.WithTimeout(context.Background(), doltStartTimeout)
	defer cancel()
	binary, err := mysqld.FindDolt(ctx)
	if errors.Is(err, mysqld.ErrDoltNotFound) && os.Getenv(mysqld.EnvDolt) == "" {
		fmt.Fprintf(os.Stderr, "mysqltest: %v; building dolt %s (about 5 minutes, once: it is cached)\n", err, mysqld.DoltVersion)
		binary, err = mysqld.BuildDolt(ctx, os.Stderr)
	}
	if err != nil {
		return nil, err
	}
	return mysqld.StartDolt(ctx, binary, mysqld.DoltOptions{Name: "dolt", ServerID: DoltServerID})
}

// stopDolt ends the shared Dolt server if it was started. It kills it and waits for the exit:
// a clean shutdown waits for its binlog streamers to notice their closed connections, which they
// do only at their next heartbeat (up to 30s), and the directory is thrown away anyway.
func stopDolt() error {
	doltMu.Lock()
	defer doltMu.Unlock()
	if doltServer != nil {
		doltServer.Kill()
	}
	doltServer = nil
	doltStartErr = errors.New("servers stopped")
	return nil
}
