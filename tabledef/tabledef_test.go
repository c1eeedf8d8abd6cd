package tabledef

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func col(name, typ string, notNull bool) Column {
	c := NewColumn(name, typ, "")
	c.NotNull = notNull
	return c
}

func generatedCol(name string, notNull bool) Column {
	c := col(name, "int", notNull)
	c.Generated = true
	return c
}

func pk(cols ...string) Index { return Index{Name: "PRIMARY", Columns: cols, Primary: true} }

func uk(name string, cols ...string) Index { return Index{Name: name, Columns: cols} }

// TestTable_Identity: the one rule every component identifies rows by. Before the applier, the
// copier and vdiff shared it, the copier and vdiff took a unique key over a generated column (as
// MySQL allows NOT NULL ones, and as a named period's row end is) that the applier passed over.
func TestTable_Identity(t *testing.T) {
	tests := []struct {
		name    string
		cols    []Column
		uniques []Index
		n       int // shared columns; 0: all
		want    string
	}{
		{name: "primary key", cols: []Column{col("id", "int", true), col("u", "int", true)},
			uniques: []Index{pk("id"), uk("u", "u")}, want: "PRIMARY(id)"},
		{name: "no primary key: the first unique key over NOT NULL columns", cols: []Column{col("a", "int", false), col("b", "int", true)},
			uniques: []Index{uk("a", "a"), uk("b", "b")}, want: "b(b)"},
		{name: "a unique key over a generated column is no row identity", cols: []Column{col("a", "int", true), generatedCol("g", true)},
			uniques: []Index{uk("by_g", "g"), uk("z", "a")}, want: "z(a)"},
		{name: "a primary key over a generated column neither", cols: []Column{col("a", "int", true), generatedCol("g", true)},
			uniques: []Index{pk("a", "g")}, want: "none"},
		{name: "a key part that is an expression", cols: []Column{col("a", "int", true)},
			uniques: []Index{uk("f", "a", ""), uk("g", "a")}, want: "g(a)"},
		{name: "a key column the table lacks", cols: []Column{col("a", "int", true)},
			uniques: []Index{pk("gone")}, want: "none"},
		{name: "a key beyond the shared columns", cols: []Column{col("a", "int", true), col("added", "int", true)},
			uniques: []Index{pk("added"), uk("a", "a")}, n: 1, want: "a(a)"},
		{name: "no key", cols: []Column{col("a", "int", false)}, want: "none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := &Table{Schema: "s", Name: "t", Columns: tt.cols, Uniques: tt.uniques}
			n := tt.n
			if n == 0 {
				n = len(tt.cols)
			}
			id := tb.Identity(n)
			got := "none"
			if id.Kind != KeyNone {
				got = id.Index + "(" + strings.Join(Names(tb.KeyColumns(id)), ",") + ")"
			}
			if got != tt.want {
				t.Errorf("Identity(%d) = %s, want %s", n, got, tt.want)
			}
			if want := map[bool]KeyKind{true: KeyPrimary, false: KeyUnique}[id.Index == "PRIMARY"]; id.Kind != KeyNone && id.Kind != want {
				t.Errorf("Identity(%d).Kind = %d, want %d", n, id.Kind, want)
			}
		})
	}
}

func TestTable_SetPeriod(t *testing.T) {
	tests := []struct {
		name       string
		cols       []Column
		uniques    []Index
		start, end string
		wantCols   string // AllColumns
		wantKeys   string // the unique keys' columns, ";" between keys
		wantErr    error
	}{
		{name: "hidden", cols: []Column{col("id", "int", true), col("v", "int", false)}, uniques: []Index{pk("id")},
			wantCols: "id,v,row_start,row_end", wantKeys: "id"},
		{name: "named, the row end in every unique key",
			cols:    []Column{col("id", "int", true), col("s", "timestamp", true), col("e", "timestamp", true), col("u", "int", true)},
			uniques: []Index{pk("id", "e"), uk("u", "u", "e")}, start: "s", end: "e",
			wantCols: "id,s,e,u", wantKeys: "id;u"},
		{name: "one column listed", cols: []Column{col("id", "int", true), col("s", "timestamp", true)}, uniques: []Index{pk("id")},
			start: "s", wantErr: ErrPeriod},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := &Table{Schema: "s", Name: "t", Columns: tt.cols, Uniques: tt.uniques}
			err := tb.SetPeriod(tt.start, tt.end)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("SetPeriod() = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(Names(tb.AllColumns()), ","); got != tt.wantCols {
				t.Errorf("AllColumns() = %s, want %s", got, tt.wantCols)
			}
			var keys []string
			for _, ix := range tb.Uniques {
				keys = append(keys, strings.Join(ix.Columns, ","))
			}
			if got := strings.Join(keys, ";"); got != tt.wantKeys {
				t.Errorf("unique keys = %s, want %s", got, tt.wantKeys)
			}
			if !tb.Period.Start.Generated || !tb.Period.End.Generated || !tb.Period.ByTimestamp() {
				t.Errorf("period = %+v, want generated timestamps", tb.Period)
			}
			for _, c := range tb.AllColumns() {
				if generated := c.Name == tb.Period.Start.Name || c.Name == tb.Period.End.Name; c.Generated != generated {
					t.Errorf("column %s generated = %v, want %v", c.Name, c.Generated, generated)
				}
			}
			if id := tb.Identity(len(tb.Columns)); id.Kind != KeyPrimary || !slices.Equal(Names(tb.KeyColumns(id)), []string{"id"}) {
				t.Errorf("Identity() = %+v, want the primary key (id)", id)
			}
		})
	}
}

