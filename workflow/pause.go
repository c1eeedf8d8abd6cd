package workflow

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A pause is how `vplayer diff` holds a running stream at one position: a handshake on the
// record's pause_pos and pause_until columns (pause_until is a lease in milliseconds on the
// target's clock, so that a diff that dies cannot hold a workflow for ever).
//
//	diff:   NULL          -> PauseHold   RequestPause: stop at your next transaction boundary
//	stream: PauseHold     -> PauseHeld   AckPause: stopped, every transaction handed over committed
//	diff:   PauseHeld     -> <position>  PauseAt: apply up to and including it, then stop again
//	diff:   anything      -> NULL        ClearPause: go on
//
// While a pause is in force the stream commits no data past it; it keeps its binlog connection,
// holds no target transaction and records heartbeats.
const (
	// PauseHold asks the stream to stop at its next transaction boundary.
	PauseHold = "hold"
	// PauseHeld is the stream's answer to PauseHold: it has stopped, and everything it applied is
	// committed.
	PauseHeld = "held"
)

// ErrPauseBusy means another live pause holds the workflow: one diff at a time.
var ErrPauseBusy = errors.New("workflow is already paused by another vplayer diff")

// ErrPauseLost means the pause is no longer the one this diff set: it expired, or was cleared.
var ErrPauseLost = errors.New("the pause request was cleared or expired")

// Control is what a running stream and a diff poll: the state, the pause in force and whether a
// live process owns the workflow.
type Control struct {
	State string
	// Pause is "" (none, or expired), PauseHold, PauseHeld or a stored position.
	Pause string
	// PauseExpired is set when a pause request is present but its lease ran out.
	PauseExpired bool
	// Owner is the lease owner; Owned whether its lease is live on the target's clock.
	Owner string
	Owned bool
	// Pos is the committed position.
	Pos string
	// ThrottleLeft is how long the manual throttle (vplayer throttle) still holds, on the
	// target's clock; zero when none does; ThrottleForever when it holds until vplayer
	// unthrottle. ThrottleReason is its reason.
	ThrottleLeft   time.Duration
	ThrottleReason string
}

// Control reads the record's control fields in one statement.
func (s *Store) Control(ctx context.Context, id int64) (Control, error) {
	var c Control
	var pause string
	var live, owned bool
	var left int64
	err := s.db.QueryRowContext(ctx, "SELECT state, COALESCE(pause_pos, ''), pause_until >= "+nowMillis+
		", owner, owner <> '' AND lease_until >= "+nowMillis+", pos, GREATEST(throttle_until - "+nowMillis+", 0), throttle_reason FROM "+
		s.table("vreplication")+" WHERE id = ?", id).
		Scan(&c.State, &pause, &live, &c.Owner, &owned, &c.Pos, &left, &c.ThrottleReason)
	switch {
	case left >= maxThrottleMillis/2:
		// A throttle without an end (year 9999): more milliseconds than a Duration holds.
		c.ThrottleLeft = ThrottleUntilUnthrottled
	default:
		c.ThrottleLeft = time.Duration(left) * time.Millisecond
	}
	if err != nil {
		return Control{}, fmt.Errorf("read workflow %d control: %w", id, err)
	}
	c.Owned = owned
	if pause != "" {
		if live {
			c.Pause = pause
		} else {
			c.PauseExpired = true
		}
	}
	return c, nil
}

// RequestPause asks the stream of record id to stop at its next transaction boundary, for lease
// (renewed by RenewPause). It fails with ErrPauseBusy while another live pause is in force.
func (s *Store) RequestPause(ctx context.Context, id int64, lease time.Duration) error {
	res, err := s.db.ExecContext(ctx, "UPDATE "+s.table("vreplication")+" SET pause_pos = ?, pause_until = "+nowMillis+" + ?"+
		" WHERE id = ? AND (pause_pos IS NULL OR pause_until < "+nowMillis+")", PauseHold, lease.Milliseconds(), id)
	if err != nil {
		return fmt.Errorf("request a pause of workflow %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("workflow %d: %w", id, ErrPauseBusy)
	}
	return nil
}

// PauseAt moves a pause the stream has acknowledged (PauseHeld) to pos: the stream applies up to
// and including pos, then stops there. It fails with ErrPauseLost when the pause is not held.
func (s *Store) PauseAt(ctx context.Context, id int64, pos string, lease time.Duration) error {
	return s.updatePause(ctx, id, PauseHeld, "pause_pos = ?, pause_until = "+nowMillis+" + ?", pos, lease.Milliseconds())
}

// RenewPause extends the lease of the pause in force, which must still be want; else it fails
// with ErrPauseLost.
func (s *Store) RenewPause(ctx context.Context, id int64, want string, lease time.Duration) error {
	return s.updatePause(ctx, id, want, "pause_until = "+nowMillis+" + ?", lease.Milliseconds())
}

// updatePause runs SET set on record id if its live pause is want.
func (s *Store) updatePause(ctx context.Context, id int64, want, set string, args ...any) error {
	where := " WHERE id = ? AND pause_pos = ? AND pause_until >= " + nowMillis
	res, err := s.db.ExecContext(ctx, "UPDATE "+s.table("vreplication")+" SET "+set+where, append(args, id, want)...)
	if err != nil {
		return fmt.Errorf("update the pause of workflow %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	// An update that changes nothing affects no row: the pause is still ours if it is there.
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+s.table("vreplication")+where, id, want).Scan(&n); err != nil {
		return fmt.Errorf("read the pause of workflow %d: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("workflow %d: %w", id, ErrPauseLost)
	}
	return nil
}

// ClearPause ends any pause of record id: a running stream goes on within a second.
func (s *Store) ClearPause(ctx context.Context, id int64) error {
	if _, err := s.db.ExecContext(ctx, "UPDATE "+s.table("vreplication")+" SET pause_pos = NULL, pause_until = 0 WHERE id = ?", id); err != nil {
		return fmt.Errorf("clear the pause of workflow %d: %w", id, err)
	}
	return nil
}

// AckPause answers PauseHold with PauseHeld, if the lease is still ours and the request still
// stands. It reports whether it did.
func (l *Lease) AckPause(ctx context.Context) (bool, error) {
	res, err := l.store.db.ExecContext(ctx, "UPDATE "+l.store.table("vreplication")+" SET pause_pos = ? WHERE id = ? AND epoch = ? AND pause_pos = ?",
		PauseHeld, l.id, l.epoch, PauseHold)
	if err != nil {
		return false, fmt.Errorf("acknowledge the pause of workflow %s: %w", l.name, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}
