package copier

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/go-sql-driver/mysql"

	"github.com/vplayer/vplayer/workflow"
)

// writer is one target session of the copy, with one goroutine for the copier's life that runs
// its round trips in order, so that the copier reads the next rows from the source while the
// target writes the last ones, and writes several tables' chunks at once.
type writer struct {
	c       *Copier
	conn    *sql.Conn
	connID  int64
	maxStmt int
	// bulk says the target is a MariaDB that inserts into an empty table in bulk when the
	// session has unique_checks off (foreign_key_checks is off already): InnoDB then writes one
	// undo record for the chunk instead of one per row and locks the table instead of each row.
	// Before 10.11.11 (11.4.5, 11.7.2) a LOAD DATA in bulk needed the temporary directory for
	// the whole table and could fail when that filled (MDEV-34703): such servers, like MySQL,
	// keep the checks on, as mariadb-import does.
	bulk bool

	jobs chan job    // capacity 1: one round trip queued behind the one in flight
	free chan []byte // statement buffers to reuse

	mu  sync.Mutex
	err error // the first error; every later job is skipped

	txOpen         atomic.Bool // a transaction may be open on the session
	statement      atomic.Pointer[string]
	statementSince atomic.Int64 // unix nanos when the round trip in flight started; 0 when none
}

// job is one round trip. ack, when set, is sent the writer's error once the round trip (and every
// one before it) is done.
type job struct {
	buf   []byte
	shape string
	ack   chan error
	load  *loadJob // a LOAD DATA instead of buf
}

// loadJob is a LOAD DATA round trip whose rows the copier writes into a pipe as it reads them
// from the source (see cursor.batch).
type loadJob struct {
	name string // the driver's reader handler
	sql  string
	r    *io.PipeReader
}

// errLoadEnded is what a write into a LOAD DATA's pipe returns once the statement has ended.
var errLoadEnded = errors.New("the LOAD DATA ended")

// progressReader is a LOAD DATA's rows as the driver reads them: each read is progress of the
// round trip in flight (the server takes rows), for the stall watchdog.
type progressReader struct {
	w *writer
	r io.Reader
}

func (p progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.w.statementSince.Store(p.w.c.cfg.Now().UnixNano())
	}
	return n, err
}

// buffers is how many statement buffers a writer cycles through: one being filled, one queued,
// one in flight.
const buffers = 3

func (c *Copier) newWriter(ctx context.Context) (*writer, error) {
	conn, err := c.cfg.Target.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to target: %w", err)
	}
	for _, q := range sessionSetup {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			conn.Close()
			return nil, fmt.Errorf("set up the copy's target session (%s): %w", q, err)
		}
	}
	w := &writer{c: c, conn: conn, jobs: make(chan job, 1), free: make(chan []byte, buffers)}
	var maxPacket int
	var version string
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID(), @@max_allowed_packet, @@version").Scan(&w.connID, &maxPacket, &version); err != nil {
		conn.Close()
		return nil, fmt.Errorf("read the copy's target connection id: %w", err)
	}
	w.bulk = bulkInserts(version)
	w.maxStmt = min(c.cfg.StatementBytes, maxPacket-packetOverhead)
	for range buffers {
		w.free <- make([]byte, 0, w.maxStmt)
	}
	return w, nil
}

// run executes the jobs until the channel closes.
func (w *writer) run(ctx context.Context) {
	for j := range w.jobs {
		switch {
		case j.load != nil && w.failed() != nil:
			j.load.r.CloseWithError(w.failed()) // the copier's writes into it fail, not block
		case w.failed() == nil && (len(j.buf) > 0 || j.load != nil):
			w.exec(ctx, j)
		}
		if j.buf != nil {
			w.free <- j.buf[:0]
		}
		if j.ack != nil {
			j.ack <- w.failed()
		}
	}
}

