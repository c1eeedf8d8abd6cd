package copier

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync/atomic"

	"github.com/vplayer/vplayer/tablekey"
	"github.com/vplayer/vplayer/workflow"
)

// batchRows is how many rows one read of a chunk fetches before the copier turns to the next
// table of its group.
const batchRows = 5000

// stmtMargin is room kept in a round trip for what follows the last INSERT: the copy state's
// statement (its last key included), the fence and COMMIT.
const stmtMargin = 32 << 10

// cursor is one table's chunk in a round: one target transaction on its writer, fed a batch of
// rows at a time from the round's snapshot.
type cursor struct {
	c   *Copier
	t   *table
	st  workflow.TableCopy // the copy state the chunk starts from
	pos string             // the round's snapshot position
	w   *writer

	buf     []byte
	first   bool     // the chunk starts the table's copy: its counts start over
	lastpk  []string // the last key read, nil before the first row of a table's copy
	lastRaw [][]byte // the last row's key as read, lastpk once the batch ends
	n       int64    // rows of the open transaction
	chunk   int64    // rows of the chunk
	inStmt  int64    // rows of the statement being built
	bytes   int      // bytes of the open transaction's round trips
	lenient bool     // the round trip writes an ENUM's error value
	ended   bool     // the chunk is committed (queued)
	done    bool     // with ended: the chunk is the table's last
	whole   bool     // the table is copied whole in this round, chunk after chunk (see fk.go)

	// A chunk of a table whose columns all go through LOAD DATA (table.loadCols) streams its
	// rows into one LOAD DATA: pw is its pipe, lines the text not written into it yet.
	pw    *io.PipeWriter
	lines []byte
}

// loadFlush is how much LOAD DATA text the copier gathers before it writes it into the pipe.
const loadFlush = 64 << 10

// loadSeq numbers the LOAD DATA reader handlers of the process.
var loadSeq atomic.Int64

// begin opens the chunk's transaction: BEGIN and, when there are any (see stale), the DELETE of
// the target's rows above the table's last copied key; on a target that loads in bulk, the
// session's unique_checks for the chunk first.
func (k *cursor) begin(ctx context.Context) error {
	stale, err := k.stale(ctx)
	if err != nil {
		return err
	}
	buf, err := k.w.buffer(ctx)
	if err != nil {
		return err
	}
	k.first, k.lastpk = k.st.LastPK == nil, append([]string(nil), k.st.LastPK...)
	if k.w.bulk {
		// Into an empty table, InnoDB then writes the chunk in bulk (see writer.bulk); into one
		// that holds rows, the checks stay on.
		checks := "0"
		if stale || k.st.LastPK != nil {
			checks = "1"
		}
		buf = append(buf, "SET SESSION unique_checks = "+checks+";"...)
	}
	k.buf = append(append(buf, k.t.insertHistory()...), "BEGIN"...)
	if stale {
		k.buf = append(append(k.buf, ';'), k.t.clear(k.st.LastPK)...)
	}
	k.w.txOpen.Store(true)
	if k.t.loadCols == "" || k.t.key == nil || k.c.noLoad {
		return nil
	}
	// LOAD DATA: BEGIN and the DELETE go first, then the LOAD, fed as the rows are read.
	if err := k.w.send(ctx, k.buf, "DELETE "+k.t.dst, false); err != nil {
		k.buf = nil
		return err
	}
	k.buf = nil
	r, w := io.Pipe()
	name := "vplayer-copy-" + strconv.FormatInt(loadSeq.Add(1), 10)
	if err := k.w.sendLoad(ctx, &loadJob{name: name, sql: k.t.loadSQL(name), r: r}, "LOAD DATA "+k.t.dst); err != nil {
		return err
	}
	k.pw, k.lines = w, k.lines[:0]
	return nil
}

// next opens the table's next chunk in the same round when the table is copied whole (see
// fk.go) and its chunk just ended before the table's end; otherwise it does nothing.
func (k *cursor) next(ctx context.Context) error {
	if !k.whole || !k.ended || k.done {
		return nil
	}
	k.st.LastPK = k.lastpk // begin reads it into a lastpk of its own
	k.ended, k.chunk = false, 0
	return k.begin(ctx)
}

