package binlog

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vplayer/vplayer/event"
)

// translateAll feeds evs to tr and returns every event it yields, in order.
func translateAll(t *testing.T, tr *translator, evs []*replication.BinlogEvent) []*event.Event {
	t.Helper()
	var out []*event.Event
	for _, ev := range evs {
		got, err := tr.translate(ev)
		if err != nil {
			t.Fatalf("translate(%T at %d): %v", ev.Event, ev.Header.LogPos, err)
		}
		out = append(out, got...) // got is reused by the next call
	}
	return out
}

func emptyMariaDB(t testing.TB) Position {
	t.Helper()
	set, err := mysql.ParseMariadbGTIDSet("")
	if err != nil {
		t.Fatal(err)
	}
	return Position{Flavor: FlavorMariaDB, GTID: set}
}

func mustFilter(t testing.TB, db string, tables ...string) *Filter {
	t.Helper()
	f, err := NewFilter(db, tables)
	if err != nil {
		t.Fatalf("NewFilter(%q, %q): %v", db, tables, err)
	}
	return f
}

// summary renders e on one line, with what the sequence tests compare: type, position, table,
// kind, columns and row count, DDL schema and query.
func summary(e *event.Event) string {
	switch e.Type {
	case event.Rows:
		tbl := "<nil table>"
		if e.Table != nil {
			tbl = fmt.Sprintf("%s.%s(%s)", e.Table.Schema, e.Table.Name, strings.Join(e.Table.ColumnNames, ","))
		}
		return fmt.Sprintf("ROWS %v %s %d", e.Kind, tbl, len(e.Rows))
	case event.Commit, event.Skip:
		return fmt.Sprintf("%v %s", e.Type, e.Pos)
	case event.DDL:
		return fmt.Sprintf("DDL %s %s %s", e.Pos, e.Schema, e.Query)
	}
	return e.Type.String()
}

func summaries(evs []*event.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = summary(e)
	}
	return out
}

// step is one expected event: its type, the capture step whose position it carries (Commit,
// DDL, Skip) and, for Rows and DDL, the rest of its summary.
type step struct {
	typ    event.Type
	group  int // 1-based index in the capture's script
	detail string
}

// render returns the summary s's event should have, with pos giving the position after a group.
func (s step) render(pos func(group int) string) string {
	switch s.typ {
	case event.Rows:
		return "ROWS " + s.detail
	case event.Commit, event.Skip:
		return fmt.Sprintf("%v %s", s.typ, pos(s.group))
	case event.DDL:
		return fmt.Sprintf("DDL %s %s", pos(s.group), s.detail)
	}
	return s.typ.String()
}

func renderSteps(steps []step, pos func(group int) string) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.render(pos)
	}
	return out
}

const (
	customers3 = "shop.customers(id,name,balance)"
	customers4 = "shop.customers(id,name,balance,email)"
	orders     = "shop.orders(id,customer_id,note)"
)

// basicSteps is what the whole capture yields with a filter on database shop and every table.
// The bulk INSERT's three rows events hold 102, 102 and 96 rows: events.tsv gives their sizes
// as 8193, 8193 and 7713 bytes, which are 33 bytes of header, post-header, column bitmap and
// checksum plus 80 bytes a row (null bitmap 1, two INTs 8, note 2+69).
var basicSteps = []step{
	// MariaDB logs CREATE DATABASE with the new database as its schema, but it changes no
	// table: a Skip (see TestTranslator_DDLCapture).
	{typ: event.Skip, group: 1},
	{typ: event.Skip, group: 2},
	{typ: event.DDL, group: 3, detail: "shop " + basicScript[2].stmts[1]},
	{typ: event.DDL, group: 4, detail: "shop " + basicScript[3].stmts[0]},
	{typ: event.Skip, group: 5},
	{typ: event.Begin},
	{typ: event.Rows, detail: "INSERT " + customers3 + " 3"},
	{typ: event.Commit, group: 6},
	{typ: event.Begin},
	{typ: event.Rows, detail: "UPDATE " + customers3 + " 1"},
	{typ: event.Commit, group: 7},
	{typ: event.Begin},
	{typ: event.Rows, detail: "DELETE " + customers3 + " 1"},
	{typ: event.Commit, group: 8},
	{typ: event.Skip, group: 9},
	{typ: event.DDL, group: 10, detail: "shop ALTER TABLE customers ADD COLUMN email VARCHAR(64) NULL"},
	{typ: event.Begin},
	{typ: event.Rows, detail: "INSERT " + orders + " 102"},
	{typ: event.Rows, detail: "INSERT " + orders + " 102"},
	{typ: event.Rows, detail: "INSERT " + orders + " 96"},
	{typ: event.Commit, group: 11},
	{typ: event.Begin},
	{typ: event.Rows, detail: "INSERT " + customers4 + " 1"},
	{typ: event.Rows, detail: "UPDATE " + orders + " 2"},
	{typ: event.Rows, detail: "DELETE " + orders + " 1"},
	{typ: event.Commit, group: 12},
}

