package plan

import (
	"fmt"

	"github.com/vplayer/vplayer/event"
)

// rowGroup is a run of consecutive row changes of one kind on one table, not yet written.
type rowGroup struct {
	t     *Table
	kind  event.RowKind
	fkOff bool   // the rows go in with foreign_key_checks=0: the source wrote them so, or Config.FKOff
	gtid0 string // the source transaction of the group's first rows
	rows  []event.Row
	bytes int // binlog bytes of the rows events, bounded like a fold's
}

// foreignKeys makes the session's foreign_key_checks what the statements that follow in the
// batch need: off for rows the source wrote with the checks off, and for DDL.
func (p *Planner) foreignKeys(off bool) {
	if p.fkOff == off && !p.fkUnknown {
		return
	}
	p.fkUnknown = false
	if off {
		p.cur.Add("", "SET SESSION foreign_key_checks = 0")
	} else {
		p.cur.Add("", "SET SESSION foreign_key_checks = 1")
	}
	p.fkOff = off
}

// addRows plans the row changes of e, a rows event of table t.
func (p *Planner) addRows(e *event.Event, t *Table) error {
	if t == nil {
		return fmt.Errorf("rows event for %s.%s without its table definition", e.Table.Schema, e.Table.Name)
	}
	if t.sourceVersioned && t.versioned == nil {
		return p.plainError(t)
	}
	if t.versioned != nil {
		// A system-versioned table: its rows are planned so that the target versions them at
		// the source's times (versioned.go).
		if planned, err := p.addVersioned(e, t); planned || err != nil {
			return err
		}
	}
	v, err := p.viewOf(e, t)
	if err != nil {
		return err
	}
	if v != t {
		// Images that do not carry every column: written as they are, in order, after the
		// changes planned before them; a writeset from them would miss keys.
		if err := p.flushPending(); err != nil {
			return err
		}
		if p.cfg.Writesets {
			p.ws.barrier = true
		}
		t = v
	}
	p.rows += len(e.Rows)
	if p.cfg.Writesets && !p.ws.barrier {
		p.ws.AddRows(t, e.Rows)
	}
	if t.foldable {
		if err := p.fold.add(t, e.Kind, e.Rows, e.Bytes(), p.gtid); err != nil {
			return err
		}
		// With workers, a fold that filled is committed at the transaction's end (see event),
		// unless the transaction alone makes it twice as large.
		if p.fold.full() && (!p.cfg.Parallel || p.fold.overfull()) {
			// The row group may hold earlier changes of the same keys (a partial image's
			// rows): it goes first, as flushPending writes them.
			if err := p.flushGroup(); err != nil {
				return err
			}
			return p.fold.appendTo(p.cur, p.cfg.ExecMode, p.gtid)
		}
		return nil
	}
	fkOff := e.NoForeignKeyChecks || (p.cfg.FKOff != nil && p.cfg.FKOff(t.name))
	g := &p.group
	if g.t == t && g.kind == e.Kind && e.Kind != event.Update && g.fkOff == fkOff {
		g.rows = append(g.rows, e.Rows...)
		g.bytes += e.Bytes()
	} else {
		if err := p.flushGroup(); err != nil {
			return err
		}
		g.t, g.kind, g.fkOff, g.gtid0, g.bytes = t, e.Kind, fkOff, p.gtid, e.Bytes()
		g.rows = append(g.rows[:0], e.Rows...)
	}
	if e.Kind == event.Update || len(g.rows) >= 1000 || g.bytes >= maxFoldBytes {
		return p.flushGroup()
	}
	return nil
}

// flushPending writes every row change not yet in the batch: the row group and the fold.
func (p *Planner) flushPending() error {
	if err := p.flushGroup(); err != nil {
		return err
	}
	return p.fold.appendTo(p.cur, p.cfg.ExecMode, p.gtid)
}

// gtidSpan names the source transactions from gtid0 to the current one.
func (p *Planner) gtidSpan(gtid0 string) string {
	if gtid0 == "" || gtid0 == p.gtid {
		return p.gtid
	}
	return gtid0 + ".." + p.gtid
}

// flushGroup writes the pending row group into the batch.
func (p *Planner) flushGroup() error {
	g := &p.group
	if g.t == nil || len(g.rows) == 0 {
		g.t = nil
		return nil
	}
	p.foreignKeys(g.fkOff)
	var err error
	switch g.kind {
	case event.Insert:
		err = appendInsertMode(p.cur, g.t, g.rows, p.cfg.ExecMode, p.gtidSpan(g.gtid0))
	case event.Update:
		err = appendUpdate(p.cur, g.t, g.rows, p.cfg.ExecMode, p.gtid)
	case event.Delete:
		err = appendDelete(p.cur, g.t, g.rows, p.gtidSpan(g.gtid0))
	}
	clear(g.rows)
	g.rows = g.rows[:0]
	g.t = nil
	return err
}
