package stall

import (
	"fmt"
	"time"
)

// Snapshot is what the watchdog knows about a stream at one instant: the start
// time of every wait in progress. A zero time means "not waiting". Start times
// rather than durations make the firing instant exact, however late the
// snapshot is taken.
type Snapshot struct {
	// RelayBlockedSince is when the reader started its current blocked Put on
	// a full relay log; zero when the reader is not blocked in Put.
	RelayBlockedSince time.Time
	// ProgressSince is when the applier, holding work (an open target
	// transaction or fetched, unapplied items), last made progress: took the
	// work, completed a round trip or committed. Zero when it holds none. A
	// long transaction that keeps completing statements keeps moving it.
	ProgressSince time.Time
	// TxnSince is when the open target transaction began; zero when none is
	// open. It only describes the stall, it never makes one.
	TxnSince time.Time
	// Statement is the shape of the statement the applier is running now,
	// e.g. "UPDATE `shop`.`orders`" or "COMMIT", never row values; empty
	// when none.
	Statement string
	// StatementSince is when Statement started; zero when unknown.
	StatementSince time.Time
	// HeartbeatSince is when the heartbeat write in flight started; zero when
	// no heartbeat write is in flight.
	HeartbeatSince time.Time
	// CopySince is when the copy phase, holding work (a chunk it reads or
	// writes), last made progress: read rows or completed a round trip. Zero
	// when it holds none (between chunks, or while the binlog catches up).
	CopySince time.Time
	// CopyStatement is the shape of the copy's statement in flight, e.g.
	// "INSERT `shop`.`orders`", never values; CopyStatementSince when it
	// started.
	CopyStatement      string
	CopyStatementSince time.Time
	// HoldCheckSince is when the check in flight that decides whether the stream is held on
	// purpose (a throttle: the target's load, its replicas' lag, a manual throttle) started;
	// zero when none is in flight. HoldCheck names it. Time held is never a stall (SPEC 4.5),
	// but a check that hangs is.
	HoldCheck      string
	HoldCheckSince time.Time
}

// Check decides whether s shows a stall at now. Pure: the same arguments give
// the same results.
//
// A condition fires when its elapsed time reaches its deadline (elapsed >=
// deadline):
//
//   - relay log: now - RelayBlockedSince >= cfg.ProgressDeadline;
//   - applier: now - ProgressSince >= cfg.ProgressDeadline;
//   - heartbeat: now - HeartbeatSince >= cfg.HeartbeatInterval, with Cause
//     "recording took longer than <interval>";
//   - copy: now - CopySince >= cfg.ProgressDeadline, a [Copy] error, after the
//     relay-log and applier conditions and before the heartbeat one;
//   - throttle: now - HoldCheckSince >= cfg.ProgressDeadline, a [Throttle]
//     error naming the check, after the copy condition.
//
// When the relay-log or the applier condition fires while the reader is
// blocked, the error is a [RelayLog] one, whichever of the two clocks ran out
// first; otherwise an [Applier] one. Those win over a heartbeat stall at the
// same instant. A non-positive ProgressDeadline disables the relay-log and
// applier conditions, a non-positive HeartbeatInterval the heartbeat one. A
// zero Snapshot (an idle stream waiting on its source) never fires.
//
// err is a *[Error] or nil. When err is nil, next is the earliest instant
// after now at which a condition in s could fire, or the zero time when none
// is pending; when err is non-nil, next is the zero time.
func Check(cfg Config, s Snapshot, now time.Time) (next time.Time, err error) {
	var relayAt, workAt, heartbeatAt, copyAt, holdAt time.Time
	if cfg.ProgressDeadline > 0 && !s.CopySince.IsZero() {
		copyAt = s.CopySince.Add(cfg.ProgressDeadline)
	}
	if cfg.ProgressDeadline > 0 && !s.HoldCheckSince.IsZero() {
		holdAt = s.HoldCheckSince.Add(cfg.ProgressDeadline)
	}
	if cfg.ProgressDeadline > 0 {
		if !s.RelayBlockedSince.IsZero() {
			relayAt = s.RelayBlockedSince.Add(cfg.ProgressDeadline)
		}
		if !s.ProgressSince.IsZero() {
			workAt = s.ProgressSince.Add(cfg.ProgressDeadline)
		}
	}
	if cfg.HeartbeatInterval > 0 && !s.HeartbeatSince.IsZero() {
		heartbeatAt = s.HeartbeatSince.Add(cfg.HeartbeatInterval)
	}

	if reached(relayAt, now) || reached(workAt, now) {
		e := &Error{Statement: s.Statement}
		if s.RelayBlockedSince.IsZero() {
			e.Detector, e.For = Applier, now.Sub(s.ProgressSince)
		} else {
			e.Detector, e.For = RelayLog, now.Sub(s.RelayBlockedSince)
		}
		if s.Statement != "" && !s.StatementSince.IsZero() {
			e.StatementFor = max(now.Sub(s.StatementSince), 0)
		}
		if !s.TxnSince.IsZero() {
			e.TxnFor = max(now.Sub(s.TxnSince), 0)
		}
		return time.Time{}, e
	}
	if reached(copyAt, now) {
		e := &Error{Detector: Copy, For: now.Sub(s.CopySince), Statement: s.CopyStatement}
		if s.CopyStatement != "" && !s.CopyStatementSince.IsZero() {
			e.StatementFor = max(now.Sub(s.CopyStatementSince), 0)
		}
		return time.Time{}, e
	}
	if reached(holdAt, now) {
		return time.Time{}, &Error{Detector: Throttle, For: now.Sub(s.HoldCheckSince), Statement: s.HoldCheck}
	}
	if reached(heartbeatAt, now) {
		return time.Time{}, &Error{
			Detector: Heartbeat,
			For:      now.Sub(s.HeartbeatSince),
			Cause:    fmt.Errorf("recording took longer than %v", cfg.HeartbeatInterval),
		}
	}
	return earliest(relayAt, workAt, copyAt, holdAt, heartbeatAt), nil
}

// reached reports whether the deadline at is set and not after now.
func reached(at, now time.Time) bool {
	return !at.IsZero() && !now.Before(at)
}

// earliest returns the earliest non-zero instant, or the zero time.
func earliest(ts ...time.Time) time.Time {
	var first time.Time
	for _, t := range ts {
		if !t.IsZero() && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
	return first
}
