package e2e

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vplayer/vplayer/stream"
	"github.com/vplayer/vplayer/workflow"
)

// TestLostOwnerTerminalErrorIsLostOwnership: a stream whose lease was taken over meets a
// duplicate key in its next batch before anything told it of the loss (the new owner committed
// that row): it ends with lost ownership of the workflow to the new owner, not a terminal error,
// and writes no state and no log row.
func TestLostOwnerTerminalErrorIsLostOwnership(t *testing.T) {
	e := newEnv(t)
	e.forgetWorkflow()
	e.execBoth("CREATE TABLE t (id INT NOT NULL PRIMARY KEY, v INT NOT NULL)")
	cfg := e.streamConfig()
	// Nothing writes the record behind the test's back: no renewal (every ttl/3) and no
	// heartbeat write, whose fence would tell the stream of the loss first.
	cfg.LeaseTTL = 3 * time.Minute
	cfg.HeartbeatInterval = time.Minute
	cfg.SourceHeartbeatPeriod = 30 * time.Second
	var mu sync.Mutex
	var terminals []error
	cfg.OnError = func(err error, terminal bool) {
		if terminal {
			mu.Lock()
			terminals = append(terminals, err)
			mu.Unlock()
		}
	}
	s, err := stream.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	e.waitRunning(30 * time.Second)
	e.execOn(e.src, "INSERT INTO t VALUES (1, 1)")
	e.waitCaughtUp(30 * time.Second)

	// Another process takes the workflow over and commits the next row.
	if _, err := e.dstPool.ExecContext(e.ctx(), "UPDATE _vt.vreplication SET owner = 'new-owner', epoch = epoch + 1, lease_until = lease_until + 600000 WHERE workflow = ?", e.workflow); err != nil {
		t.Fatal(err)
	}
	var logs int
	if err := e.dstPool.QueryRowContext(e.ctx(), "SELECT COUNT(*) FROM _vt.vreplication_log").Scan(&logs); err != nil {
		t.Fatal(err)
	}
	e.execOn(e.dst, "INSERT INTO t VALUES (2, 2)")
	e.execOn(e.src, "INSERT INTO t VALUES (2, 2)")

	var runErr error
	select {
	case runErr = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the stream that lost its workflow did not end within 30s")
	}
	want := "lost ownership of workflow " + e.workflow + " to new-owner"
	if !errors.Is(runErr, workflow.ErrLostOwnership) || errors.Is(runErr, stream.ErrTerminal) || !strings.Contains(runErr.Error(), want) {
		t.Errorf("Run = %v, want %q and no terminal error", runErr, want)
	}
	mu.Lock()
	if len(terminals) > 0 {
		t.Errorf("OnError was told of terminal errors: %v", terminals)
	}
	mu.Unlock()
	var after int
	if err := e.dstPool.QueryRowContext(e.ctx(), "SELECT COUNT(*) FROM _vt.vreplication_log").Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != logs {
		t.Errorf("%d vreplication_log rows written after the takeover", after-logs)
	}
	if r := e.record(); r.State == workflow.StateError || strings.Contains(r.Message, "terminal") {
		t.Errorf("record after the loss: state %q, message %q; the old owner wrote it", r.State, r.Message)
	}
}
