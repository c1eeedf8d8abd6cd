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

// round is one snapshot: the catch-up to its position and a chunk of each table not done.
func (c *Copier) round(ctx context.Context, catchUp CatchUp, tables map[string]*table, ws []*writer) error {
	snap, pos, err := snapshot.Source(ctx, c.cfg.Source, c.cfg.Flavor)
	if err != nil {
		return err
	}
	defer snap.Close()
	if _, err := snap.Conn.ExecContext(ctx, "SET NAMES binary"); err != nil {
		return fmt.Errorf("source snapshot: SET NAMES binary: %w", err)
	}
	// More readers, one per writer: snapshots at exactly the same binlog position see the same
	// committed transactions, so each reads its table as the first one would. They are opened
	// at once, which makes it likelier that a busy source commits nothing in between; one at
	// another position is not used.
	// The round's tables: those not done that may start (see fk.go).
	state := c.State()
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
	if len(todo) == 0 {
		return fmt.Errorf("no table left to copy can start: %s", Message(state))
	}
	more := make([]*snapshot.Snapshot, max(min(len(ws), len(todo))-1, 0))
	defer func() {
		for _, m := range more {
			m.Close()
		}
	}()
	g, gctx := errgroup.WithContext(ctx)
	for i := range more {
		g.Go(func() error {
			m, err := snap.Another(gctx, c.cfg.Source)
			if err != nil || m == nil {
				return err
			}
			more[i] = m
			if _, err := m.Conn.ExecContext(gctx, "SET NAMES binary"); err != nil {
				return fmt.Errorf("source snapshot: SET NAMES binary: %w", err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
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
	// Tables with a key: with a reader per writer, each writer takes the next table's chunk as
	// soon as its last one is queued, so that no writer waits for a group to end; with fewer
	// readers, the tables go in groups of one per writer, their chunks read in turns, a batch of
	// rows at a time, so that every writer has rows to write. A table without a key is one scan,
	// alone.
	var keyed, keyless []*cursor
	for _, st := range todo {
		t := tables[st.Table]
		if t == nil {
			if t, err = loadTable(ctx, snap.Conn, c.cfg.Target, c.cfg.SourceDB, c.cfg.TargetDB, st.Table, c.cfg.MySQLSource); err != nil {
				return err
			}
			tables[st.Table] = t
			c.logColumns(t)
			if t.key == nil {
				c.cfg.logger().Warn("table has no primary key and no unique key over NOT NULL columns: it is copied in one consistent scan, which starts again from its first row if the copy is interrupted",
					"table", c.cfg.SourceDB+"."+st.Table)
			}
		}
		cur := &cursor{c: c, t: t, st: st, pos: pos.String(), whole: c.fk.whole(st.Table)}
		if t.key == nil {
			keyless = append(keyless, cur)
		} else {
			keyed = append(keyed, cur)
		}
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
	if len(keyed) > 0 && len(readers) >= min(len(ws), len(keyed)) {
		if err := c.copyQueued(ctx, keyed, ws, readers, len(keyless) > 0); err != nil {
			return err
		}
		keyed = nil
	}
	for len(keyed) > 0 {
		group := keyed[:min(len(keyed), len(ws))]
		keyed = keyed[len(group):]
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
				if err := cur.batch(ctx, snap.Conn, batchRows); err != nil {
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
	}
	for _, cur := range keyless {
		cur.w = ws[0]
		if err := cur.begin(ctx); err != nil {
			return err
		}
		if err := cur.batch(ctx, snap.Conn, 0); err != nil {
			return fmt.Errorf("copy %s: %w", cur.t.name, err)
		}
	}
	// Every chunk of the round commits before the stream may move on to the next snapshot.
	for _, w := range ws {
		if err := w.send(ctx, nil, "", true); err != nil {
			return err
		}
		w.txOpen.Store(false)
	}
	c.rows.Add(c.pending.Swap(0))
	if state, err = c.cfg.Store.CopyState(ctx, c.cfg.ID); err != nil {
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
