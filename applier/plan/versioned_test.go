package plan

import (
	"errors"
	"strings"
	"testing"

	"github.com/vplayer/vplayer/event"
	"github.com/vplayer/vplayer/tabledef"
)

// versionedTable is `s`.`t` (id INT PRIMARY KEY, v VARCHAR(10)) WITH SYSTEM VERSIONING, its period
// hidden, as loadTable builds it.
func versionedTable(t *testing.T) *Table {
	t.Helper()
	d := defOf("s", "t", []Column{{name: "id", dataType: "int", notNull: true}, {name: "v", dataType: "varchar"}}, pk("id"))
	if err := d.SetPeriod("", ""); err != nil {
		t.Fatal(err)
	}
	tb, err := BuildTable(d)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

const (
	t0   = "2026-01-02 03:04:05.000001"
	t1   = "2026-01-02 03:04:06.250000"
	t2   = "2026-01-02 03:04:07.000000"
	tmax = maxTimestamp32
)

func vrow(id int32, v, start, end string) []any { return []any{id, v, start, end} }

// TestBuildTable_period: a system-versioned table's period columns, generated, and its row
// identity without the row end; a period the applier cannot write is a terminal error.
func TestBuildTable_period(t *testing.T) {
	tests := []struct {
		name       string
		cols       []Column
		uniques    []string // the primary key's columns
		start, end string
		oneListed  bool // information_schema lists the row start only
		wantCols   string
		wantErr    error
	}{
		{
			name:     "hidden",
			cols:     []Column{{name: "id", dataType: "int", notNull: true}, {name: "v", dataType: "int"}},
			uniques:  []string{"id"},
			wantCols: "id,v,row_start,row_end",
		},
		{
			name:  "named, the row end in the primary key",
			cols:  []Column{{name: "id", dataType: "int", notNull: true}, {name: "s", dataType: "timestamp"}, {name: "e", dataType: "timestamp"}, {name: "v", dataType: "int"}},
			start: "s", end: "e", uniques: []string{"id", "e"},
			wantCols: "id,s,e,v",
		},
		{
			name:  "transaction ids",
			cols:  []Column{{name: "id", dataType: "int", notNull: true}, {name: "s", dataType: "bigint"}, {name: "e", dataType: "bigint"}},
			start: "s", end: "e", uniques: []string{"id", "e"},
			wantErr: ErrInexact,
		},
		{
			name:  "one column listed",
			cols:  []Column{{name: "id", dataType: "int", notNull: true}, {name: "s", dataType: "timestamp"}},
			start: "s", oneListed: true, uniques: []string{"id"},
			wantErr: ErrSchemaDrift,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := defOf("s", "t", tt.cols, pk(tt.uniques...))
			if tt.oneListed {
				d.Period = &tabledef.Period{Start: d.Columns[d.ColumnIndex(tt.start)]}
			} else if err := d.SetPeriod(tt.start, tt.end); err != nil {
				t.Fatal(err)
			}
			tb, err := BuildTable(d)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("buildTable() = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(tb.columnNames(), ","); got != tt.wantCols {
				t.Errorf("columns = %s, want %s", got, tt.wantCols)
			}
			v := tb.versioned
			if v == nil || tb.foldable {
				t.Fatalf("versioned = %v, foldable = %v: want versioning, no folding", v, tb.foldable)
			}
			if !tb.cols[v.start].generated || !tb.cols[v.end].generated {
				t.Errorf("period columns not marked generated: %+v", tb.cols)
			}
			if got, want := tb.Identity(), "primary key (id)"; got != want {
				t.Errorf("identity() = %q, want %q", got, want)
			}
		})
	}
}

