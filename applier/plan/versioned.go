package plan

import (
	"fmt"
	"time"

	"github.com/vplayer/vplayer/event"
	"github.com/vplayer/vplayer/sqlq"
	"github.com/vplayer/vplayer/tabledef"
)

// System-versioned tables (MariaDB's WITH SYSTEM VERSIONING, by timestamps). Every row has a
// period: the row start and row end columns (row_start and row_end, hidden, when the table does
// not name them). A current row ends at the largest TIMESTAMP; a history row ended earlier. The
// source versions its rows itself and logs every row it writes, the history rows included:
//
//   - an INSERT logs the new current row, started at the statement's time;
//   - an UPDATE logs an update of the current row (the after image started at the statement's
//     time T), then the insert of the history row it replaced (the before image, ended at T),
//     unless that row started at T or later (the server keeps no history row of no length);
//   - a DELETE logs an update of the current row that ends it at T: the row becomes history;
//   - DELETE HISTORY logs the deletes of history rows.
//
// A target session cannot write those rows as they are: an UPDATE or DELETE of a versioned table
// versions the row again, and names neither period column. The applier makes the target version
// its rows itself, at the source's times: each statement runs with the session's timestamp set
// to the source's T (SET STATEMENT timestamp=T FOR ...), so that the rows the target keeps are
// the rows the source logged:
//
//   - a current row is inserted at its start (a run of rows that start at the same instant in
//     one statement);
//   - an update of a current row is an UPDATE at the after image's start: the target keeps the
//     row it replaces as history, ended at T, exactly when the source did; the history row the
//     binlog then carries is that row, and is not written a second time;
//   - an update that ends a current row is a DELETE at its end;
//   - a history row the binlog carries otherwise (a source session with
//     system_versioning_insert_history) is inserted as it is, with
//     system_versioning_insert_history;
//   - the deletes of history rows are one DELETE HISTORY of every history row that ended by the
//     latest of them: DELETE HISTORY on the source deleted every history row that ended before
//     its bound, and the target's history is the source's.
//
// A change no statement can make (an update or physical delete of a row the binlog says is
// history, or of a current row without ending it) is an *InexactError. A source table without
// the period (its rows events lack the columns) is applied as any table is: the target versions
// its rows at its own times.

// period is the system-time period of a system-versioned target table: its columns in table.cols.
type period struct {
	start, end int // column indexes of the row start and row end columns
}

// versioning is what the planner knows of a system-versioned table: its period and the history
// rows the target kept itself in the open source transaction.
type versioning struct {
	start, end int
	// histCols are the columns a history row is inserted with: the writable ones, then the row
	// start and row end; histHead the INSERT that names them.
	histCols []int
	histHead []byte
	// expected holds the history rows the target kept itself in source transaction gtid, as
	// their tuples over histCols: the binlog carries each of them next, and it is not written.
	expected map[string]struct{}
	gtid     string
}

// maxExpected bounds the history rows versioning remembers: a source transaction's rows beyond it
// start afresh (a history row not recognised is then inserted, and is a duplicate-key error).
const maxExpected = 10000

// periodOf returns the period of t, a system-versioned table whose columns BuildTable set from
// its definition (a hidden period's appended), and marks the period's columns generated, so that
// only versioning's statements write them. A table versioned by transaction ids is an error
// naming what to do.
func periodOf(t *Table, dp *tabledef.Period) (*period, error) {
	p := &period{start: -1, end: -1}
	for i := range t.cols {
		switch t.cols[i].name {
		case dp.Start.Name:
			p.start = i
		case dp.End.Name:
			p.end = i
		}
	}
	if p.start < 0 || p.end < 0 {
		return nil, fmt.Errorf("%w: %s is system-versioned but its period's columns are not both listed (row start %q, row end %q)", ErrSchemaDrift, t.quoted, dp.Start.Name, dp.End.Name)
	}
	for _, i := range []int{p.start, p.end} {
		if t.cols[i].dataType != "timestamp" {
			return nil, fmt.Errorf("%w: %s is versioned by transaction ids (its %s is %s): MariaDB logs such a table's changes as statements, and its transaction ids are the source's own; "+
				"vplayer cannot replicate it exactly: leave the table out of the workflow, or version it by timestamps (TIMESTAMP(6) GENERATED ALWAYS AS ROW START/END) on both sides", ErrInexact, t.quoted, t.cols[i].name, t.cols[i].dataType)
		}
		t.cols[i].generated = true
	}
	return p, nil
}

