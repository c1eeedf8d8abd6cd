package applier

import (
	"context"

	"github.com/vplayer/vplayer/event"
)

// rowGroup is a run of consecutive row changes of one kind on one table, not yet written.
type rowGroup struct {
	t     *table
	kind  event.RowKind
	fkOff bool   // the source wrote the rows with foreign_key_checks=0
	gtid0 string // the source transaction of the group's first rows
	rows  []event.Row
	bytes int // binlog bytes of the rows events, bounded like a fold's
}

// foreignKeys makes the session's foreign_key_checks what the statements that follow in the
// batch need: off for rows the source wrote with the checks off, and for DDL.
func (a *Applier) foreignKeys(off bool) {
	if a.fkOff == off && !a.fkUnknown {
		return
	}
	a.fkUnknown = false
	if off {
		a.b.add("", "SET SESSION foreign_key_checks = 0")
	} else {
		a.b.add("", "SET SESSION foreign_key_checks = 1")
	}
	a.fkOff = off
}

func (a *Applier) addRows(ctx context.Context, e *event.Event) error {
	t, err := a.tables.get(ctx, e.Table)
	if err != nil {
		return err
	}
	a.rows += len(e.Rows)
	if t.foldable {
		if err := a.fold.add(t, e.Kind, e.Rows, e.Bytes(), a.gtid); err != nil {
			return err
		}
		if a.fold.full() {
			return a.fold.appendTo(&a.b, a.cfg.ExecMode, a.gtid)
		}
		return nil
	}
	g := &a.group
	if g.t == t && g.kind == e.Kind && e.Kind != event.Update && g.fkOff == e.NoForeignKeyChecks {
		g.rows = append(g.rows, e.Rows...)
		g.bytes += e.Bytes()
	} else {
		if err := a.flushGroup(); err != nil {
			return err
		}
		g.t, g.kind, g.fkOff, g.gtid0, g.bytes = t, e.Kind, e.NoForeignKeyChecks, a.gtid, e.Bytes()
		g.rows = append(g.rows[:0], e.Rows...)
	}
	if e.Kind == event.Update || len(g.rows) >= 1000 || g.bytes >= maxFoldBytes {
		return a.flushGroup()
	}
	return nil
}

// flushPending writes every row change not yet in the batch: the row group and the fold.
func (a *Applier) flushPending() error {
	if err := a.flushGroup(); err != nil {
		return err
	}
	return a.fold.appendTo(&a.b, a.cfg.ExecMode, a.gtid)
}

// gtidSpan names the source transactions from gtid0 to the current one.
func (a *Applier) gtidSpan(gtid0 string) string {
	if gtid0 == "" || gtid0 == a.gtid {
		return a.gtid
	}
	return gtid0 + ".." + a.gtid
}

// flushGroup writes the pending row group into the batch.
func (a *Applier) flushGroup() error {
	g := &a.group
	if g.t == nil || len(g.rows) == 0 {
		g.t = nil
		return nil
	}
	a.foreignKeys(g.fkOff)
	var err error
	switch g.kind {
	case event.Insert:
		err = appendInsertMode(&a.b, g.t, g.rows, a.cfg.ExecMode, a.gtidSpan(g.gtid0))
	case event.Update:
		err = appendUpdate(&a.b, g.t, g.rows, a.cfg.ExecMode, a.gtid)
	case event.Delete:
		err = appendDelete(&a.b, g.t, g.rows, a.gtidSpan(g.gtid0))
	}
	clear(g.rows)
	g.rows = g.rows[:0]
	g.t = nil
	return err
}
