package stream

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/internal/eventually"
	"github.com/vplayer/vplayer/workflow"
)

// TestRun_pause: a running stream acknowledges a hold, applies exactly up to a pause position
// and holds there, goes on when the pause is cleared, and still stops at once on vplayer stop
// while held.
func TestRun_pause(t *testing.T) {
	cfg, store := testConfig(t)
	ctx := context.Background()
	src, dst := cfg.Source.Pool, cfg.Target
	table := cfg.Source.DB + ".kv"
	for _, db := range []*sql.DB{src, dst} {
		if _, err := db.ExecContext(ctx, "CREATE TABLE "+table+" (id int PRIMARY KEY)"); err != nil {
			t.Fatal(err)
		}
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Run(rctx) }()
	waitState(t, store, cfg.Workflow, workflow.StateRunning)
	rec, err := store.Get(ctx, cfg.Workflow)
	if err != nil {
		t.Fatal(err)
	}
	insert := func(id int) binlog.Position {
		t.Helper()
		if _, err := src.ExecContext(ctx, fmt.Sprintf("INSERT INTO %s VALUES (%d)", table, id)); err != nil {
			t.Fatal(err)
		}
		pos, err := CurrentPosition(ctx, src, "mariadb")
		if err != nil {
			t.Fatal(err)
		}
		return pos
	}
	count := func() int {
		t.Helper()
		var n int
		if err := dst.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitFor := func(what string, ok func(workflow.Control) bool) workflow.Control {
		t.Helper()
		var c workflow.Control
		eventually.Must(t, 10*time.Second, 20*time.Millisecond, what, func() error {
			if c = controlOf(t, store, rec.ID); !ok(c) {
				return fmt.Errorf("control %+v", c)
			}
			return nil
		})
		return c
	}
	reached := func(p binlog.Position) func(workflow.Control) bool {
		return func(c workflow.Control) bool {
			got, err := binlog.ParsePosition(c.Pos, "mariadb")
			return err == nil && got.Contains(p)
		}
	}

	waitFor("catch-up to row 1", reached(insert(1)))
	if err := store.RequestPause(ctx, rec.ID, time.Minute); err != nil {
		t.Fatal(err)
	}
	held := waitFor("acknowledgement", func(c workflow.Control) bool { return c.Pause == workflow.PauseHeld })
	p2 := insert(2)
	insert(3)
	time.Sleep(time.Second) // a held stream applies nothing
	if got := controlOf(t, store, rec.ID).Pos; got != held.Pos || count() != 1 {
		t.Fatalf("held stream moved: pos %s (held at %s), %d rows; want 1 row", got, held.Pos, count())
	}
	if err := store.PauseAt(ctx, rec.ID, p2.String(), time.Minute); err != nil {
		t.Fatal(err)
	}
	waitFor("pause position", reached(p2))
	time.Sleep(time.Second) // and nothing past it
	if c := controlOf(t, store, rec.ID); c.Pos != p2.String() || count() != 2 {
		t.Fatalf("stream paused at %s: pos %s, %d rows; want exactly up to it, 2 rows", p2, c.Pos, count())
	}
	if err := store.ClearPause(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}
	waitFor("rows 3 and 4 once the pause ended", reached(insert(4)))
	if n := count(); n != 4 {
		t.Fatalf("%d rows after the pause ended, want 4", n)
	}

	if err := store.RequestPause(ctx, rec.ID, time.Minute); err != nil {
		t.Fatal(err)
	}
	waitFor("second acknowledgement", func(c workflow.Control) bool { return c.Pause == workflow.PauseHeld })
	if err := store.SetState(ctx, rec.ID, workflow.StateStopped, "Stopped by vplayer stop"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after vplayer stop while held = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of vplayer stop while held")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("stopping a held stream took %v, want at most 2s", d)
	}
	if r, _ := store.Get(ctx, cfg.Workflow); r.State != workflow.StateStopped {
		t.Errorf("state = %q, want Stopped", r.State)
	}
}

func controlOf(t *testing.T, store *workflow.Store, id int64) workflow.Control {
	t.Helper()
	c, err := store.Control(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