// newVersioning returns what the planner needs of t, a system-versioned table with period p.
func newVersioning(t *Table, p *period) *versioning {
	v := &versioning{start: p.start, end: p.end}
	v.histCols = append(append(v.histCols, t.writable...), p.start, p.end)
	head := []byte("SET STATEMENT system_versioning_insert_history=1 FOR INSERT INTO " + t.quoted + " (")
	for n, i := range v.histCols {
		if n > 0 {
			head = append(head, ',')
		}
		head = append(head, sqlq.Ident(t.cols[i].name)...)
	}
	v.histHead = append(head, ") VALUES "...)
	return v
}

// expect notes that the target keeps the history row tuple itself, in source transaction gtid.
func (v *versioning) expect(gtid, tuple string) {
	if v.gtid != gtid || len(v.expected) >= maxExpected {
		clear(v.expected)
		v.gtid = gtid
	}
	if v.expected == nil {
		v.expected = map[string]struct{}{}
	}
	v.expected[tuple] = struct{}{}
}

// kept reports whether the target kept the history row tuple itself in source transaction gtid,
// and forgets it.
func (v *versioning) kept(gtid, tuple string) bool {
	if v.gtid != gtid {
		return false
	}
	if _, ok := v.expected[tuple]; !ok {
		return false
	}
	delete(v.expected, tuple)
	return true
}

// addVersioned plans e, a rows event of t, a system-versioned table. It returns false, planning
// nothing, when e's images lack the period (the source's table is not versioned): the rows then go
// the way of any table's, and the target versions them itself.
func (p *Planner) addVersioned(e *event.Event, t *Table) (bool, error) {
	v := t.versioned
	if e.Table.ColumnCount <= max(v.start, v.end) {
		return false, nil
	}
	if e.BeforeCols != nil || e.AfterCols != nil {
		return true, &InexactError{Table: t.quoted, GTID: p.gtid,
			What: "a partial row image (binlog_row_image MINIMAL or NOBLOB) of a system-versioned table",
			Fix:  "versioned rows are written from their whole images: log FULL row images for the table's sessions (binlog_row_image=FULL), then re-sync the table"}
	}
	if err := p.flushGroup(); err != nil {
		return true, err
	}
	p.foreignKeys(e.NoForeignKeyChecks || (p.cfg.FKOff != nil && p.cfg.FKOff(t.name)))
	p.rows += len(e.Rows)
	if p.cfg.Writesets && !p.ws.barrier {
		p.ws.AddRows(t, e.Rows)
		if e.Kind == event.Delete {
			p.ws.add(wkey{table: t.quoted}) // DELETE HISTORY removes rows by their end, whatever their key
		}
	}
	switch e.Kind {
	case event.Insert:
		return true, p.versionedInserts(t, e.Rows)
	case event.Update:
		return true, p.versionedUpdates(t, e.Rows)
	case event.Delete:
		return true, p.versionedDeletes(t, e.Rows)
	}
	return true, fmt.Errorf("rows event of kind %v", e.Kind)
}

// versionedInserts plans inserts of rows into t: current rows at their start, a run of rows that
// start at the same instant in one statement; history rows that the target kept itself left out,
// the others inserted as they are.
func (p *Planner) versionedInserts(t *Table, rows []event.Row) error {
	v := t.versioned
	var run, hist []event.Row
	var runStart string
	flush := func() error {
		if len(run) > 0 {
			at, err := unixStamp(runStart)
			if err != nil {
				return p.stampError(t, err)
			}
			if err := appendInsertMode(p.cur, at.prefixed(t), run, p.cfg.ExecMode, p.gtid); err != nil {
				return err
			}
			run = run[:0]
		}
		if len(hist) > 0 {
			if err := appendHistory(p.cur, t, hist); err != nil {
				return err
			}
			hist = hist[:0]
		}
		return nil
	}
	for _, r := range rows {
		end, err := stampOf(r.After, v.end)
		if err != nil {
			return p.stampError(t, err)
		}
		if isCurrent(end) {
			start, err := stampOf(r.After, v.start)
			if err != nil {
				return p.stampError(t, err)
			}
			if len(hist) > 0 || len(run) > 0 && start != runStart {
				if err := flush(); err != nil {
					return err
				}
			}
			run, runStart = append(run, r), start
			continue
		}
		tuple, err := appendTuple(nil, t, v.histCols, r.After)
		if err != nil {
			return err
		}
		if v.kept(p.gtid, string(tuple)) {
			continue
		}
		if len(run) > 0 {
			if err := flush(); err != nil {
				return err
			}
		}
		hist = append(hist, r)
	}
	return flush()
}

