// Package mysqltest shares one source and one target server among the tests of a test binary.
//
// A package whose tests need servers calls Main (or Run) from its TestMain:
//
//	func TestMain(m *testing.M) { mysqltest.Main(m) }
//
// and each test takes the pair and its own databases:
//
//	source, target := mysqltest.Pair(t)
//	src := mysqltest.DB(t, source, mysqltest.DBName(t))
//
// The servers start on the first call to Pair, so a run whose selected tests need none pays
// nothing, and stop when Main returns. Without a server binary, Pair skips the test, or fails it
// when VPLAYER_REQUIRE_MYSQL=1 (as CI sets).
package mysqltest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/vplayer/vplayer/internal/mysqld"
)

// EnvRequire names the environment variable that, set to "1", turns a missing server binary
// into a test failure instead of a skip.
const EnvRequire = "VPLAYER_REQUIRE_MYSQL"

// startTimeout bounds the start of the pair.
const startTimeout = 2 * time.Minute

// Server ids of the pair. Binlog readers under test need ids different from both.
const (
	SourceServerID = 1
	TargetServerID = 2
)

var (
	mainCalled atomic.Bool

	mu       sync.Mutex
	source   *mysqld.Server // nil until started, and after stop
	target   *mysqld.Server
	startErr error // why the pair is unavailable: failed to start, or stopped
)

// Main runs the tests, stops the shared servers if any test started them, and exits with the
// tests' code. Call it from TestMain.
func Main(m *testing.M) {
	os.Exit(Run(m))
}

// MainCheckingLeaks is Main for a package whose tests start goroutines (workers, pools, syncers):
// once the tests ran and the shared servers stopped, a goroutine the tests started that is still
// running fails the run. What ran before the tests (the runtime's, the test binary's) is not
// counted.
func MainCheckingLeaks(m *testing.M) {
	// Taken before any test runs: goroutines the tests leak are not excused.
	before := goleak.IgnoreCurrent()
	code := Run(m)
	if err := goleak.Find(before); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "goroutines leaked:", err)
		code = 1
	}
	os.Exit(code)
}

// Run is Main without the exit, for a TestMain that checks more after the tests (see
// MainCheckingLeaks).
func Run(m *testing.M) int {
	mainCalled.Store(true)
	code := m.Run()
	if err := errors.Join(stop(), stopDolt()); err != nil {
		// The servers are gone either way; a slow or failed shutdown is not a test failure.
		fmt.Fprintf(os.Stderr, "mysqltest: %v\n", err)
	}
	return code
}

// Pair returns the shared source (binlog on, ROW format, server id SourceServerID) and target
// (binlog off, server id TargetServerID), starting both on first use. Tests share them: each
// works in its own databases (see DBName). Without a server binary it skips the test, or fails it
// when VPLAYER_REQUIRE_MYSQL=1; a failed start always fails it.
func Pair(t testing.TB) (src, dst *mysqld.Server) {
	t.Helper()
	if !mainCalled.Load() {
		t.Fatalf("mysqltest: Pair needs mysqltest.Main(m) (or Run) in the package's TestMain, which stops the servers")
	}
	src, dst, err := pair()
	if err != nil {
		if errors.Is(err, mysqld.ErrNotFound) && os.Getenv(EnvRequire) != "1" {
			t.Skipf("mysqltest: %v (set %s=1 to fail instead)", err, EnvRequire)
		}
		t.Fatalf("mysqltest: %v", err)
	}
	return src, dst
}

func pair() (src, dst *mysqld.Server, err error) {
	mu.Lock()
	defer mu.Unlock()
	if source == nil && startErr == nil {
		source, target, startErr = startPair()
	}
	return source, target, startErr
}

// startPair starts the source and the target concurrently; if either fails the other is
// stopped.
func startPair() (src, dst *mysqld.Server, err error) {
	if _, err := mysqld.Find(); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	var srcErr, dstErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		src, srcErr = mysqld.Start(ctx, mysqld.Options{Name: "source", ServerID: SourceServerID, Binlog: true})
	})
	wg.Go(func() {
		dst, dstErr = mysqld.Start(ctx, mysqld.Options{Name: "target", ServerID: TargetServerID})
	})
	wg.Wait()
	if err := errors.Join(srcErr, dstErr); err != nil {
		for _, s := range []*mysqld.Server{src, dst} {
			if s != nil {
				s.Stop()
			}
		}
		return nil, nil, err
	}
	return src, dst, nil
}

// stop stops the pair if it was started.
func stop() error {
	mu.Lock()
	defer mu.Unlock()
	var errs []error
	for _, s := range []*mysqld.Server{source, target} {
		if s != nil {
			errs = append(errs, s.Stop())
		}
	}
	source, target = nil, nil
	startErr = errors.New("servers stopped")
	return errors.Join(errs...)
}

// DB drops and creates database name on s and returns a pool on it, closed at the end of the
// test. The database itself is left for inspection; the server is temporary.
func DB(t testing.TB, s *mysqld.Server, name string) *sql.DB {
	t.Helper()
	ctx := t.Context()
	admin, err := s.DB("")
	if err != nil {
		t.Fatalf("mysqltest: open %s: %v", s.Addr(), err)
	}
	defer admin.Close()
	q := quoteIdent(name)
	for _, stmt := range []string{"DROP DATABASE IF EXISTS " + q, "CREATE DATABASE " + q} {
		if _, err := admin.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("mysqltest: %s on %s: %v", stmt, s.Name(), err)
		}
	}
	db, err := s.DB(name)
	if err != nil {
		t.Fatalf("mysqltest: open %s/%s: %v", s.Addr(), name, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// quoteIdent quotes a MySQL identifier with backquotes.
func quoteIdent(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}
