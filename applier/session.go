package applier

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"
)

func (a *Applier) connect(ctx context.Context) error {
	conn, id, maxPacket, err := a.openSession(ctx)
	if err != nil {
		return err
	}
	a.conn, a.connID = conn, id
	a.maxPacket = maxPacket - packetOverhead
	if err := a.recordSessions(ctx); err != nil {
		conn.Close()
		a.conn = nil
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
	if a.conn == nil {
		return
	}
	if cause != nil && (a.txOpen || !errors.Is(cause, ErrStopPosition)) {
		a.kill(a.connID)
		a.conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	a.conn.Close()
	a.conn = nil
	a.txOpen = false
}