func (w *writer) exec(ctx context.Context, j job) {
	shape := j.shape
	w.statement.Store(&shape)
	w.statementSince.Store(w.c.cfg.Now().UnixNano())
	var err error
	if l := j.load; l != nil {
		mysql.RegisterReaderHandler(l.name, func() io.Reader { return progressReader{w: w, r: l.r} })
		_, err = w.conn.ExecContext(ctx, l.sql)
		mysql.DeregisterReaderHandler(l.name)
		if err != nil {
			l.r.CloseWithError(err)
		} else {
			l.r.CloseWithError(errLoadEnded)
		}
	} else {
		// The buffer stays untouched until the statement returns (it goes back to free after
		// it), and the driver keeps nothing of the text: no copy of a statement that may be
		// megabytes.
		_, err = w.conn.ExecContext(ctx, unsafe.String(unsafe.SliceData(j.buf), len(j.buf)))
	}
	w.statementSince.Store(0)
	w.statement.Store(nil)
	w.c.progressed()
	if err == nil {
		return
	}
	if workflow.IsFenceViolation(err) {
		err = &workflow.FenceError{Err: err}
	} else {
		err = fmt.Errorf("target: %s: %w", shape, err)
	}
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
}

func (w *writer) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// buffer returns an empty statement buffer, waiting for one to come back from the writer.
func (w *writer) buffer(ctx context.Context) ([]byte, error) {
	select {
	case b := <-w.free:
		return b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// sendLoad queues a LOAD DATA whose rows come from r.
func (w *writer) sendLoad(ctx context.Context, l *loadJob, shape string) error {
	if err := w.failed(); err != nil {
		l.r.CloseWithError(err)
		return err
	}
	select {
	case w.jobs <- job{load: l, shape: shape}:
	case <-ctx.Done():
		l.r.CloseWithError(ctx.Err())
		return ctx.Err()
	}
	w.c.progressed()
	return nil
}

// send queues a round trip; with wait, it returns once that round trip is done, with the
// writer's error.
func (w *writer) send(ctx context.Context, buf []byte, shape string, wait bool) error {
	if err := w.failed(); err != nil {
		if buf != nil {
			w.free <- buf[:0]
		}
		return err
	}
	j := job{buf: buf, shape: shape}
	if wait {
		j.ack = make(chan error, 1)
	}
	select {
	case w.jobs <- j:
	case <-ctx.Done():
		return ctx.Err()
	}
	w.c.progressed()
	if !wait {
		return nil
	}
	select {
	case err := <-j.ack:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sendText runs the round trip q in one of the writer's buffers and waits for it.
func (w *writer) sendText(ctx context.Context, q, shape string) error {
	buf, err := w.buffer(ctx)
	if err != nil {
		return err
	}
	return w.send(ctx, append(buf, q...), shape, true)
}

// release ends the writer's session, once its goroutine has ended; one that may hold an open
// transaction or a running statement, after cause, is killed over another connection first.
func (w *writer) release(cause error) {
	if (cause != nil || w.failed() != nil) && w.txOpen.Load() {
		kctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, kerr := w.c.cfg.Target.ExecContext(kctx, "KILL "+strconv.FormatInt(w.connID, 10))
		cancel()
		var me *mysql.MySQLError
		if kerr != nil && !(errors.As(kerr, &me) && me.Number == 1094) {
			w.c.cfg.logger().Warn("could not kill the copy's target connection", "connection_id", w.connID, "error", kerr)
		}
	}
	// Never back to the pool: the session's settings are the copy's (binary names, no foreign
	// key checks), and after a failure it may be inside a transaction.
	w.conn.Raw(func(any) error { return driver.ErrBadConn })
	w.conn.Close()
}

// bulkInserts reports whether a server of version (@@version) inserts into an empty table in
// bulk with unique_checks off, and does it for LOAD DATA without a temporary file (see
// writer.bulk): MariaDB 10.11.11 and later 10.11s, 11.4.5 and later 11.4s, and 11.7.2 and later.
func bulkInserts(version string) bool {
	if !strings.Contains(version, "MariaDB") {
		return false
	}
	var major, minor, patch int
	if _, err := fmt.Sscanf(version, "%d.%d.%d", &major, &minor, &patch); err != nil {
		return false
	}
	v := major*10000 + minor*100 + patch
	return v >= 110702 || (v >= 110405 && v < 110500) || (v >= 101111 && v < 101200)
}
