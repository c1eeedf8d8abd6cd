package copier

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/vplayer/vplayer/snapshot"
	"github.com/vplayer/vplayer/workflow"
)

// round is one snapshot: the catch-up to its position and a chunk of each table not done that
// may start (see fk.go), all committed before the stream may move on.
func (c *Copier) round(ctx context.Context, catchUp CatchUp, tables map[string]*table, ws []*writer) error {
	snap, pos, err := snapshot.Source(ctx, c.cfg.Source, c.cfg.Flavor)
	if err != nil {
		return err
	}
	defer snap.Close()
	if err := namesBinary(ctx, snap.Conn); err != nil {
		return err
	}
	state := c.State()
	todo := c.startable(state)
	if len(todo) == 0 {
		return fmt.Errorf("no table left to copy can start: %s", Message(state))
	}
	more, err := c.moreSnapshots(ctx, snap, max(min(len(ws), len(todo))-1, 0))
	defer func() {
		for _, m := range more {
			m.Close()
		}
	}()
	if err != nil {
		return err
	}
	readers := []*sql.Conn{snap.Conn}
	for _, m := range more {
		if m != nil {
			readers = append(readers, m.Conn)
		}
	}
	if err := catchUp(ctx, pos); err != nil {
		return err
	}
	keyed, keyless, err := c.cursors(ctx, snap.Conn, todo, tables, pos.String())
	if err != nil {
		return err
	}
	c.progressed()
	defer c.idle()
	// A chunk that stops before its end (an error, the end of ctx) ends its LOAD DATA, which
	// would otherwise wait for rows that do not come and hold its writer.
	all := append(append([]*cursor(nil), keyed...), keyless...)
	defer func() {
		for _, cur := range all {
			cur.abort()
		}
	}()
	if err := c.copyChunks(ctx, keyed, keyless, ws, readers); err != nil {
		return err
	}
	return c.endRound(ctx, ws, all)
}

// namesBinary makes a source snapshot's session read bytes untouched.
func namesBinary(ctx context.Context, conn *sql.Conn) error {
	if _, err := conn.ExecContext(ctx, "SET NAMES binary"); err != nil {
		return fmt.Errorf("source snapshot: SET NAMES binary: %w", err)
	}
	return nil
}

// startable returns the copy state of the round's tables: those of state not done that may
// start (see fk.go), a table to copy again from its first row (redo) with its chunks starting
// over.
func (c *Copier) startable(state []workflow.TableCopy) []workflow.TableCopy {
	done := c.done(state)
	var todo []workflow.TableCopy
	for _, st := range state {
		if c.redo[st.Table] {
			st.LastPK, st.Done = nil, false // its chunks start over: see fk.go
		}
		if !st.Done && c.fk.ready(st.Table, done) {
			todo = append(todo, st)
		}
	}
	return todo
}

// moreSnapshots opens n more readers beside snap, one per writer besides the first: snapshots at
// exactly the same binlog position see the same committed transactions, so each reads its table
// as the first one would. They are opened at once, which makes it likelier that a busy source
// commits nothing in between; one at another position is not used (nil). The caller closes
// those returned, on an error too.
func (c *Copier) moreSnapshots(ctx context.Context, snap *snapshot.Snapshot, n int) ([]*snapshot.Snapshot, error) {
	more := make([]*snapshot.Snapshot, n)
	g, gctx := errgroup.WithContext(ctx)
	for i := range more {
		g.Go(func() error {
			m, err := snap.Another(gctx, c.cfg.Source)
			if err != nil || m == nil {
				return err
			}
			more[i] = m
			return namesBinary(gctx, m.Conn)
		})
	}
	return more, g.Wait()
}

