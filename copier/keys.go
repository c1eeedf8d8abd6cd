package copier

import (
	"context"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/vplayer/vplayer/sqlq"
	"github.com/vplayer/vplayer/workflow"
)

// keyPollInterval is how often the server is asked whether a key build is working.
const keyPollInterval = time.Second

// buildKeys builds the deferred secondary keys of every copied table still without them, a
// table per writer at a time, while the stream holds at the last round's position (no applier
// transaction then holds the tables' metadata locks). Most are built already: a writer with a
// reader of its own builds its tables' keys once its round has no table left for it (see
// copyQueued). A key already there (a build that committed before a crash, or a key the plan
// could not drop) is not built again. Each table's build ends by clearing its deferred keys in
// the copy state, fenced.
func (c *Copier) buildKeys(ctx context.Context, ws []*writer) error {
	var todo []workflow.TableCopy
	for _, t := range c.State() {
		if t.Done && len(t.DeferredKeys) > 0 {
			todo = append(todo, t)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	c.progressed()
	defer c.idle()
	queue := make(chan workflow.TableCopy, len(todo))
	for _, t := range todo {
		queue <- t
	}
	close(queue)
	g, gctx := errgroup.WithContext(ctx)
	for _, w := range ws[:min(len(ws), len(todo))] {
		g.Go(func() error {
			for t := range queue {
				if err := c.buildTableKeys(gctx, w, t); err != nil {
					return fmt.Errorf("build the deferred keys of %s.%s: %w", c.cfg.TargetDB, t.Table, err)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	state, err := c.cfg.Store.CopyState(ctx, c.cfg.ID)
	if err != nil {
		return err
	}
	c.setState(state)
	return nil
}

func (c *Copier) buildTableKeys(ctx context.Context, w *writer, t workflow.TableCopy) error {
	have := map[string]bool{}
	rows, err := c.cfg.Target.QueryContext(ctx, "SELECT DISTINCT INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", c.cfg.TargetDB, t.Table)
	if err != nil {
		return fmt.Errorf("target: read its keys: %w", err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return fmt.Errorf("target: read its keys: %w", err)
		}
		have[name] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("target: read its keys: %w", err)
	}
	var adds []string
	for _, def := range t.DeferredKeys {
		if !have[unquote(keyName(def))] {
			adds = append(adds, "ADD "+def)
		}
	}
	dst := sqlq.Ident(c.cfg.TargetDB) + "." + sqlq.Ident(t.Table)
	if len(adds) > 0 {
		began := time.Now()
		if err := c.runDDL(ctx, w, "ALTER TABLE "+dst+" "+strings.Join(adds, ", "), "ALTER TABLE "+dst+" ADD KEY (deferred keys)"); err != nil {
			return err
		}
		c.cfg.logger().Info("deferred keys built", "table", c.cfg.TargetDB+"."+t.Table, "keys", len(adds), "seconds", time.Since(began).Seconds())
	}
	w.txOpen.Store(true) // a failed fence or UPDATE leaves the transaction open: release kills it
	if err := w.sendText(ctx, "BEGIN;"+c.cfg.Store.KeysBuiltSQL(c.cfg.ID, t.Table)+";"+c.cfg.Lease.FenceCheckSQL()+";COMMIT", "COMMIT"); err != nil {
		return err
	}
	w.txOpen.Store(false)
	return nil
}

// runDDL runs a key build on w and waits for it. A build is one statement that may take long on
// a large table: while the server says it is working on it (not waiting for a lock), its round
// trip counts as progress for the stall watchdog.
func (c *Copier) runDDL(ctx context.Context, w *writer, q, shape string) error {
	done := make(chan error, 1)
	w.txOpen.Store(true) // a build in flight is killed, like an open chunk, when the copy fails
	go func() { done <- w.sendText(ctx, q, shape) }()
	tick := time.NewTicker(keyPollInterval)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err == nil {
				w.txOpen.Store(false)
			}
			// Otherwise the build may still run on the server (sendText returns at the end of
			// ctx without it): the writer's release kills its session.
			return err
		case <-tick.C:
			var state string
			err := c.cfg.Target.QueryRowContext(ctx, "SELECT COALESCE(STATE, '') FROM information_schema.PROCESSLIST WHERE ID = ?", w.connID).Scan(&state)
			if since := w.statementSince.Load(); err == nil && since != 0 && !strings.HasPrefix(state, "Waiting for") {
				w.statementSince.CompareAndSwap(since, c.cfg.Now().UnixNano())
			}
		}
	}
}