// stale reports whether the target holds rows above the table's last copied key: rows the
// binlog wrote since the copy began, which the chunk's DELETE replaces. Without any, the chunk
// has no DELETE: a DELETE, even of no row, locks the key range it scans, and InnoDB then inserts
// the chunk's rows one at a time under that lock, never in bulk. The read is a consistent one,
// which takes no lock, and nothing writes the table before the chunk does: the stream holds at
// the round's position until every chunk of the round committed, and a table is one writer's.
func (k *cursor) stale(ctx context.Context) (bool, error) {
	q := "SELECT EXISTS (SELECT 1 FROM " + k.t.allRows()
	if k.st.LastPK != nil && k.t.key != nil {
		q += " WHERE " + tablekey.Compare(k.t.key, k.st.LastPK, ">", ">")
	}
	q += ")"
	k.c.running("SELECT EXISTS (SELECT 1 FROM " + k.t.dst + ")")
	var stale bool
	if err := k.c.cfg.Target.QueryRowContext(ctx, q).Scan(&stale); err != nil {
		return false, fmt.Errorf("target: look for rows above the last copied key of %s: %w", k.t.dst, err)
	}
	k.c.progressed()
	return stale, nil
}

// errCopyAborted ends a chunk's LOAD DATA whose copy stopped before the chunk's end: the server
// then rolls the statement back, and the chunk's transaction with it.
var errCopyAborted = errors.New("the copy of the chunk stopped")

// abort ends an open LOAD DATA of the chunk, so that its writer's round trip returns.
func (k *cursor) abort() {
	if k.pw != nil {
		k.pw.CloseWithError(errCopyAborted)
		k.pw = nil
	}
}

// writeLines writes the gathered LOAD DATA text into the pipe; it returns once the driver has
// read it, or with the LOAD's error.
func (k *cursor) writeLines() error {
	if len(k.lines) == 0 {
		return nil
	}
	_, err := k.pw.Write(k.lines)
	k.bytes += len(k.lines)
	k.lines = k.lines[:0]
	if err != nil {
		if errors.Is(err, errLoadEnded) {
			err = k.w.failed() // the LOAD ended early: its error is the writer's
		}
		return fmt.Errorf("target: LOAD DATA %s: %w", k.t.dst, err)
	}
	return nil
}

// batch reads up to limit more rows of the chunk (0: the rest of the table, for a table without
// a key) into statements, and commits the chunk when it is full or the table has no more rows.
func (k *cursor) batch(ctx context.Context, src *sql.Conn, limit int) error {
	c, t := k.c, k.t
	if limit > 0 {
		limit = min(limit, c.cfg.ChunkRows-int(k.chunk))
	}
	c.running("SELECT " + t.src)
	rows, err := src.QueryContext(ctx, t.query(k.lastpk, limit))
	if err != nil {
		return fmt.Errorf("source: read rows: %w", err)
	}
	defer rows.Close()
	read, full, err := k.readRows(ctx, rows)
	if err != nil {
		return err
	}
	rows.Close()
	if read > 0 {
		k.readTo()
	}
	c.progressed()
	exhausted := limit == 0 || read < limit
	if !full && !exhausted && k.chunk < int64(c.cfg.ChunkRows) {
		return nil // more of this chunk at the table's next turn
	}
	return k.end(ctx, exhausted && !full)
}

// readRows writes rows into the chunk until they end or the chunk is full (the next one then
// starts after lastpk), and returns how many it read.
func (k *cursor) readRows(ctx context.Context, rows *sql.Rows) (read int, full bool, err error) {
	vals, ptrs := k.t.scanDest()
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return read, false, fmt.Errorf("source: read rows: %w", err)
		}
		read++
		k.counted(vals)
		if k.pw != nil {
			full, err = k.loadRow(vals)
		} else {
			full, err = k.insertRow(ctx, vals)
		}
		if err != nil {
			return read, false, err
		}
		if full {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return read, false, fmt.Errorf("source: read rows: %w", err)
	}
	return read, full, nil
}

// loadRow adds a row to the chunk's LOAD DATA text, written into the pipe loadFlush bytes at a
// time, and reports whether the chunk is full.
func (k *cursor) loadRow(vals []sql.RawBytes) (full bool, err error) {
	k.lines = k.t.appendLoadRow(k.lines, vals)
	if len(k.lines) >= loadFlush {
		k.c.progressed()
		if err := k.writeLines(); err != nil {
			return false, err
		}
	}
	return k.bytes+len(k.lines) >= k.c.cfg.ChunkBytes, nil
}

