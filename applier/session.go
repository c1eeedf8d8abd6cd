package applier

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
)

// session is one target session of the applier: the main one, an XA transaction's, or a
// worker's (--apply-workers).
type session struct {
	conn *sql.Conn
	id   int64
	// tr is where the round trip in flight is shown to the stall watchdog: the main and XA
	// sessions share the applier's, each worker has its own.
	tr *tracker
	// w is the worker that owns the session; nil for the main and XA sessions.
	w *worker
	// unsaved are the mismatches idempotent mode let through in the session's open transaction,
	// counted once it committed (or, an XA transaction, prepared): a transaction rolled back
	// (a worker's try, or an attempt that failed before its COMMIT) runs its rows again, and
	// finds them again. Owned by the goroutine that runs the session.
	unsaved []writtenThrough
}

// dropUnsaved forgets the mismatches of a transaction that will run again.
func (s *session) dropUnsaved() {
	clear(s.unsaved)
	s.unsaved = s.unsaved[:0]
}

// tracker holds the round trip in flight on a session, for the stall watchdog: its shape (kind
// and table, never values) and when it was sent. O(1) to read from any goroutine.
type tracker struct {
	statement atomic.Pointer[string]
	since     atomic.Int64 // unix nanos; 0 when none is in flight
}

func (t *tracker) start(shape string, now time.Time) {
	t.statement.Store(&shape)
	t.since.Store(now.UnixNano())
}

func (t *tracker) stop() {
	t.since.Store(0)
	t.statement.Store(nil)
}

func (a *Applier) connect(ctx context.Context) error {
	conn, id, maxPacket, err := a.openSession(ctx)
	if err != nil {
		return err
	}
	a.main = &session{conn: conn, id: id, tr: &a.inline}
	a.maxPacket = maxPacket - packetOverhead
	if err := a.recordSessions(ctx); err != nil {
		conn.Close()
		a.main = nil
		return err
	}
	return nil
}

// openSession opens a target session set up for applying, and returns its connection id and
// the server's max_allowed_packet.
func (a *Applier) openSession(ctx context.Context) (*sql.Conn, int64, int, error) {
	conn, err := a.cfg.DB.Conn(ctx)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("connect to target: %w", err)
	}
	for _, q := range sessionSetup {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			conn.Close()
			return nil, 0, 0, fmt.Errorf("set up target session (%s): %w", q, err)
		}
	}
	var id int64
	var maxPacket int
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID(), @@max_allowed_packet").Scan(&id, &maxPacket); err != nil {
		conn.Close()
		return nil, 0, 0, fmt.Errorf("read target connection id: %w", err)
	}
	return conn, id, maxPacket, nil
}

// kill ends the target session id over another connection, so that what it holds goes at once.
func (a *Applier) kill(id int64) {
	kctx, cancel := context.WithTimeout(context.WithoutCancel(context.Background()), 2*time.Second)
	_, kerr := a.cfg.DB.ExecContext(kctx, "KILL "+strconv.FormatInt(id, 10))
	cancel()
	var me *mysql.MySQLError
	if kerr != nil && !(errors.As(kerr, &me) && me.Number == 1094) { // 1094: unknown thread id: already gone
		a.cfg.Logger.Warn("could not kill the applier's target connection", "connection_id", id, "error", kerr)
	}
}

// release ends the applier's connection. When a transaction may be open or a statement may still
// run on the server (an error or cancellation interrupted it), the connection is killed over
// another connection first: closing the client side alone leaves a statement that waits on a lock
// running, with its locks held.
func (a *Applier) release(cause error) {
	a.releaseXA()
	a.releaseWorkers(cause)
	if a.main == nil {
		return
	}
	if cause != nil && (a.txOpen || !errors.Is(cause, ErrStopPosition)) {
		a.kill(a.main.id)
		a.main.conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	a.main.conn.Close()
	a.main = nil
	a.txOpen = false
}