// cursors returns a cursor for the chunk of each table of todo, at the round's position pos:
// those of tables with a key, and those of tables without, which are copied in one scan.
func (c *Copier) cursors(ctx context.Context, src *sql.Conn, todo []workflow.TableCopy, tables map[string]*table, pos string) (keyed, keyless []*cursor, err error) {
	for _, st := range todo {
		t, err := c.tableOf(ctx, src, tables, st.Table)
		if err != nil {
			return nil, nil, err
		}
		cur := &cursor{c: c, t: t, st: st, pos: pos, whole: c.fk.whole(st.Table)}
		if t.key == nil {
			keyless = append(keyless, cur)
		} else {
			keyed = append(keyed, cur)
		}
	}
	return keyed, keyless, nil
}

// tableOf returns the definition of the table name from tables, loading it (through src, the
// round's snapshot) the first time the copy meets it.
func (c *Copier) tableOf(ctx context.Context, src *sql.Conn, tables map[string]*table, name string) (*table, error) {
	if t := tables[name]; t != nil {
		return t, nil
	}
	t, err := loadTable(ctx, src, c.cfg.Target, c.cfg.SourceDB, c.cfg.TargetDB, name, c.cfg.MySQLSource)
	if err != nil {
		return nil, err
	}
	tables[name] = t
	c.logColumns(t)
	if t.key == nil {
		c.cfg.logger().Warn("table has no primary key and no unique key over NOT NULL columns: it is copied in one consistent scan, which starts again from its first row if the copy is interrupted",
			"table", c.cfg.SourceDB+"."+name)
	}
	return t, nil
}

// copyChunks copies the chunks of the round's cursors. Tables with a key: with a reader per
// writer, each writer takes the next table's chunk as soon as its last one is queued, so that no
// writer waits for a group to end (copyQueued); with fewer readers, the tables go in groups of
// one per writer (copyInTurns). A table without a key is one scan, alone, on the first writer.
// readers[0] is the round's first snapshot.
func (c *Copier) copyChunks(ctx context.Context, keyed, keyless []*cursor, ws []*writer, readers []*sql.Conn) error {
	if len(keyed) > 0 && len(readers) >= min(len(ws), len(keyed)) {
		if err := c.copyQueued(ctx, keyed, ws, readers, len(keyless) > 0); err != nil {
			return err
		}
		keyed = nil
	}
	for len(keyed) > 0 {
		group := keyed[:min(len(keyed), len(ws))]
		keyed = keyed[len(group):]
		if err := copyInTurns(ctx, group, ws, readers[0]); err != nil {
			return err
		}
	}
	for _, cur := range keyless {
		cur.w = ws[0]
		if err := cur.begin(ctx); err != nil {
			return err
		}
		if err := cur.batch(ctx, readers[0], 0); err != nil {
			return fmt.Errorf("copy %s: %w", cur.t.name, err)
		}
	}
	return nil
}

// copyInTurns copies the chunks of group, a cursor per writer of ws, from one reader src: their
// rows are read in turns, a batch at a time, so that every writer has rows to write.
func copyInTurns(ctx context.Context, group []*cursor, ws []*writer, src *sql.Conn) error {
	for i, cur := range group {
		cur.w = ws[i]
		if err := cur.begin(ctx); err != nil {
			return err
		}
	}
	for active := len(group); active > 0; {
		active = 0
		for _, cur := range group {
			if cur.ended {
				continue
			}
			if err := cur.batch(ctx, src, batchRows); err != nil {
				return fmt.Errorf("copy %s: %w", cur.t.name, err)
			}
			if err := cur.next(ctx); err != nil {
				return err
			}
			if !cur.ended {
				active++
			}
		}
	}
	return nil
}

// endRound commits every chunk of the round, which must happen before the stream may move on to
// the next snapshot, and takes in the copy state they committed: a table of all whose copy they
// completed needs no copy again.
func (c *Copier) endRound(ctx context.Context, ws []*writer, all []*cursor) error {
	for _, w := range ws {
		if err := w.send(ctx, nil, "", true); err != nil {
			return err
		}
		w.txOpen.Store(false)
	}
	c.rows.Add(c.pending.Swap(0))
	state, err := c.cfg.Store.CopyState(ctx, c.cfg.ID)
	if err != nil {
		return err
	}
	for _, cur := range all {
		if cur.done {
			delete(c.redo, cur.st.Table)
		}
	}
	c.setState(state)
	c.settle(state)
	return nil
}

