package stream

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/internal/eventually"
	"github.com/vplayer/vplayer/internal/mysqld"
	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
	"github.com/vplayer/vplayer/workflow"
)

// TestMain fails the run on a stream, syncer, keepalive or pool the tests left running.
func TestMain(m *testing.M) { mysqltest.MainCheckingLeaks(m) }

func TestErrorKey(t *testing.T) {
	a := errorKey(errors.New("applier stalled: no progress for 5m2s while applying UPDATE `s`.`t`"))
	b := errorKey(errors.New("applier stalled: no progress for 5m7s while applying UPDATE `s`.`t`"))
	c := errorKey(errors.New("relay log I/O stalled: applier busy for 5m2s"))
	if a != b {
		t.Errorf("errorKey differs for the same error with other durations: %q vs %q", a, b)
	}
	if a == c {
		t.Errorf("errorKey(%q) equals the key of a different error", a)
	}
}

func TestMessenger_setKeepsNewest(t *testing.T) {
	m := newMessenger(nil)
	for i := 0; i < 100; i++ {
		m.set(fmt.Sprintf("message %d", i)) // must never block
	}
	if got, want := <-m.next, "message 99"; got != want {
		t.Errorf("pending message = %q, want %q", got, want)
	}
}

// pool opens a pool as vplayer does: no default database, multi statements.
func pool(t *testing.T, s *mysqld.Server) *sql.DB {
	t.Helper()
	db, err := s.Pool("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func testConfig(t *testing.T) (Config, *workflow.Store) {
	t.Helper()
	source, target := mysqltest.Pair(t)
	name := mysqltest.DBName(t)
	mysqltest.DB(t, source, name)
	mysqltest.DB(t, target, name)
	src, dst := pool(t, source), pool(t, target)
	sidecar := name + "_vt"
	t.Cleanup(func() { dst.Exec("DROP DATABASE IF EXISTS " + sidecar) })
	return Config{
		Workflow: name,
		Source:   Source{Host: "127.0.0.1", Port: uint16(source.Port()), User: "root", DB: name, Pool: src},
		Target:   dst, TargetDB: name, Sidecar: sidecar, StartPos: "current",
		ProgressDeadline: time.Minute, HeartbeatInterval: time.Second, SourceHeartbeatPeriod: time.Second,
		RelayLogMaxBytes: 250000, RelayLogMaxItems: 5000, RetryDelay: 100 * time.Millisecond,
		ServerID: binlog.ServerIDFor(name), Options: "{}",
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	}, workflow.New(dst, sidecar)
}

// TestRun_cancelStops: cancelling Run's context is a requested stop: nil, state Stopped.
func TestRun_cancelStops(t *testing.T) {
	cfg, store := testConfig(t)
	var states []string
	cfg.OnState = func(s string) { states = append(states, s) }
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	waitState(t, store, cfg.Workflow, workflow.StateRunning)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after cancel = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of cancel")
	}
	if r, _ := store.Get(context.Background(), cfg.Workflow); r.State != workflow.StateStopped {
		t.Errorf("state = %q, want Stopped", r.State)
	}
	if got := strings.Join(states, ","); got != "Running,Stopped" {
		t.Errorf("OnState saw %s, want Running,Stopped", got)
	}
}

// TestRun_maxTimeToRetry: the same error for longer than MaxTimeToRetryOnError becomes terminal:
// state Error, message "terminal error: ...", Run returns ErrTerminal.
func TestRun_maxTimeToRetry(t *testing.T) {
	cfg, store := testConfig(t)
	cfg.Source.Port = 1 // the binlog connection fails every attempt; the SQL pool still works
	cfg.MaxTimeToRetryOnError = time.Second
	var reported, terminal int
	cfg.OnError = func(err error, term bool) {
		reported++
		if term {
			terminal++
		}
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	err = s.Run(ctx)
	if !errors.Is(err, ErrTerminal) {
		t.Fatalf("Run = %v, want ErrTerminal", err)
	}
	if took := time.Since(start); took < time.Second || took > 10*time.Second {
		t.Errorf("gave up after %v, want a little over 1s", took)
	}
	r, err := store.Get(context.Background(), cfg.Workflow)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != workflow.StateError || !strings.HasPrefix(r.Message, "terminal error: ") {
		t.Errorf("record state %q message %q, want Error and a terminal error message", r.State, r.Message)
	}
	if reported < 3 || terminal != 1 {
		t.Errorf("OnError saw %d errors, %d terminal; want several retries and one terminal", reported, terminal)
	}
}

func waitState(t *testing.T, store *workflow.Store, wf, want string) {
	t.Helper()
	eventually.Must(t, 30*time.Second, 20*time.Millisecond, "workflow "+wf+" in state "+want, func() error {
		r, err := store.Get(context.Background(), wf)
		if err == nil && r.State != want {
			err = fmt.Errorf("state %s, message %q", r.State, r.Message)
		}
		return err
	})
}

// TestAddStateLog_afterCancel: the State row of a change already recorded lands even when the
// stop arrives between the record's write and the row's (the race CI once hit in TestStateLog:
// a stop right after Running dropped "Running at ..., was Init" from the history).
func TestAddStateLog_afterCancel(t *testing.T) {
	cfg, store := testConfig(t)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.prepare(ctx); err != nil {
		t.Fatal(err)
	}
	lease, err := s.own.acquire(ctx)
	if err != nil || lease == nil {
		t.Fatalf("acquire = %v, %v", lease, err)
	}
	defer lease.Release()
	stopped, cancel := context.WithCancel(ctx)
	cancel()
	s.rep.addStateLog(stopped, workflow.StateRunning, "Running at the test's position, was Init")
	var n int
	if err := store.DB().QueryRow("SELECT COUNT(*) FROM "+cfg.Sidecar+".vreplication_log WHERE vrepl_id = ? AND type = 'State' AND message = ?",
		s.id, "Running at the test's position, was Init").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("%d State rows after a cancelled context, want 1", n)
	}
}
