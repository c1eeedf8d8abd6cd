package stream

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vplayer/vplayer/workflow"
)

// TestRun_stopPosWithCopyRefused: a new workflow that would copy first (no start position) with
// a stop position is a terminal error that names both, and leaves no record behind.
func TestRun_stopPosWithCopyRefused(t *testing.T) {
	cfg, store := testConfig(t)
	cfg.StartPos, cfg.StopPos = "", "MariaDB/0-1-1"
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Run(t.Context())
	if !errors.Is(err, ErrTerminal) || !strings.Contains(err.Error(), "--stop-pos cannot be used while the workflow copies") {
		t.Fatalf("Run = %v, want the terminal error refusing --stop-pos with a copy", err)
	}
	if _, err := store.Get(context.Background(), cfg.Workflow); !errors.Is(err, workflow.ErrNotFound) {
		t.Errorf("record after the refusal: %v, want none", err)
	}
}

// TestRun_copyPlannedAfterStopBeforePlan: a workflow created to copy whose first run stopped
// before planning the copy (its record Stopped, no table planned) copies when run again, rather
// than replicating into empty tables; a stop position is refused while that copy is to come.
func TestRun_copyPlannedAfterStopBeforePlan(t *testing.T) {
	cfg, store := testConfig(t)
	ctx := t.Context()
	for _, q := range []string{"CREATE TABLE " + cfg.Source.DB + ".t (id int PRIMARY KEY, v varchar(10))",
		"INSERT INTO " + cfg.Source.DB + ".t VALUES (1, 'a'), (2, 'b'), (3, 'c')"} {
		if _, err := cfg.Source.Pool.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	pos, err := CurrentPosition(ctx, cfg.Source.Pool, "mariadb")
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Init(ctx); err != nil {
		t.Fatal(err)
	}
	rec, _, err := store.Create(ctx, workflow.Record{Workflow: cfg.Workflow, Source: "{}", Pos: pos.String(), DBName: cfg.TargetDB, State: workflow.StateCopying, Options: "{}"})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.SetState(ctx, rec.ID, workflow.StateStopped, ""); err != nil {
		t.Fatal(err)
	}

	stopAt := cfg
	stopAt.StartPos, stopAt.StopPos = "", pos.String()
	s, err := New(stopAt)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(ctx); !errors.Is(err, ErrTerminal) || !strings.Contains(err.Error(), "--stop-pos cannot be used while the workflow copies") {
		t.Fatalf("Run with --stop-pos before the copy = %v, want the terminal error refusing it", err)
	}

	cfg.StartPos = ""
	if s, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx) }()
	waitState(t, store, cfg.Workflow, workflow.StateRunning)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of cancel")
	}
	var n int
	if err := cfg.Target.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+cfg.TargetDB+".t").Scan(&n); err != nil {
		t.Fatalf("the copy did not create the target table: %v", err)
	}
	if n != 3 {
		t.Errorf("target has %d rows, want the source's 3", n)
	}
}