// insertRow adds a row to the chunk's multi-row INSERTs, queuing the round trip once the statement
// reaches the writer's bound, and reports whether the chunk is full. A table without a key is
// never full: it commits what it has and goes on with the same scan.
func (k *cursor) insertRow(ctx context.Context, vals []sql.RawBytes) (full bool, err error) {
	t := k.t
	if k.inStmt == 0 {
		if len(k.buf) > 0 {
			k.buf = append(k.buf, ';')
		}
		k.buf = append(k.buf, t.head...)
	} else {
		k.buf = append(k.buf, ',')
	}
	var l bool
	k.buf, l = t.appendRow(k.buf, vals)
	k.lenient = k.lenient || l
	k.inStmt++
	if len(k.buf) >= k.w.maxStmt-stmtMargin-len(k.buf)/int(k.inStmt) {
		k.c.progressed()
		if err := k.send(ctx, ""); err != nil {
			return false, err
		}
	}
	if k.bytes+len(k.buf) < k.c.cfg.ChunkBytes {
		return false, nil
	}
	if t.key != nil {
		return true, nil
	}
	if err := k.commit(ctx, false); err != nil {
		return false, err
	}
	k.buf = append(k.buf, "BEGIN"...)
	return false, nil
}

// end commits the chunk, the table's last when done, and gives its buffer back to its writer.
func (k *cursor) end(ctx context.Context, done bool) error {
	k.done = done
	if k.pw != nil {
		if err := k.commitLoad(ctx, done); err != nil {
			return err
		}
	} else {
		if err := k.commit(ctx, done); err != nil {
			return err
		}
		k.w.free <- k.buf[:0]
		k.buf = nil
	}
	k.ended = true
	if done {
		k.c.cfg.logger().Info("table copied", "table", k.t.name)
	}
	return nil
}

// send queues the round trip built so far, then final (the copy state, fence and COMMIT).
func (k *cursor) send(ctx context.Context, final string) error {
	if final != "" {
		k.buf = append(k.buf, ';')
		k.buf = append(k.buf, final...)
	}
	if k.lenient {
		k.buf = append(append([]byte("SET SESSION sql_mode = '"+sqlModeLenient+"';"), k.buf...), ";SET SESSION sql_mode = '"+sqlModeStrict+"'"...)
	}
	shape := "INSERT " + k.t.dst
	if k.inStmt == 0 {
		shape = "COMMIT"
	}
	k.bytes += len(k.buf)
	if err := k.w.send(ctx, k.buf, shape, false); err != nil {
		k.buf = nil
		return err
	}
	k.inStmt, k.lenient = 0, false
	var err error
	k.buf, err = k.w.buffer(ctx)
	return err
}

// commitLoad ends the chunk's LOAD DATA and queues its copy state, the fence and COMMIT.
func (k *cursor) commitLoad(ctx context.Context, done bool) error {
	if err := k.writeLines(); err != nil {
		return err
	}
	k.pw.Close()
	k.pw = nil
	buf, err := k.w.buffer(ctx)
	if err != nil {
		return err
	}
	if err := k.w.send(ctx, append(buf, k.endSQL(done)...), "COMMIT", false); err != nil {
		return err
	}
	k.queued()
	return nil
}

// commit queues the rest of the transaction with its copy state, the fence and COMMIT.
func (k *cursor) commit(ctx context.Context, done bool) error {
	if err := k.send(ctx, k.endSQL(done)); err != nil {
		return err
	}
	k.queued()
	return nil
}

// counted notes a row read into the chunk: its counts and, for a table with a key, its key.
func (k *cursor) counted(vals []sql.RawBytes) {
	k.n++
	k.chunk++
	if k.t.key == nil {
		return
	}
	if k.lastRaw == nil {
		k.lastRaw = make([][]byte, len(k.t.key))
	}
	for i, at := range k.t.keyAt {
		k.lastRaw[i] = append(k.lastRaw[i][:0], vals[at]...)
	}
}

// readTo sets lastpk to the last row's key, after a batch that read rows.
func (k *cursor) readTo() {
	if k.t.key == nil {
		return
	}
	if k.lastpk == nil {
		k.lastpk = make([]string, len(k.t.key))
	}
	for i, b := range k.lastRaw {
		k.lastpk[i] = string(b)
	}
}

// endSQL is what ends the chunk's transaction: its copy state (the last key, none for a table
// without a key), the fence and COMMIT.
func (k *cursor) endSQL(done bool) string {
	c := k.c
	lastpk := k.lastpk
	if k.t.key == nil {
		lastpk = nil
	}
	return c.cfg.Store.ChunkSQL(c.cfg.ID, k.t.name, lastpk, k.pos, k.n, k.first, done, c.cfg.Now().Unix()) + ";" + c.cfg.Lease.FenceCheckSQL() + ";COMMIT"
}

// queued notes that the transaction's end is queued: its rows are pending, the next transaction
// of the table (if any) starts its counts afresh.
func (k *cursor) queued() {
	k.c.pending.Add(k.n)
	k.first, k.n, k.bytes = false, 0, 0
}
