package workflow

import (
	"context"
	"fmt"
	"math"
	"time"
)

// ThrottleForever is the duration to give Throttle for a manual throttle without an end: it
// holds until Unthrottle.
const ThrottleForever time.Duration = 0

// ThrottleUntilUnthrottled is Control.ThrottleLeft for a manual throttle without an end.
const ThrottleUntilUnthrottled time.Duration = math.MaxInt64

// maxThrottleMillis is the throttle_until of a throttle without an end (the year 9999).
const maxThrottleMillis = 253402214400000

// Throttle holds workflow's stream back (vplayer throttle) for d (ThrottleForever: until
// Unthrottle), whichever process owns it and across restarts: the record keeps the throttle's
// end, on the target's clock, and its reason. It returns ErrNotFound for a workflow without a
// record.
func (s *Store) Throttle(ctx context.Context, workflow string, d time.Duration, reason string) error {
	until := fmt.Sprintf("%d", maxThrottleMillis)
	if d > 0 {
		until = fmt.Sprintf("%s + %d", nowMillis, d.Milliseconds())
	}
	return s.setThrottle(ctx, workflow, "throttle_until = "+until+", throttle_reason = ?", Truncate255(reason))
}

// Unthrottle ends workflow's manual throttle, if any.
func (s *Store) Unthrottle(ctx context.Context, workflow string) error {
	return s.setThrottle(ctx, workflow, "throttle_until = 0, throttle_reason = ''")
}

func (s *Store) setThrottle(ctx context.Context, workflow, set string, args ...any) error {
	res, err := s.db.ExecContext(ctx, "UPDATE "+s.table("vreplication")+" SET "+set+" WHERE workflow = ?", append(args, workflow)...)
	if err != nil {
		return fmt.Errorf("set workflow %s throttle: %w", workflow, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		var found int
		if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+s.table("vreplication")+" WHERE workflow = ?", workflow).Scan(&found); err == nil && found == 0 {
			return fmt.Errorf("workflow %s: %w", workflow, ErrNotFound)
		}
	}
	return nil
}

// Truncate255 cuts s to 255 bytes, the size of a short column such as throttle_reason.
func Truncate255(s string) string {
	if len(s) > 255 {
		return s[:255]
	}
	return s
}

// ClearHoldMessage clears the record's message if it is a hold's (throttled or delayed) and the
// lease is still ours: what a process killed while held left behind.
func (l *Lease) ClearHoldMessage(ctx context.Context) error {
	return l.update(ctx, "message = IF("+notHoldMessage+", message, '')")
}

// Hold messages (SPEC 4.5) begin with these: the stream that holds keeps them while the hold
// lasts and clears them when it ends, whatever the position and heartbeat writes do meanwhile.
const (
	HoldMessageThrottled = "throttled: "
	HoldMessageDelayed   = "delayed: "
)

// notHoldMessage is true of a message that is not a hold's.
const notHoldMessage = "message NOT LIKE '" + HoldMessageThrottled + "%' AND message NOT LIKE '" + HoldMessageDelayed + "%'"

// DB returns the store's pool.