// renderValue renders a decoded column value with its Go type: the applier depends on both.
func renderValue(v any) string {
	if v == nil {
		return "NULL"
	}
	return fmt.Sprintf("%T(%v)", v, v)
}

func renderImage(vals []any) string {
	if vals == nil {
		return "nil"
	}
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = renderValue(v)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// rowValues renders every row of every Rows event of evs, in order, as "before -> after".
func rowValues(evs []*event.Event) []string {
	var out []string
	for _, e := range evs {
		if e.Type != event.Rows {
			continue
		}
		for _, r := range e.Rows {
			out = append(out, fmt.Sprintf("%v %s: %s -> %s", e.Kind, e.Table.Name, renderImage(r.Before), renderImage(r.After)))
		}
	}
	return out
}

func bulkImage(i int) string {
	return fmt.Sprintf("[int32(%d) int32(%d) string(%s)]", i, bulkCustomer(i), bulkNote(i))
}

// basicValues is every row image of the capture's shop tables, in binlog order.
func basicValues() []string {
	out := []string{
		"INSERT customers: nil -> [int32(1) string(ann) decimal.Decimal(10.5)]",
		"INSERT customers: nil -> [int32(2) string(bob) decimal.Decimal(20)]",
		"INSERT customers: nil -> [int32(3) string(cat) NULL]",
		"UPDATE customers: [int32(1) string(ann) decimal.Decimal(10.5)] -> [int32(10) string(ann) decimal.Decimal(10.5)]",
		"DELETE customers: [int32(2) string(bob) decimal.Decimal(20)] -> nil",
	}
	for i := 1; i <= bulkRows; i++ {
		out = append(out, "INSERT orders: nil -> "+bulkImage(i))
	}
	return append(out,
		"INSERT customers: nil -> [int32(4) string(dan) decimal.Decimal(1.25) string(dan@example.com)]",
		fmt.Sprintf("UPDATE orders: %s -> [int32(1) int32(%d) string(changed)]", bulkImage(1), bulkCustomer(1)),
		fmt.Sprintf("UPDATE orders: %s -> [int32(2) int32(%d) string(changed)]", bulkImage(2), bulkCustomer(2)),
		fmt.Sprintf("DELETE orders: %s -> nil", bulkImage(bulkRows)),
	)
}

// diffLines reports the first difference between got and want, and their lengths.
func diffLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Errorf("%s[%d] = %q, want %q", what, i, got[i], want[i])
			break
		}
	}
	if len(got) != len(want) {
		t.Errorf("%s: got %d, want %d\ngot:\n\t%s\nwant:\n\t%s", what, len(got), len(want),
			strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// checkFields checks that exactly the fields e's type names are set (event.Event's contract).
func checkFields(t *testing.T, i int, e *event.Event) {
	t.Helper()
	hasPos := e.Type == event.Commit || e.Type == event.DDL || e.Type == event.Skip
	if got, want := e.Pos != "", hasPos; got != want {
		t.Errorf("event %d (%s): Pos set = %v, want %v", i, summary(e), got, want)
	}
	isRows := e.Type == event.Rows
	if got, want := e.Table != nil && e.Kind != 0 && len(e.Rows) > 0, isRows; got != want {
		t.Errorf("event %d (%s): Table, Kind and Rows set = %v, want %v", i, summary(e), got, want)
	}
	if !isRows && (e.Table != nil || e.Kind != 0 || e.Rows != nil) {
		t.Errorf("event %d (%s): Table, Kind or Rows set on a %v", i, summary(e), e.Type)
	}
	// A DDL event's Schema is the statement's default database, empty when it had none.
	isDDL := e.Type == event.DDL
	if got, want := e.Query != "", isDDL; got != want {
		t.Errorf("event %d (%s): Query set = %v, want %v", i, summary(e), got, want)
	}
	if !isDDL && (e.Schema != "" || e.Query != "") {
		t.Errorf("event %d (%s): Schema or Query set on a %v", i, summary(e), e.Type)
	}
	if e.Type != event.Heartbeat && e.Timestamp < time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Unix() {
		t.Errorf("event %d (%s): Timestamp = %d, want the source's commit time", i, summary(e), e.Timestamp)
	}
	if e.Size < 1 {
		t.Errorf("event %d (%s): Size = %d, want at least 1", i, summary(e), e.Size)
	}
}

// checkAdvancing checks that the positions of Commit, DDL and Skip events strictly advance from
// start, and returns the last one.
func checkAdvancing(t *testing.T, start Position, evs []*event.Event) Position {
	t.Helper()
	prev := start
	for i, e := range evs {
		if e.Pos == "" {
			continue
		}
		p, err := ParsePosition(e.Pos, mysql.MariaDBFlavor)
		if err != nil {
			t.Errorf("event %d (%s): ParsePosition(%q): %v", i, summary(e), e.Pos, err)
			continue
		}
		if !p.Contains(prev) || prev.Contains(p) {
			t.Errorf("event %d (%s): position %q does not strictly advance from %q", i, summary(e), p, prev)
		}
		prev = p
	}
	return prev
}

func mariaPos(group int) string { return fmt.Sprintf("MariaDB/0-%d-%d", captureServerID, group) }

func TestTranslator_MariaDBCapture(t *testing.T) {
	c := loadCapture(t, basicCapture)
	start := emptyMariaDB(t)
	tr := newTranslator(start, mustFilter(t, "shop"))
	got := translateAll(t, tr, parseCapture(t, c, 4))

	diffLines(t, "events", summaries(got), renderSteps(basicSteps, mariaPos))
	diffLines(t, "row values", rowValues(got), basicValues())
	for i, e := range got {
		checkFields(t, i, e)
	}

	// The positions are the server's GTIDs, in the server's order (events.tsv).
	var gotPos, wantPos []string
	for _, e := range got {
		if e.Pos != "" {
			gotPos = append(gotPos, e.Pos)
		}
	}
	for _, g := range c.groups {
		wantPos = append(wantPos, "MariaDB/"+g.gtid)
	}
	diffLines(t, "positions", gotPos, wantPos)

	last := checkAdvancing(t, start, got)
	want, err := ParsePosition(c.gtidPos, mysql.MariaDBFlavor)
	if err != nil {
		t.Fatalf("ParsePosition(gtid_binlog_pos %q): %v", c.gtidPos, err)
	}
	if !last.Equal(want) {
		t.Errorf("last event position = %q, want gtid_binlog_pos %q", last, want)
	}
	if got, want := tr.position().String(), "MariaDB/"+c.gtidPos; got != want {
		t.Errorf("translator position at the end = %q, want %q", got, want)
	}
}

// TestTranslator_FilePosCaptureMovesToGTID: the same stream with its Gtid_list events moves to
// the GTID position at its first GTID, and ends at the GTID position a GTID stream ends at.
func TestTranslator_FilePosCaptureMovesToGTID(t *testing.T) {
	c := loadCapture(t, basicCapture)
	tr := newTranslator(Position{Flavor: FlavorFilePos, File: c.files[0], Offset: 4}, mustFilter(t, "shop"))
	got := translateAll(t, tr, parseCapture(t, c, 4))
	gtid := newTranslator(emptyMariaDB(t), mustFilter(t, "shop"))
	translateAll(t, gtid, parseCapture(t, c, 4))
	if tr.position().String() != gtid.position().String() {
		t.Errorf("file:pos stream ends at %q, want the GTID stream's %q", tr.position().String(), gtid.position().String())
	}
	if len(got) == 0 || !strings.HasPrefix(got[len(got)-1].Pos, "MariaDB/") {
		t.Errorf("last event's position is not a GTID one: %v", got[len(got)-1].Pos)
	}
}

// TestTranslator_MariaDBCaptureEmptyStart checks that the parsed empty MariaDB position starts
// the translator as the constructed one does.
func TestTranslator_MariaDBCaptureEmptyStart(t *testing.T) {
	c := loadCapture(t, basicCapture)
	start := mustParse(t, "MariaDB/", "")
	if !start.Equal(emptyMariaDB(t)) {
		t.Fatalf("ParsePosition(%q) = %q, not Equal to the empty MariaDB set", "MariaDB/", start)
	}
	got := translateAll(t, newTranslator(start, mustFilter(t, "shop")), parseCapture(t, c, 4))
	diffLines(t, "events", summaries(got), renderSteps(basicSteps, mariaPos))
}

// TestTranslator_RowsMatchServer checks the Rows events against the server's own list of rows
// events: one vplayer event per binlog rows event of a replicated table, with its kind and size.
func TestTranslator_RowsMatchServer(t *testing.T) {
	c := loadCapture(t, basicCapture)
	got := translateAll(t, newTranslator(emptyMariaDB(t), mustFilter(t, "shop")), parseCapture(t, c, 4))
	var gotRows, wantRows []string
	for _, e := range got {
		if e.Type == event.Rows {
			gotRows = append(gotRows, fmt.Sprintf("%v %s.%s %d bytes", e.Kind, e.Table.Schema, e.Table.Name, e.Size))
		}
	}
	for _, g := range c.groups {
		for _, r := range g.rows {
			if strings.HasPrefix(r.table, "shop.") {
				wantRows = append(wantRows, fmt.Sprintf("%v %s %d bytes", r.kind, r.table, r.size))
			}
		}
	}
	diffLines(t, "rows events", gotRows, wantRows)

	// The bulk INSERT spans several rows events in one transaction, with one Begin.
	bulk := c.groups[10]
	if got := len(bulk.rows); got < 2 {
		t.Errorf("the bulk INSERT is %d rows events in the capture, want several", got)
	}
}

func TestTranslator_Tables(t *testing.T) {
	c := loadCapture(t, basicCapture)
	got := translateAll(t, newTranslator(emptyMariaDB(t), mustFilter(t, "shop")), parseCapture(t, c, 4))
	// binlog column type codes: LONG 3, VARCHAR 15, NEWDECIMAL 246.
	want := map[string]struct {
		cols  int
		types []byte
	}{
		customers3: {3, []byte{mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_NEWDECIMAL}},
		customers4: {4, []byte{mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_NEWDECIMAL, mysql.MYSQL_TYPE_VARCHAR}},
		orders:     {3, []byte{mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_VARCHAR}},
	}
	for i, e := range got {
		if e.Type != event.Rows {
			continue
		}
		tbl := e.Table
		key := fmt.Sprintf("%s.%s(%s)", tbl.Schema, tbl.Name, strings.Join(tbl.ColumnNames, ","))
		w, ok := want[key]
		if !ok {
			t.Errorf("event %d: unexpected table %s", i, key)
			continue
		}
		if got, want := tbl.ColumnCount, w.cols; got != want {
			t.Errorf("event %d: %s ColumnCount = %d, want %d", i, key, got, want)
		}
		if got, want := string(tbl.ColumnTypes), string(w.types); got != want {
			t.Errorf("event %d: %s ColumnTypes = %v, want %v", i, key, []byte(got), []byte(want))
		}
		for _, u := range tbl.Unsigned {
			if u {
				t.Errorf("event %d: %s Unsigned = %v, want no unsigned column", i, key, tbl.Unsigned)
				break
			}
		}
		if tbl.Unsigned != nil && len(tbl.Unsigned) != tbl.ColumnCount {
			t.Errorf("event %d: %s has %d Unsigned flags, want %d", i, key, len(tbl.Unsigned), tbl.ColumnCount)
		}
		for _, r := range e.Rows {
			for _, img := range [][]any{r.Before, r.After} {
				if img != nil && len(img) != tbl.ColumnCount {
					t.Errorf("event %d: %s row image has %d values, want %d", i, key, len(img), tbl.ColumnCount)
				}
			}
		}
	}
}

// TestTranslator_FilePosCapture: a file:pos stream whose binlog never says its GTID state (no
// Gtid_list event) keeps file:pos positions.
func TestTranslator_FilePosCapture(t *testing.T) {
	c := loadCapture(t, basicCapture)
	start := Position{Flavor: FlavorFilePos, File: c.files[0], Offset: 4}
	tr := newTranslator(start, mustFilter(t, "shop"))
	var events []*replication.BinlogEvent
	for _, ev := range parseCapture(t, c, 4) {
		if _, ok := ev.Event.(*replication.MariadbGTIDListEvent); !ok {
			events = append(events, ev)
		}
	}
	got := translateAll(t, tr, events)

	filePos := func(group int) string {
		g := c.groups[group-1]
		return fmt.Sprintf("FilePos/%s:%d", g.file, g.end)
	}
	diffLines(t, "events", summaries(got), renderSteps(basicSteps, filePos))
	diffLines(t, "row values", rowValues(got), basicValues())
	for i, e := range got {
		checkFields(t, i, e)
	}
	checkAdvancing(t, start, got)

	// The capture ends with a rotation to the next file, which moves the position there.
	next := fmt.Sprintf("binlog.%06d", len(c.files)+1)
	if got, want := tr.position().String(), "FilePos/"+next+":4"; got != want {
		t.Errorf("translator position after the final rotate = %q, want %q", got, want)
	}
}

// TestTranslator_Resume starts the translator part-way through the capture, as the reader does
// after a restart: at the position saved after step 8, reading from the next event group.
func TestTranslator_Resume(t *testing.T) {
	c := loadCapture(t, basicCapture)
	const resumeAfter = 8 // the DELETE
	offset := int64(c.groups[resumeAfter].start)
	var wantSteps []step
	for i, s := range basicSteps {
		if s.typ == event.Commit && s.group == resumeAfter {
			wantSteps = basicSteps[i+1:]
		}
	}
	// The bulk insert after the ALTER needs no table map from before the restart.
	tests := []struct {
		name  string
		start Position
		pos   func(group int) string
		final string
	}{
		{
			name:  "mariadb",
			start: mustParse(t, mariaPos(resumeAfter), ""),
			pos:   mariaPos,
			final: "MariaDB/" + c.gtidPos,
		},
		{
			name:  "mariadb with another domain",
			start: mustParse(t, mariaPos(resumeAfter)+",5-7-100", ""),
			pos:   func(g int) string { return mariaPos(g) + ",5-7-100" },
			final: "MariaDB/" + c.gtidPos + ",5-7-100",
		},
		{
			name:  "file position",
			start: Position{Flavor: FlavorFilePos, File: c.files[0], Offset: c.groups[resumeAfter-1].end},
			pos: func(g int) string {
				return fmt.Sprintf("FilePos/%s:%d", c.groups[g-1].file, c.groups[g-1].end)
			},
			final: fmt.Sprintf("FilePos/binlog.%06d:4", len(c.files)+1),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTranslator(tt.start, mustFilter(t, "shop"))
			got := translateAll(t, tr, parseCapture(t, c, offset))
			diffLines(t, "events", summaries(got), renderSteps(wantSteps, tt.pos))
			checkAdvancing(t, tt.start, got)
			if got, want := tr.position().String(), tt.final; got != want {
				t.Errorf("translator position at the end = %q, want %q", got, want)
			}
		})
	}
}

// TestTranslator_CaptureFilters runs the capture through other filters. The table list applies
// to DDL as to rows: a schema change of a table that is not replicated is a Skip.
func TestTranslator_CaptureFilters(t *testing.T) {
	c := loadCapture(t, basicCapture)
	tests := []struct {
		name   string
		filter *Filter
		want   []step
	}{
		{
			name:   "one table of shop",
			filter: mustFilter(t, "shop", "customers"),
			want: []step{
				{typ: event.Skip, group: 1},
				{typ: event.Skip, group: 2},
				{typ: event.DDL, group: 3, detail: "shop " + basicScript[2].stmts[1]},
				{typ: event.Skip, group: 4}, // CREATE TABLE orders
				{typ: event.Skip, group: 5},
				{typ: event.Begin},
				{typ: event.Rows, detail: "INSERT " + customers3 + " 3"},
				{typ: event.Commit, group: 6},
				{typ: event.Begin},
				{typ: event.Rows, detail: "UPDATE " + customers3 + " 1"},
				{typ: event.Commit, group: 7},
				{typ: event.Begin},
				{typ: event.Rows, detail: "DELETE " + customers3 + " 1"},
				{typ: event.Commit, group: 8},
				{typ: event.Skip, group: 9},
				{typ: event.DDL, group: 10, detail: "shop " + basicScript[9].stmts[0]},
				{typ: event.Skip, group: 11}, // orders only
				{typ: event.Begin},
				{typ: event.Rows, detail: "INSERT " + customers4 + " 1"},
				{typ: event.Commit, group: 12},
			},
		},
		{
			name:   "regex on shop",
			filter: mustFilter(t, "shop", "/ord.*/"),
			want: []step{
				{typ: event.Skip, group: 1},
				{typ: event.Skip, group: 2},
				{typ: event.Skip, group: 3}, // CREATE TABLE customers
				{typ: event.DDL, group: 4, detail: "shop " + basicScript[3].stmts[0]},
				{typ: event.Skip, group: 5},
				{typ: event.Skip, group: 6},
				{typ: event.Skip, group: 7},
				{typ: event.Skip, group: 8},
				{typ: event.Skip, group: 9},
				{typ: event.Skip, group: 10}, // ALTER TABLE customers
				{typ: event.Begin},
				{typ: event.Rows, detail: "INSERT " + orders + " 102"},
				{typ: event.Rows, detail: "INSERT " + orders + " 102"},
				{typ: event.Rows, detail: "INSERT " + orders + " 96"},
				{typ: event.Commit, group: 11},
				{typ: event.Begin},
				{typ: event.Rows, detail: "UPDATE " + orders + " 2"},
				{typ: event.Rows, detail: "DELETE " + orders + " 1"},
				{typ: event.Commit, group: 12},
			},
		},
		{
			name:   "the other database",
			filter: mustFilter(t, "other"),
			want: []step{
				{typ: event.Skip, group: 1},
				{typ: event.Skip, group: 2}, // CREATE DATABASE other
				{typ: event.Skip, group: 3},
				{typ: event.Skip, group: 4},
				{typ: event.DDL, group: 5, detail: "other " + basicScript[4].stmts[1]},
				{typ: event.Skip, group: 6},
				{typ: event.Skip, group: 7},
				{typ: event.Skip, group: 8},
				{typ: event.Begin},
				{typ: event.Rows, detail: "INSERT other.log(id,msg) 2"},
				{typ: event.Commit, group: 9},
				{typ: event.Skip, group: 10},
				{typ: event.Skip, group: 11},
				{typ: event.Begin},
				{typ: event.Rows, detail: "INSERT other.log(id,msg) 1"},
				{typ: event.Commit, group: 12},
			},
		},
		{
			name:   "a database with no table in the capture",
			filter: mustFilter(t, "nothing"),
			want: []step{
				{typ: event.Skip, group: 1}, {typ: event.Skip, group: 2}, {typ: event.Skip, group: 3},
				{typ: event.Skip, group: 4}, {typ: event.Skip, group: 5}, {typ: event.Skip, group: 6},
				{typ: event.Skip, group: 7}, {typ: event.Skip, group: 8}, {typ: event.Skip, group: 9},
				{typ: event.Skip, group: 10}, {typ: event.Skip, group: 11}, {typ: event.Skip, group: 12},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := emptyMariaDB(t)
			all := translateAll(t, newTranslator(start, tt.filter), parseCapture(t, c, 4))
			diffLines(t, "events", summaries(all), renderSteps(tt.want, mariaPos))
			for i, e := range all {
				checkFields(t, i, e)
			}
			// Whatever is filtered, every event group still advances the position.
			if got, want := checkAdvancing(t, start, all).String(), "MariaDB/"+c.gtidPos; got != want {
				t.Errorf("last position = %q, want %q", got, want)
			}
		})
	}
}

// TestTranslator_DDLEvents checks the DDL events in full: schema, query, position, size and time.
func TestTranslator_DDLEvents(t *testing.T) {
	c := loadCapture(t, basicCapture)
	got := translateAll(t, newTranslator(emptyMariaDB(t), mustFilter(t, "shop")), parseCapture(t, c, 4))
	var ddl []*event.Event
	for _, e := range got {
		if e.Type == event.DDL {
			ddl = append(ddl, e)
		}
	}
	want := []struct {
		group int
		query string
	}{
		{3, basicScript[2].stmts[1]},
		{4, basicScript[3].stmts[0]},
		{10, basicScript[9].stmts[0]},
	}
	if len(ddl) != len(want) {
		t.Fatalf("got %d DDL events, want %d: %q", len(ddl), len(want), summaries(ddl))
	}
	for i, w := range want {
		e := ddl[i]
		if got, want := e.Query, w.query; got != want {
			t.Errorf("DDL %d: Query = %q, want %q", i, got, want)
		}
		if got, want := e.Schema, "shop"; got != want {
			t.Errorf("DDL %d: Schema = %q, want %q", i, got, want)
		}
		if got, want := e.Pos, mariaPos(w.group); got != want {
			t.Errorf("DDL %d: Pos = %q, want %q", i, got, want)
		}
		// The Query event is the last of its group: it ends at the group's end.
		g := c.groups[w.group-1]
		if !g.standalone {
			t.Errorf("group %s of the DDL is not standalone in the capture", g.gtid)
		}
	}
}

// TestTranslator_DDLCapture classifies the standalone statements of the mariadb-ddl capture for
// a workflow on database shop: a DDL event for a schema change of a shop table, whichever the
// default database (unqualified names take it, qualified ones their own), a Skip for anything
// else. Every statement advances the position either way.
func TestTranslator_DDLCapture(t *testing.T) {
	c := loadCapture(t, ddlCapture)
	start := emptyMariaDB(t)
	tr := newTranslator(start, mustFilter(t, "shop"))
	got := translateAll(t, tr, parseCapture(t, c, 4))

	// One event per statement, carrying its GTID, whatever its classification.
	if len(got) != len(c.groups) {
		t.Fatalf("got %d events, want one per statement (%d):\n\t%s", len(got), len(c.groups), strings.Join(summaries(got), "\n\t"))
	}
	for i, e := range got {
		if got, want := e.Pos, "MariaDB/"+c.groups[i].gtid; got != want {
			t.Errorf("event %d (%s): Pos = %q, want %q", i, summary(e), got, want)
		}
		checkFields(t, i, e)
	}
	if got, want := checkAdvancing(t, start, got).String(), "MariaDB/"+c.gtidPos; got != want {
		t.Errorf("last position = %q, want gtid_binlog_pos %q", got, want)
	}

	// ddl is the DDL event of statement stmt of a step, run with default database schema.
	type ddl struct {
		schema string
		stmt   int
	}
	tests := []struct {
		group int
		ddl   *ddl // nil: a Skip
	}{
		// MariaDB logs CREATE DATABASE with the new database as its default database; it
		// changes no table.
		{group: 1},
		{group: 2},
		{group: 3, ddl: &ddl{schema: "", stmt: 0}},
		{group: 4, ddl: &ddl{schema: "", stmt: 0}},
		{group: 5}, // other.u, from shop
		{group: 6}, // ANALYZE
		{group: 7}, // CREATE USER
		{group: 8}, // GRANT
		{group: 9, ddl: &ddl{schema: "shop", stmt: 0}},
		{group: 10, ddl: &ddl{schema: "other", stmt: 1}}, // shop.t, from other
		{group: 11},
	}
	if len(tests) != len(ddlScript) {
		t.Fatalf("%d expectations for %d steps of ddlScript", len(tests), len(ddlScript))
	}
	for _, tt := range tests {
		step := ddlScript[tt.group-1]
		t.Run(step.what, func(t *testing.T) {
			e := got[tt.group-1]
			if tt.ddl == nil {
				if got, want := e.Type, event.Skip; got != want {
					t.Errorf("%q: Type = %v, want %v (%s)", step.stmts, got, want, summary(e))
				}
				return
			}
			if got, want := e.Type, event.DDL; got != want {
				t.Fatalf("%q: Type = %v, want %v (%s)", step.stmts, got, want, summary(e))
			}
			if got, want := e.Schema, tt.ddl.schema; got != want {
				t.Errorf("Schema = %q, want the default database %q", got, want)
			}
			if got, want := e.Query, step.stmts[tt.ddl.stmt]; got != want {
				t.Errorf("Query = %q, want %q", got, want)
			}
		})
	}
}

// TestTranslator_DDLCaptureFilters runs the mariadb-ddl capture through other filters: only the
// listed statements (by step) become DDL events, every other one a Skip.
func TestTranslator_DDLCaptureFilters(t *testing.T) {
	c := loadCapture(t, ddlCapture)
	tests := []struct {
		name    string
		filter  *Filter
		wantDDL []int // steps, 1-based
	}{
		{name: "every table of shop", filter: mustFilter(t, "shop"), wantDDL: []int{3, 4, 9, 10}},
		{name: "the changed table of shop", filter: mustFilter(t, "shop", "t"), wantDDL: []int{3, 4, 9, 10}},
		{name: "a regex matching the changed table", filter: mustFilter(t, "shop", "/[a-z]/"), wantDDL: []int{3, 4, 9, 10}},
		{name: "another table of shop", filter: mustFilter(t, "shop", "customers"), wantDDL: nil},
		{name: "the table of other, created from shop", filter: mustFilter(t, "other"), wantDDL: []int{5}},
		{name: "a database with no table in the capture", filter: mustFilter(t, "nothing"), wantDDL: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := emptyMariaDB(t)
			got := translateAll(t, newTranslator(start, tt.filter), parseCapture(t, c, 4))
			var want []string
			for i := range c.groups {
				group := i + 1
				if slices.Contains(tt.wantDDL, group) {
					want = append(want, "DDL "+mariaPos(group))
				} else {
					want = append(want, "SKIP "+mariaPos(group))
				}
			}
			var gotTypes []string
			for _, e := range got {
				gotTypes = append(gotTypes, fmt.Sprintf("%v %s", e.Type, e.Pos))
			}
			diffLines(t, "events", gotTypes, want)
			if got, want := checkAdvancing(t, start, got).String(), "MariaDB/"+c.gtidPos; got != want {
				t.Errorf("last position = %q, want %q", got, want)
			}
		})
	}
}

