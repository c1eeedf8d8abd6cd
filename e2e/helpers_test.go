package e2e

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/internal/compare"
	"github.com/vplayer/vplayer/internal/eventually"
	"github.com/vplayer/vplayer/internal/mysqld"
	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
	"github.com/vplayer/vplayer/internal/workload"
	"github.com/vplayer/vplayer/stream"
	"github.com/vplayer/vplayer/workflow"
)

// binary is the vplayer binary built for the process tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "vplayer-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "vplayer")
	build := exec.Command("go", "build", "-race", "-o", binary, "github.com/vplayer/vplayer/cmd/vplayer")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build vplayer:", err)
		os.Exit(1)
	}
	// The goroutines that run before any test; every one a test, stream, syncer or pool starts
	// must be gone once the tests and the servers have stopped.
	before := goleak.IgnoreCurrent()
	code := mysqltest.Run(m)
	os.RemoveAll(dir)
	if err := goleak.Find(before); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "goroutines leaked:", err)
		code = 1
	}
	os.Exit(code)
}

// env is one test's servers and databases.
type env struct {
	t              *testing.T
	source, target *mysqld.Server
	db             string // the database's name, the same on both sides
	src, dst       *sql.DB
	srcPool        *sql.DB // no default database, multi statements, as vplayer opens it
	dstPool        *sql.DB
	workflow       string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	source, target := mysqltest.Pair(t)
	return newEnvOn(t, source, target)
}

// newEnvOn is newEnv on the given source and target servers.
func newEnvOn(t *testing.T, source, target *mysqld.Server) *env {
	t.Helper()
	name := mysqltest.DBName(t)
	e := &env{t: t, source: source, target: target, db: name, workflow: name}
	e.src = mysqltest.DB(t, source, name)
	e.dst = mysqltest.DB(t, target, name)
	e.srcPool = pool(t, source)
	e.dstPool = pool(t, target)
	return e
}

func pool(t *testing.T, s *mysqld.Server) *sql.DB {
	db, err := s.Pool("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func (e *env) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	e.t.Cleanup(cancel)
	return ctx
}

// createWorkload creates the workload tables on both sides.
func (e *env) createWorkload() {
	e.t.Helper()
	if err := workload.Create(e.ctx(), e.db, e.src, e.dst); err != nil {
		e.t.Fatal(err)
	}
}

// streamConfig is a stream configuration for this env with test-friendly timings.
func (e *env) streamConfig() stream.Config {
	srcPort := uint16(e.source.Port())
	cfg := stream.DefaultConfig()
	cfg.Workflow = e.workflow
	cfg.Source = stream.Source{Host: "127.0.0.1", Port: srcPort, User: "root", DB: e.db, Pool: e.srcPool}
	cfg.Target, cfg.TargetDB, cfg.StartPos = e.dstPool, e.db, "current"
	cfg.ProgressDeadline, cfg.RetryDelay = time.Minute, 200*time.Millisecond
	if e.source.IsDolt() {
		cfg.RetryDelay = time.Second // see startVplayerWith: Dolt's spurious 1236
	}
	cfg.ServerID, cfg.Options = binlog.ServerIDFor(e.workflow), "{}"
	cfg.Logger = slog.New(slog.NewTextHandler(testWriter{e.t}, &slog.HandlerOptions{Level: slog.LevelWarn})).With("workflow", e.workflow)
	return cfg
}

// runStream runs a stream in process until the returned stop function is called; stop returns
// Run's error.
func (e *env) runStream(cfg stream.Config) (stop func() error) {
	e.t.Helper()
	s, err := stream.New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	stopped := false
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			return errors.New("stream did not stop within 30s")
		}
	}
	e.t.Cleanup(func() { stop() })
	return stop
}

// sourcePos returns the source's current GTID position.
func (e *env) sourcePos() binlog.Position {
	e.t.Helper()
	p, err := stream.CurrentPosition(e.ctx(), e.srcPool, e.source.Flavor())
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// record returns the workflow's record.
func (e *env) record() workflow.Record {
	e.t.Helper()
	r, err := workflow.New(e.dstPool, "_vt").Get(e.ctx(), e.workflow)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// waitCaughtUp waits until the workflow's recorded position contains the source's current one.
func (e *env) waitCaughtUp(timeout time.Duration) {
	e.t.Helper()
	want := e.sourcePos()
	eventually.Must(e.t, timeout, 50*time.Millisecond, fmt.Sprintf("the workflow to catch up with the source at %q", want), func() error {
		r, err := workflow.New(e.dstPool, "_vt").Get(e.ctx(), e.workflow)
		if err != nil {
			return err
		}
		p, err := binlog.ParsePosition(r.Pos, e.source.Flavor())
		if err == nil && !p.Contains(want) {
			err = fmt.Errorf("recorded %q", r.Pos)
		}
		return err
	})
}

// assertEqual compares tables row by row, every value exact (see compare.Tables). A table empty
// on the source fails unless opts name it in compare.ExpectEmpty.
func (e *env) assertEqual(tables []string, opts ...compare.Option) {
	e.t.Helper()
	rs, err := compare.Tables(e.ctx(), e.src, e.dst, e.db, e.db, tables, opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, r := range rs {
		if !r.Equal() {
			e.t.Errorf("target differs from source: %s", r)
		} else {
			e.t.Logf("%s", r)
		}
	}
}

func (e *env) count(db *sql.DB, table string) int {
	e.t.Helper()
	var n int
	if err := db.QueryRowContext(e.ctx(), "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// testWriter sends log output to t.Log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// waitRunning waits until the workflow's record says Running, so that a workload started now is
// after its start position.
func (e *env) waitRunning(timeout time.Duration) {
	e.t.Helper()
	eventually.Must(e.t, timeout, 20*time.Millisecond, "workflow "+e.workflow+" Running", func() error {
		r, err := workflow.New(e.dstPool, "_vt").Get(e.ctx(), e.workflow)
		if err == nil && r.State != workflow.StateRunning {
			err = fmt.Errorf("state %q, message %q", r.State, r.Message)
		}
		return err
	})
}

// newCaptureLogger returns a text logger writing to w, as vplayer's own is configured.
func newCaptureLogger(w io.Writer, workflow string) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, nil)).With("workflow", workflow)
}