func TestPeriod_Columns(t *testing.T) {
	cols := []Column{NewColumn("id", "int", ""), NewColumn("v", "varchar", "utf8mb4")}
	hidden := &Period{Start: NewColumn("row_start", "timestamp", ""), End: NewColumn("row_end", "timestamp", ""), Hidden: true}
	named := &Period{Start: NewColumn("s", "timestamp", ""), End: NewColumn("e", "timestamp", "")}
	tests := []struct {
		name string
		p    *Period
		want string
		from string
	}{
		{"not versioned", nil, "id,v", "`d`.`t`"},
		{"hidden period", hidden, "id,v,row_start,row_end", "`d`.`t` FOR SYSTEM_TIME ALL"},
		{"named period, listed already", named, "id,v", "`d`.`t` FOR SYSTEM_TIME ALL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(Names(tt.p.Columns(cols)), ","); got != tt.want {
				t.Errorf("Columns() = %s, want %s", got, tt.want)
			}
			if got := tt.p.AllRows("`d`.`t`"); got != tt.from {
				t.Errorf("AllRows() = %s, want %s", got, tt.from)
			}
		})
	}
	if got := hidden.Columns(cols); len(cols) != 2 || &got[0] == &cols[0] {
		t.Errorf("Columns() changed or shared its argument")
	}
	if !hidden.ByTimestamp() || (&Period{Start: NewColumn("s", "bigint", ""), End: NewColumn("e", "bigint", "")}).ByTimestamp() {
		t.Errorf("ByTimestamp() wrong")
	}
}

func TestSharedColumns(t *testing.T) {
	cols := func(names ...string) []Column {
		out := make([]Column, len(names))
		for i, n := range names {
			out[i] = NewColumn(n, "int", "")
		}
		return out
	}
	tests := []struct {
		name     string
		src, dst []Column
		n        int
		differ   string
	}{
		{"same", cols("id", "v"), cols("id", "v"), 2, ""},
		{"target has more", cols("id", "v"), cols("id", "v", "added"), 2, ""},
		{"source has more", cols("id", "v", "extra"), cols("id", "v"), 2, ""},
		{"names compare without case", cols("id", "V"), cols("ID", "v", "added"), 2, ""},
		{"reordered", cols("id", "a", "b"), cols("id", "b", "a"), 3, "column 2 is a on the source but b on the target"},
		{"renamed before a trailing column", cols("id", "a"), cols("id", "x", "a"), 2, "column 2 is a on the source but x on the target"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, differ := SharedColumns(tt.src, tt.dst)
			if n != tt.n || differ != tt.differ {
				t.Errorf("SharedColumns()=%d, %q; want %d, %q", n, differ, tt.n, tt.differ)
			}
		})
	}
}

func TestExtraFlags(t *testing.T) {
	tests := []struct {
		extra                string
		generated, invisible bool
	}{
		{"", false, false},
		{"auto_increment", false, false},
		{"VIRTUAL GENERATED", true, false},
		{"STORED GENERATED", true, false},
		{"PERSISTENT", true, false},
		{"DEFAULT_GENERATED", false, false}, // MySQL: a default, not a generated column
		{"DEFAULT_GENERATED on update CURRENT_TIMESTAMP", false, false},
		{"INVISIBLE", false, true},
		{"VIRTUAL GENERATED INVISIBLE", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.extra, func(t *testing.T) {
			g, i := extraFlags(tt.extra)
			if g != tt.generated || i != tt.invisible {
				t.Errorf("extraFlags(%q) = %v, %v; want %v, %v", tt.extra, g, i, tt.generated, tt.invisible)
			}
		})
	}
}
