package bench

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Quiescing between timings. Writing a backlog, or catching one up, leaves a server with dirty
// pages that its page cleaner writes back lazily (innodb_max_dirty_pages_pct is 90 by default) and
// with undo that purge has still to remove. Timed right after, an applier would share the cores
// and the disk with that write-back: the first one timed after the backlog pays for the source's,
// each later one for the target before it. So before each timing every server writes back its
// dirty pages and purges, with innodb_max_dirty_pages_pct at 0 and a high innodb_io_capacity for
// the wait only (their own values are set back before the timing starts), and every applier
// starts from the same quiet machine.

const (
	// quiesceDirty is how many dirty pages a server may keep: the few that idle writes leave.
	quiesceDirty = 100
	// quiesceHistory is how long an undo history a server may keep.
	quiesceHistory = 1000
	// quiesceFor bounds the wait; the timing then starts anyway, and the output says so.
	quiesceFor = 3 * time.Minute
)

// quiesce waits until no server of the cluster writes back earlier work (see above).
func (c *cluster) quiesce(ctx context.Context) error {
	dbs := []*sql.DB{c.src}
	for _, t := range c.vtargets() {
		dbs = append(dbs, t.db)
	}
	for _, n := range c.natives() {
		dbs = append(dbs, n.db)
	}
	return quiesce(ctx, c.say, dbs)
}

// quiesce waits until none of the servers of dbs writes back earlier work (see above).
func quiesce(ctx context.Context, say func(string, ...any), dbs []*sql.DB) (err error) {
	start := time.Now()
	type saved struct{ pct, io, ioMax string }
	was := make([]saved, len(dbs))
	for i, db := range dbs {
		if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_max_dirty_pages_pct, @@GLOBAL.innodb_io_capacity, @@GLOBAL.innodb_io_capacity_max").
			Scan(&was[i].pct, &was[i].io, &was[i].ioMax); err != nil {
			return fmt.Errorf("read innodb_max_dirty_pages_pct and innodb_io_capacity: %w", err)
		}
	}
	defer func() {
		for i, db := range dbs {
			// Set back even when ctx ended: a timing after an error must not run with the
			// wait's settings.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_, rerr := db.ExecContext(rctx, "SET GLOBAL innodb_max_dirty_pages_pct = "+was[i].pct+
				", GLOBAL innodb_io_capacity = "+was[i].io+", GLOBAL innodb_io_capacity_max = "+was[i].ioMax)
			cancel()
			if rerr != nil && err == nil {
				err = fmt.Errorf("set innodb_max_dirty_pages_pct and innodb_io_capacity back after the wait: %w", rerr)
			}
		}
	}()
	// The page cleaner writes at most innodb_io_capacity pages a second when it has no reason to
	// hurry (200 by default: 40 s for what a backlog leaves); for the wait it may use the disk.
	for _, db := range dbs {
		if _, err := db.ExecContext(ctx, "SET GLOBAL innodb_max_dirty_pages_pct = 0, GLOBAL innodb_io_capacity_max = 100000, GLOBAL innodb_io_capacity = 50000"); err != nil {
			return fmt.Errorf("set innodb_max_dirty_pages_pct and innodb_io_capacity for the wait: %w", err)
		}
	}
	for {
		quiet := true
		var dirty, history int64
		for _, db := range dbs {
			d, h, err := writeBack(ctx, db)
			if err != nil {
				return err
			}
			dirty, history = dirty+d, history+h
			quiet = quiet && d <= quiesceDirty && h <= quiesceHistory
		}
		if quiet {
			if took := time.Since(start); took >= time.Second {
				say("  every server wrote back its dirty pages and purged in %.1fs", took.Seconds())
			}
			return nil
		}
		if time.Since(start) > quiesceFor {
			say("  the servers still hold %d dirty pages and %d undo records after %v: timing anyway", dirty, history, quiesceFor)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// writeBack returns how much a server still has to write back: its dirty pages and the length
// of its undo history.
func writeBack(ctx context.Context, db *sql.DB) (dirty, history int64, err error) {
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_buffer_pool_pages_dirty', 'Innodb_history_list_length')")
	if err != nil {
		return 0, 0, fmt.Errorf("read a server's dirty pages: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var v int64
		if err := rows.Scan(&name, &v); err != nil {
			return 0, 0, fmt.Errorf("read a server's dirty pages: %w", err)
		}
		if name == "Innodb_buffer_pool_pages_dirty" {
			dirty = v
		} else {
			history = v
		}
	}
	return dirty, history, rows.Err()
}
