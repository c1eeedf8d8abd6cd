package workflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ErrRenewalOverdue means the keepalive has not renewed the lease for longer than its ttl: a
// standby may have taken the workflow over, or may do so at any moment.
var ErrRenewalOverdue = errors.New("lease renewal overdue")

// renewLockWait is the renewal session's innodb_lock_wait_timeout, in seconds (the server's
// least): a renewal that meets the record row locked, by this process's own batch between its
// position write and its COMMIT, gives up and is tried again at the next tick instead of queueing
// behind the batch, and no renewal is left waiting on the server after its deadline passed.
const renewLockWait = 1

// renewer is the keepalive's own target connection, set up to wait at most renewLockWait on a
// row lock. It is opened again after any error.
type renewer struct {
	lease *Lease
	conn  *sql.Conn
}

func (r *renewer) renew(ctx context.Context) error {
	if r.conn == nil {
		conn, err := r.lease.store.db.Conn(ctx)
		if err != nil {
			return fmt.Errorf("renew lease of workflow %d: %w", r.lease.id, err)
		}
		if _, err := conn.ExecContext(ctx, fmt.Sprintf("SET SESSION innodb_lock_wait_timeout = %d", renewLockWait)); err != nil {
			conn.Close()
			return fmt.Errorf("renew lease of workflow %d: set up session: %w", r.lease.id, err)
		}
		r.conn = conn
	}
	err := r.lease.renew(ctx, r.conn)
	if err != nil && !errors.Is(err, ErrLostOwnership) {
		r.close()
	}
	return err
}

func (r *renewer) close() {
	if r.conn != nil {
		r.conn.Close()
		r.conn = nil
	}
}

// Overdue returns an error wrapping ErrRenewalOverdue when the last renewal that succeeded
// started more than a ttl before now: the lease may have expired on the target's clock.
func (l *Lease) Overdue(now time.Time) error {
	since := now.Sub(time.Unix(0, l.renewed.Load()))
	if since <= l.ttl {
		return nil
	}
	return fmt.Errorf("%w: the lease of workflow %s was last renewed %v ago, past its ttl %v: the target does not answer the renewal or its record row stays locked",
		ErrRenewalOverdue, l.name, since.Round(time.Millisecond), l.ttl)
}