// TestPlanner_versioned: a versioned table's row events become statements that make the target
// version its rows at the source's times; the history rows the target keeps itself are not
// written again.
func TestPlanner_versioned(t *testing.T) {
	ev := func(kind event.RowKind, rows ...event.Row) *event.Event {
		return &event.Event{Type: event.Rows, Table: &event.Table{Schema: "src", Name: "t", ColumnCount: 4}, Kind: kind, Rows: rows}
	}
	tests := []struct {
		name    string
		mode    string
		events  []*event.Event
		want    string
		wantErr error
	}{
		{
			name: "inserts, a statement per start",
			events: []*event.Event{ev(event.Insert,
				event.Row{After: vrow(1, "a", t0, tmax)}, event.Row{After: vrow(2, "b", t0, tmax)}, event.Row{After: vrow(3, "c", t1, tmax)})},
			want: "SET STATEMENT timestamp=1767323045.000001 FOR INSERT INTO `s`.`t` (`id`,`v`) VALUES (1,'a'),(2,'b');" +
				"SET STATEMENT timestamp=1767323046.250000 FOR INSERT INTO `s`.`t` (`id`,`v`) VALUES (3,'c')",
		},
		{
			name: "update, and the history row it made",
			events: []*event.Event{
				ev(event.Update, event.Row{Before: vrow(1, "a", t0, tmax), After: vrow(1, "b", t1, tmax)}),
				ev(event.Insert, event.Row{After: vrow(1, "a", t0, t1)}),
			},
			want: "SET STATEMENT timestamp=1767323046.250000 FOR UPDATE `s`.`t` SET `id`=1,`v`='b' WHERE `id`=1",
		},
		{
			name: "update at the row's own start: no history row, one inserted later is written",
			events: []*event.Event{
				ev(event.Update, event.Row{Before: vrow(1, "a", t1, tmax), After: vrow(1, "b", t1, tmax)}),
				ev(event.Insert, event.Row{After: vrow(1, "a", t0, t1)}),
			},
			want: "SET STATEMENT timestamp=1767323046.250000 FOR UPDATE `s`.`t` SET `id`=1,`v`='b' WHERE `id`=1;" +
				"SET STATEMENT system_versioning_insert_history=1 FOR INSERT INTO `s`.`t` (`id`,`v`,`row_start`,`row_end`) VALUES (1,'a','" + t0 + "','" + t1 + "')",
		},
		{
			name: "deletes: rows ended, a statement per end",
			events: []*event.Event{ev(event.Update,
				event.Row{Before: vrow(1, "a", t0, tmax), After: vrow(1, "a", t0, t2)},
				event.Row{Before: vrow(2, "b", t1, tmax), After: vrow(2, "b", t1, t2)},
				event.Row{Before: vrow(3, "c", t1, tmax), After: vrow(3, "c", t1, t1)})},
			want: "SET STATEMENT timestamp=1767323047.000000 FOR DELETE FROM `s`.`t` WHERE `id` IN (1,2);" +
				"SET STATEMENT timestamp=1767323046.250000 FOR DELETE FROM `s`.`t` WHERE `id`=3",
		},
		{
			name: "replace: the row ended, a new one inserted",
			events: []*event.Event{
				ev(event.Update, event.Row{Before: vrow(1, "a", t0, tmax), After: vrow(1, "a", t0, t1)}),
				ev(event.Insert, event.Row{After: vrow(1, "b", t1, tmax)}),
			},
			want: "SET STATEMENT timestamp=1767323046.250000 FOR DELETE FROM `s`.`t` WHERE `id`=1;" +
				"SET STATEMENT timestamp=1767323046.250000 FOR INSERT INTO `s`.`t` (`id`,`v`) VALUES (1,'b')",
		},
		{
			name:   "history rows inserted as they are",
			events: []*event.Event{ev(event.Insert, event.Row{After: vrow(7, "x", t0, t1)}, event.Row{After: vrow(7, "y", t1, t2)})},
			want: "SET STATEMENT system_versioning_insert_history=1 FOR INSERT INTO `s`.`t` (`id`,`v`,`row_start`,`row_end`) VALUES " +
				"(7,'x','" + t0 + "','" + t1 + "'),(7,'y','" + t1 + "','" + t2 + "')",
		},
		{
			name:   "delete history",
			events: []*event.Event{ev(event.Delete, event.Row{Before: vrow(1, "a", t0, t2)}, event.Row{Before: vrow(2, "b", t0, t1)})},
			want:   "DELETE HISTORY FROM `s`.`t` BEFORE SYSTEM_TIME TIMESTAMP'2026-01-02 03:04:07.000001'",
		},
		{
			name: "idempotent update",
			mode: ExecModeIdempotent,
			events: []*event.Event{
				ev(event.Update, event.Row{Before: vrow(1, "a", t0, tmax), After: vrow(1, "b", t1, tmax)}),
			},
			want: "SET STATEMENT timestamp=1767323046.250000 FOR UPDATE `s`.`t` SET `id`=1,`v`='b' WHERE `id`=1;" +
				"SET STATEMENT timestamp=1767323046.250000 FOR INSERT INTO `s`.`t` (`id`,`v`) SELECT 1,'b' FROM DUAL WHERE ROW_COUNT() = 0 ON DUPLICATE KEY UPDATE `v`=VALUES(`v`)",
		},
		{
			name:    "update of a history row",
			events:  []*event.Event{ev(event.Update, event.Row{Before: vrow(1, "a", t0, t1), After: vrow(1, "b", t0, t1)})},
			wantErr: ErrInexact,
		},
		{
			name:    "delete of a current row",
			events:  []*event.Event{ev(event.Delete, event.Row{Before: vrow(1, "a", t0, tmax)})},
			wantErr: ErrInexact,
		},
		{
			name:    "a row ended and changed",
			events:  []*event.Event{ev(event.Update, event.Row{Before: vrow(1, "a", t0, tmax), After: vrow(1, "b", t0, t1)})},
			wantErr: ErrInexact,
		},
		{
			name: "partial image",
			events: []*event.Event{{Type: event.Rows, Table: &event.Table{Schema: "src", Name: "t", ColumnCount: 4}, Kind: event.Update,
				BeforeCols: event.Columns{0x09}, AfterCols: event.Columns{0x0e},
				Rows: []event.Row{{Before: vrow(1, "", "", tmax), After: []any{nil, "b", t1, tmax}}}}},
			wantErr: ErrInexact,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := versionedTable(t)
			p := New(Config{ExecMode: tt.mode}, "")
			p.gtid = "0-1-5"
			var err error
			for _, e := range tt.events {
				var planned bool
				if planned, err = p.addVersioned(e, tb); err != nil {
					break
				}
				if !planned {
					t.Fatalf("addVersioned(%v) planned nothing", e.Kind)
				}
			}
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("addVersioned() = %v, want %v", err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), "`s`.`t`") || !strings.Contains(err.Error(), "0-1-5") {
					t.Errorf("error %q does not name the table and the transaction", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(p.cur.buf); got != tt.want {
				t.Errorf("statements:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestPlanner_versionedPlainSource: the rows of a source table without the period go the way of
// any table's (the target versions them itself), and a history row the target kept in another
// source transaction is written.
func TestPlanner_versionedPlainSource(t *testing.T) {
	tb := versionedTable(t)
	p := New(Config{}, "")
	plain := &event.Event{Type: event.Rows, Table: &event.Table{Schema: "src", Name: "t", ColumnCount: 2}, Kind: event.Insert,
		Rows: []event.Row{{After: []any{int32(1), "a"}}}}
	if planned, err := p.addVersioned(plain, tb); planned || err != nil {
		t.Fatalf("addVersioned(a row without the period) = %v, %v, want false, nil", planned, err)
	}
	ev := func(kind event.RowKind, r event.Row) *event.Event {
		return &event.Event{Type: event.Rows, Table: &event.Table{Schema: "src", Name: "t", ColumnCount: 4}, Kind: kind, Rows: []event.Row{r}}
	}
	p.gtid = "0-1-1"
	if _, err := p.addVersioned(ev(event.Update, event.Row{Before: vrow(1, "a", t0, tmax), After: vrow(1, "b", t1, tmax)}), tb); err != nil {
		t.Fatal(err)
	}
	p.gtid = "0-1-2"
	if _, err := p.addVersioned(ev(event.Insert, event.Row{After: vrow(1, "a", t0, t1)}), tb); err != nil {
		t.Fatal(err)
	}
	if got, want := string(p.cur.buf), "FOR INSERT INTO `s`.`t` (`id`,`v`,`row_start`,`row_end`) VALUES (1,"; !strings.Contains(got, want) {
		t.Errorf("statements %s lack the history row's insert %s", got, want)
	}
}

// TestPlanner_plainTargetOfVersionedSource: every rows event of a plain target table whose
// source table is system-versioned, each kind and in each mode, is an *InexactError naming the
// table, the source transaction and the fix, and plans nothing.
func TestPlanner_plainTargetOfVersionedSource(t *testing.T) {
	rows := map[event.RowKind]event.Row{
		event.Insert: {After: vrow(1, "a", t0, tmax)},
		event.Update: {Before: vrow(1, "a", t0, tmax), After: vrow(1, "b", t1, tmax)},
		event.Delete: {Before: vrow(1, "a", t0, t1)},
	}
	for _, mode := range []string{ExecModeStrict, ExecModeIdempotent} {
		for kind, r := range rows {
			tb, err := BuildTable(defOf("s", "t", []Column{{name: "id", dataType: "int", notNull: true}, {name: "v", dataType: "varchar"}}, pk("id")))
			if err != nil {
				t.Fatal(err)
			}
			tb.SetSourceVersioned()
			p := New(Config{ExecMode: mode}, "")
			p.gtid = "0-1-5"
			e := &event.Event{Type: event.Rows, Table: &event.Table{Schema: "src", Name: "t", ColumnCount: 4}, Kind: kind, Rows: []event.Row{r}}
			err = p.addRows(e, tb)
			var ie *InexactError
			if !errors.As(err, &ie) {
				t.Fatalf("%s, %v: addRows() = %v, want an *InexactError", mode, kind, err)
			}
			for _, w := range []string{"`s`.`t`", "0-1-5", "system-versioned (WITH SYSTEM VERSIONING) on the source but not on the target", "--tables"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s, %v: error %q lacks %q", mode, kind, err, w)
				}
			}
			if err := p.flushPending(); err != nil || len(p.cur.buf) != 0 {
				t.Errorf("%s, %v: planned %q (%v), want nothing", mode, kind, p.cur.buf, err)
			}
		}
	}
	// A target table versioned like the source's is planned as versioned.go says.
	tb := versionedTable(t)
	tb.SetSourceVersioned()
	p := New(Config{}, "")
	if err := p.addRows(&event.Event{Type: event.Rows, Table: &event.Table{Schema: "src", Name: "t", ColumnCount: 4}, Kind: event.Insert, Rows: []event.Row{rows[event.Insert]}}, tb); err != nil {
		t.Errorf("addRows() on a versioned target = %v", err)
	}
}

func TestUnixStamp(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"1970-01-01 00:00:01.000000", "1.000000"},
		{maxTimestamp32, "2147483647.999999"},
		{maxTimestamp64, "4294967295.999999"},
		{"2026-12-05 00:27:14.455231", "1796430434.455231"},
	} {
		got, err := unixStamp(tt.in)
		if err != nil || string(got) != tt.want {
			t.Errorf("unixStamp(%q) = %q, %v, want %q", tt.in, got, err, tt.want)
		}
	}
	if _, err := unixStamp("2026-12-05 00:27:14"); err == nil {
		t.Errorf("unixStamp without microseconds: no error")
	}
}