// logColumns says what the copy does with a table whose source and target have different
// numbers of columns: it writes the columns they share.
func (c *Copier) logColumns(t *table) {
	switch {
	case len(t.targetOnly) > 0:
		c.cfg.logger().Info("the target table has more columns than the source's: the copy writes the columns they share, the target's defaults fill the rest",
			"table", c.cfg.TargetDB+"."+t.name, "shared", t.shared, "target_only", strings.Join(t.targetOnly, ","))
	case len(t.sourceOnly) > 0:
		c.cfg.logger().Info("the source table has more columns than the target's: the copy writes the columns they share, not the rest",
			"table", c.cfg.TargetDB+"."+t.name, "shared", t.shared, "source_only", strings.Join(t.sourceOnly, ","))
	}
}

// copyQueued copies one chunk of each cursor's table: each writer, with a reader of its own (all
// at the round's position), takes the next cursor from the queue as soon as its last chunk is
// queued to its session. Once the queue is empty, each writer builds the keys of the tables it
// completed while the other writers may still copy (keepFirst: the tables without a key still
// need the round's first reader).
func (c *Copier) copyQueued(ctx context.Context, cursors []*cursor, ws []*writer, readers []*sql.Conn, keepFirst bool) error {
	// The largest chunks first, so that the small ones fill the writers' gaps at the end.
	left := func(cur *cursor) int64 { return min(max(cur.st.Estimated-cur.st.Rows, 0), int64(c.cfg.ChunkRows)) }
	cursors = slices.Clone(cursors)
	slices.SortStableFunc(cursors, func(a, b *cursor) int { return cmp.Compare(left(b), left(a)) })
	queue := make(chan *cursor, len(cursors))
	for _, cur := range cursors {
		queue <- cur
	}
	close(queue)
	g, gctx := errgroup.WithContext(ctx)
	for i := range min(len(ws), len(cursors)) {
		w, r := ws[i], readers[i]
		g.Go(func() error {
			var completed []*cursor // tables whose last chunk this writer wrote, keys deferred
			for cur := range queue {
				if gctx.Err() != nil {
					return nil
				}
				cur.w = w
				if err := cur.begin(gctx); err != nil {
					return err
				}
				for !cur.ended {
					if err := cur.batch(gctx, r, batchRows); err != nil {
						return fmt.Errorf("copy %s: %w", cur.t.name, err)
					}
					if err := cur.next(gctx); err != nil {
						return err
					}
				}
				if cur.done && len(cur.st.DeferredKeys) > 0 {
					completed = append(completed, cur)
				}
			}
			if len(completed) == 0 || gctx.Err() != nil {
				return nil
			}
			// The builds need the stream held, which it is until the round ends, not the
			// source's snapshot: its read view ends first, so that a long build does not hold
			// back purge on the source.
			if i > 0 || !keepFirst {
				if _, err := r.ExecContext(gctx, "ROLLBACK"); err != nil {
					return fmt.Errorf("source: end the round's snapshot: %w", err)
				}
			}
			for _, cur := range completed {
				// Queued behind the table's last COMMIT on the same session: a chunk that
				// failed fails the build with the writer's own error, which is the one to tell.
				if err := c.buildTableKeys(gctx, w, cur.st); err != nil {
					if werr := w.failed(); werr != nil {
						return werr
					}
					return fmt.Errorf("build the deferred keys of %s.%s: %w", c.cfg.TargetDB, cur.st.Table, err)
				}
			}
			return nil
		})
	}
	return g.Wait()
}
