package stall

import (
	"errors"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	const (
		deadline = 5 * time.Minute
		interval = time.Second
		ms       = time.Millisecond
		update   = "UPDATE `shop`.`orders`"
	)
	cfg := Config{ProgressDeadline: deadline, HeartbeatInterval: interval}
	off := Config{ProgressDeadline: 0, HeartbeatInterval: interval}
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	stalled := ErrStalled.Error()
	relayPrefix := "relay log I/O stalled: " + stalled

	for _, tc := range []struct {
		name     string
		cfg      Config
		snap     Snapshot
		now      time.Time
		wantNext time.Time // checked when wantErr is empty
		wantErr  string    // exact text; empty means no stall
		wantDet  Detector
		wantFor  time.Duration
	}{
		{
			name: "idle",
			cfg:  cfg,
			now:  t0.Add(10 * deadline),
		},
		{
			name: "idle, zero time",
			cfg:  cfg,
			now:  time.Time{},
		},
		{
			name:     "relay log just before deadline",
			cfg:      cfg,
			snap:     Snapshot{RelayBlockedSince: t0},
			now:      t0.Add(deadline - ms),
			wantNext: t0.Add(deadline),
		},
		{
			name:    "relay log at deadline, no statement",
			cfg:     cfg,
			snap:    Snapshot{RelayBlockedSince: t0},
			now:     t0.Add(deadline),
			wantErr: relayPrefix + "; applier holds no open statement",
			wantDet: RelayLog,
			wantFor: deadline,
		},
		{
			name:    "relay log just after deadline, statement running",
			cfg:     cfg,
			snap:    Snapshot{RelayBlockedSince: t0, ProgressSince: t0.Add(-time.Minute), Statement: update, StatementSince: t0.Add(-2 * time.Second)},
			now:     t0.Add(deadline + ms),
			wantErr: relayPrefix + "; applier busy for 5m2s in " + update,
			wantDet: RelayLog,
			wantFor: deadline + ms,
		},
		{
			name:    "relay log at deadline, statement start unknown",
			cfg:     cfg,
			snap:    Snapshot{RelayBlockedSince: t0, Statement: "COMMIT"},
			now:     t0.Add(deadline),
			wantErr: relayPrefix + "; applier busy in COMMIT",
			wantDet: RelayLog,
			wantFor: deadline,
		},
		{
			name:     "applier just before deadline",
			cfg:      cfg,
			snap:     Snapshot{ProgressSince: t0, Statement: update, StatementSince: t0},
			now:      t0.Add(deadline - ms),
			wantNext: t0.Add(deadline),
		},
		{
			name:     "copy just before deadline",
			cfg:      cfg,
			snap:     Snapshot{CopySince: t0, CopyStatement: "INSERT `shop`.`orders`", CopyStatementSince: t0},
			now:      t0.Add(deadline - ms),
			wantNext: t0.Add(deadline),
		},
		{
			name:    "copy at deadline",
			cfg:     cfg,
			snap:    Snapshot{CopySince: t0, CopyStatement: "INSERT `shop`.`orders`", CopyStatementSince: t0},
			now:     t0.Add(deadline),
			wantErr: "copy stalled: no progress for 5m0s while running INSERT `shop`.`orders`: " + stalled,
			wantDet: Copy,
			wantFor: deadline,
		},
		{
			name:     "throttle check just before deadline",
			cfg:      cfg,
			snap:     Snapshot{HoldCheckSince: t0, HoldCheck: "replica lag of replica1"},
			now:      t0.Add(deadline - ms),
			wantNext: t0.Add(deadline),
		},
		{
			name:    "throttle check at deadline",
			cfg:     cfg,
			snap:    Snapshot{HoldCheckSince: t0, HoldCheck: "replica lag of replica1"},
			now:     t0.Add(deadline),
			wantErr: "throttle check stalled: no progress for 5m0s while running replica lag of replica1: " + stalled,
			wantDet: Throttle,
			wantFor: deadline,
		},
		{
			name: "throttle check, detector off",
			cfg:  off,
			snap: Snapshot{HoldCheckSince: t0, HoldCheck: "target load"},
			now:  t0.Add(10 * deadline),
		},
		{
			name: "copy, detector off",
			cfg:  off,
			snap: Snapshot{CopySince: t0},
			now:  t0.Add(10 * deadline),
		},
		{
			name:    "applier at deadline",
			cfg:     cfg,
			snap:    Snapshot{ProgressSince: t0, Statement: update, StatementSince: t0.Add(time.Minute)},
			now:     t0.Add(deadline),
			wantErr: "applier stalled: no progress for 5m0s while applying " + update + ": " + stalled,
			wantDet: Applier,
			wantFor: deadline,
		},
		{
			name:    "applier at deadline inside a long transaction: both durations named",
			cfg:     cfg,
			snap:    Snapshot{ProgressSince: t0, TxnSince: t0.Add(-time.Hour), Statement: update, StatementSince: t0},
			now:     t0.Add(deadline),
			wantErr: "applier stalled: no progress for 5m0s while applying " + update + " (transaction open for 1h5m0s): " + stalled,
			wantDet: Applier,
			wantFor: deadline,
		},
		{
			name:     "long transaction that keeps progressing: no stall",
			cfg:      cfg,
			snap:     Snapshot{ProgressSince: t0.Add(time.Hour), TxnSince: t0, Statement: update, StatementSince: t0.Add(time.Hour)},
			now:      t0.Add(time.Hour + deadline - ms),
			wantNext: t0.Add(time.Hour + deadline),
		},
		{
			name:    "relay log at deadline inside a long transaction",
			cfg:     cfg,
			snap:    Snapshot{RelayBlockedSince: t0, ProgressSince: t0.Add(deadline - ms), TxnSince: t0.Add(-time.Minute), Statement: update, StatementSince: t0.Add(deadline - 2*ms)},
			now:     t0.Add(deadline),
			wantErr: relayPrefix + "; applier busy for 2ms in " + update + " (transaction open for 6m0s)",
			wantDet: RelayLog,
			wantFor: deadline,
		},
		{
			name:    "applier just after deadline, no statement",
			cfg:     cfg,
			snap:    Snapshot{ProgressSince: t0},
			now:     t0.Add(deadline + ms),
			wantErr: "applier stalled: no progress for 5m0s with no statement in flight: " + stalled,
			wantDet: Applier,
			wantFor: deadline + ms,
		},
		{
			name:    "applier clock first while relay log blocked: relay text",
			cfg:     cfg,
			snap:    Snapshot{RelayBlockedSince: t0.Add(4 * time.Minute), ProgressSince: t0, Statement: update, StatementSince: t0.Add(time.Minute)},
			now:     t0.Add(deadline),
			wantErr: relayPrefix + "; applier busy for 4m0s in " + update,
			wantDet: RelayLog,
			wantFor: time.Minute,
		},
		{
			name:    "relay clock first while applier holds work: relay text",
			cfg:     cfg,
			snap:    Snapshot{RelayBlockedSince: t0, ProgressSince: t0.Add(time.Minute), Statement: update, StatementSince: t0.Add(time.Minute)},
			now:     t0.Add(deadline),
			wantErr: relayPrefix + "; applier busy for 4m0s in " + update,
			wantDet: RelayLog,
			wantFor: deadline,
		},
		{
			name:     "relay log and applier both pending: earliest next",
			cfg:      cfg,
			snap:     Snapshot{RelayBlockedSince: t0.Add(time.Minute), ProgressSince: t0},
			now:      t0.Add(deadline - ms),
			wantNext: t0.Add(deadline),
		},
		{
			name:     "heartbeat just before interval",
			cfg:      cfg,
			snap:     Snapshot{HeartbeatSince: t0},
			now:      t0.Add(interval - ms),
			wantNext: t0.Add(interval),
		},
		{
			name:    "heartbeat at interval",
			cfg:     cfg,
			snap:    Snapshot{HeartbeatSince: t0},
			now:     t0.Add(interval),
			wantErr: "failed to record heartbeat: recording took longer than 1s: " + stalled,
			wantDet: Heartbeat,
			wantFor: interval,
		},
		{
			name:    "heartbeat just after interval",
			cfg:     cfg,
			snap:    Snapshot{HeartbeatSince: t0},
			now:     t0.Add(interval + ms),
			wantErr: "failed to record heartbeat: recording took longer than 1s: " + stalled,
			wantDet: Heartbeat,
			wantFor: interval + ms,
		},
		{
			name:     "heartbeat in flight, applier pending later: heartbeat first",
			cfg:      cfg,
			snap:     Snapshot{ProgressSince: t0, HeartbeatSince: t0.Add(time.Minute)},
			now:      t0.Add(time.Minute),
			wantNext: t0.Add(time.Minute + interval),
		},
		{
			name:    "applier and heartbeat at once: applier wins",
			cfg:     cfg,
			snap:    Snapshot{ProgressSince: t0, HeartbeatSince: t0.Add(deadline - interval)},
			now:     t0.Add(deadline),
			wantErr: "applier stalled: no progress for 5m0s with no statement in flight: " + stalled,
			wantDet: Applier,
			wantFor: deadline,
		},
		{
			name: "deadline 0 disables relay log",
			cfg:  off,
			snap: Snapshot{RelayBlockedSince: t0},
			now:  t0.Add(24 * time.Hour),
		},
		{
			name: "deadline 0 disables applier",
			cfg:  off,
			snap: Snapshot{ProgressSince: t0, Statement: update, StatementSince: t0},
			now:  t0.Add(24 * time.Hour),
		},
		{
			name:     "deadline 0 keeps heartbeat: pending",
			cfg:      off,
			snap:     Snapshot{RelayBlockedSince: t0, ProgressSince: t0, HeartbeatSince: t0},
			now:      t0.Add(interval - ms),
			wantNext: t0.Add(interval),
		},
		{
			name:    "deadline 0 keeps heartbeat: fires",
			cfg:     off,
			snap:    Snapshot{RelayBlockedSince: t0, ProgressSince: t0, HeartbeatSince: t0},
			now:     t0.Add(interval),
			wantErr: "failed to record heartbeat: recording took longer than 1s: " + stalled,
			wantDet: Heartbeat,
			wantFor: interval,
		},
		{
			name: "interval 0 disables heartbeat",
			cfg:  Config{ProgressDeadline: deadline},
			snap: Snapshot{HeartbeatSince: t0},
			now:  t0.Add(time.Hour),
		},
		{
			name:     "start in the future",
			cfg:      cfg,
			snap:     Snapshot{ProgressSince: t0.Add(time.Second)},
			now:      t0,
			wantNext: t0.Add(time.Second + deadline),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, err := Check(tc.cfg, tc.snap, tc.now)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Check()=%v, want nil", err)
				}
				if !next.Equal(tc.wantNext) {
					t.Errorf("Check() next=%v, want %v", next, tc.wantNext)
				}
				return
			}
			if err == nil {
				t.Fatalf("Check()=nil (next %v), want %q", next, tc.wantErr)
			}
			if got := err.Error(); got != tc.wantErr {
				t.Errorf("Check()=%q\nwant     %q", got, tc.wantErr)
			}
			if !errors.Is(err, ErrStalled) {
				t.Errorf("errors.Is(%v, ErrStalled)=false, want true", err)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Check() returned %T, want *Error", err)
			}
			if got, want := e.Detector, tc.wantDet; got != want {
				t.Errorf("Detector=%q, want %q", got, want)
			}
			if got, want := e.For, tc.wantFor; got != want {
				t.Errorf("For=%v, want %v", got, want)
			}
			if !next.IsZero() {
				t.Errorf("Check() next=%v with a stall, want zero", next)
			}
		})
	}
}