func TestServerIDFor(t *testing.T) {
	names := []string{"", "a", "b", "orders", "orders2", "shop-to-warehouse", "shop_to_warehouse", strings.Repeat("x", 1000)}
	seen := map[uint32]string{}
	for _, name := range names {
		id := ServerIDFor(name)
		if id == 0 {
			t.Errorf("ServerIDFor(%q) = 0, want non-zero", name)
		}
		if id < 1000000 {
			t.Errorf("ServerIDFor(%q) = %d, want at least 1000000 (clear of operators' ids)", name, id)
		}
		if got := ServerIDFor(name); got != id {
			t.Errorf("ServerIDFor(%q) = %d, then %d: not stable", name, id, got)
		}
		if other, dup := seen[id]; dup {
			t.Errorf("ServerIDFor(%q) = ServerIDFor(%q) = %d, want different ids", name, other, id)
		}
		seen[id] = name
	}
}

// TestServerIDFor_Golden pins the derivation: a replica's id must not change across vplayer
// versions, or the source sees a new replica after an upgrade.
func TestServerIDFor_Golden(t *testing.T) {
	tests := []struct {
		name     string
		workflow string
		want     uint32
	}{
		// FNV-1a 32 of the name, modulo 1e9, plus 1e6.
		{name: "empty", workflow: "", want: 1000000 + 2166136261%1000000000},
		{name: "a", workflow: "a", want: 1000000 + 0xe40c292c%1000000000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ServerIDFor(tt.workflow); got != tt.want {
				t.Errorf("ServerIDFor(%q) = %d, want %d", tt.workflow, got, tt.want)
			}
		})
	}
}
