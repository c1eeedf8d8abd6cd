package binlog

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// deadlineSlack is how much later than asked a read deadline of the replication connection may
// fire.
const deadlineSlack = time.Second

// coarseDeadlineConn is the replication connection as go-mysql sees it: go-mysql moves the read
// deadline before every read, several times per event, and each move of a socket deadline is a
// runtime timer update (an eighth of vplayer's CPU in a catch-up). Here a deadline that moves
// later is set slack further still, and later moves within that slack are dropped: the socket's
// deadline moves about once per slack, never fires before the one go-mysql asked for, and at most
// slack after it. A deadline brought forward (the syncer's Close wakes its reader that way) or
// cleared passes at once. Safe for concurrent use: Close moves it from another goroutine. A move
// that is dropped takes no lock: it only reads the deadline in force.
type coarseDeadlineConn struct {
	net.Conn
	mu sync.Mutex
	d  time.Time // the read deadline in force on the socket; zero: none
	// inForce mirrors d for the lock-free check, as Unix nanoseconds; 0: none.
	inForce atomic.Int64
}

func newCoarseDeadlineConn(c net.Conn) *coarseDeadlineConn { return &coarseDeadlineConn{Conn: c} }

func (c *coarseDeadlineConn) SetReadDeadline(t time.Time) error {
	if d := c.inForce.Load(); d != 0 && !t.IsZero() {
		if n := t.UnixNano(); n <= d && n > d-int64(deadlineSlack) {
			return nil // within the slack of the deadline in force, which fires no earlier than t
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case t.IsZero():
		// Cleared: no deadline.
	case c.d.IsZero() || t.After(c.d):
		t = t.Add(deadlineSlack)
	case t.After(c.d.Add(-deadlineSlack)):
		return nil // within the slack of the deadline in force, which fires no earlier than t
	}
	if err := c.Conn.SetReadDeadline(t); err != nil {
		return err
	}
	c.set(t)
	return nil
}

func (c *coarseDeadlineConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.Conn.SetDeadline(t); err != nil {
		return err
	}
	c.set(t)
	return nil
}

// set records t as the deadline in force. Called with mu held.
func (c *coarseDeadlineConn) set(t time.Time) {
	c.d = t
	if t.IsZero() {
		c.inForce.Store(0)
	} else {
		c.inForce.Store(t.UnixNano())
	}
}