// versionedUpdates plans updates of rows of t: an update of a current row as an UPDATE at the
// after image's start, an update that ends a current row as a DELETE at its end (a run of rows
// that end at the same instant in one statement).
func (p *Planner) versionedUpdates(t *Table, rows []event.Row) error {
	v := t.versioned
	var ended []event.Row
	var endedAt string
	flush := func() error {
		if len(ended) == 0 {
			return nil
		}
		at, err := unixStamp(endedAt)
		if err != nil {
			return p.stampError(t, err)
		}
		err = appendVersionedDelete(p.cur, t, at, ended, p.gtid)
		ended = ended[:0]
		return err
	}
	for _, r := range rows {
		before, err := stampOf(r.Before, v.end)
		if err != nil {
			return p.stampError(t, err)
		}
		if !isCurrent(before) {
			return p.versionedInexact(t, "an update of a history row (its row end is "+before+")")
		}
		end, err := stampOf(r.After, v.end)
		if err != nil {
			return p.stampError(t, err)
		}
		if !isCurrent(end) {
			// The row ends at end: a DELETE then, of a row that stays as it was.
			same, err := sameBut(t, r.Before, r.After, v.end)
			if err != nil {
				return err
			}
			if !same {
				return p.versionedInexact(t, "an update that ends a current row and changes it too")
			}
			if len(ended) > 0 && end != endedAt {
				if err := flush(); err != nil {
					return err
				}
			}
			ended, endedAt = append(ended, r), end
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		start, err := stampOf(r.After, v.start)
		if err != nil {
			return p.stampError(t, err)
		}
		oldStart, err := stampOf(r.Before, v.start)
		if err != nil {
			return p.stampError(t, err)
		}
		at, err := unixStamp(start)
		if err != nil {
			return p.stampError(t, err)
		}
		if err := appendVersionedUpdate(p.cur, t, at, r, p.cfg.ExecMode, p.gtid); err != nil {
			return err
		}
		if start > oldStart {
			// The target keeps the row the update replaced, ended at start, as the source did.
			h := append([]any(nil), r.Before...)
			h[v.end] = start
			tuple, err := appendTuple(nil, t, v.histCols, h)
			if err != nil {
				return err
			}
			v.expect(p.gtid, string(tuple))
		}
	}
	return flush()
}

// versionedDeletes plans deletes of history rows of t: one DELETE HISTORY of every history row
// that ended by the latest of them.
func (p *Planner) versionedDeletes(t *Table, rows []event.Row) error {
	v := t.versioned
	var latest string
	for _, r := range rows {
		end, err := stampOf(r.Before, v.end)
		if err != nil {
			return p.stampError(t, err)
		}
		if isCurrent(end) {
			return p.versionedInexact(t, "a delete of a current row that keeps no history of it")
		}
		latest = max(latest, end)
	}
	if latest == "" {
		return nil
	}
	bound, err := time.Parse(stampLayout, latest)
	if err != nil {
		return p.stampError(t, err)
	}
	p.cur.Add("DELETE HISTORY "+t.quoted, "DELETE HISTORY FROM "+t.quoted+" BEFORE SYSTEM_TIME TIMESTAMP'"+bound.Add(time.Microsecond).Format(stampLayout)+"'")
	return nil
}

// sameBut reports whether images a and b of t agree on every column but skip, as the applier
// writes them.
func sameBut(t *Table, a, b []any, skip int) (bool, error) {
	for i := range t.cols {
		if i == skip || i >= len(a) || i >= len(b) {
			continue
		}
		x, err := appendValue(nil, &t.cols[i], a[i])
		if err != nil {
			return false, err
		}
		y, err := appendValue(nil, &t.cols[i], b[i])
		if err != nil {
			return false, err
		}
		if string(x) != string(y) {
			return false, nil
		}
	}
	return true, nil
}

// stampError is the error of a period value that stampOf or unixStamp cannot read.
func (p *Planner) stampError(t *Table, err error) error {
	return p.versionedInexact(t, "a period value the applier cannot read: "+err.Error())
}

// versionedInexact is the error of a change to t that no statement on the target can make.
func (p *Planner) versionedInexact(t *Table, what string) error {
	return &InexactError{Table: t.quoted, GTID: p.gtid, What: what + " in a system-versioned table",
		Fix: "no statement on the target makes that change; make the table's history equal on both sides (or leave the table out of the workflow), then re-sync it"}
}
