package plan

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/vplayer/vplayer/event"
	"github.com/vplayer/vplayer/internal/eventjson"
	"github.com/vplayer/vplayer/sqlq"
	"github.com/vplayer/vplayer/tabledef"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// goldenDir holds the planner's golden cases: in each, input.json (settings, table definitions,
// fetches of events) and want.txt (the steps planned, their SQL and writesets).
const goldenDir = "../../testdata/applier"

// goldenInput is a case's input.json.
type goldenInput struct {
	Comment  string `json:"comment"`
	ExecMode string `json:"exec_mode"`
	OnDDL    string `json:"on_ddl"`
	TargetDB string `json:"target_db"`
	MaxBatch int    `json:"max_batch"` // bytes; 0 means the applier's default
	StopPos  string `json:"stop_pos"`
	// Unchecked names the tables whose rows go in with foreign_key_checks off whatever the
	// source's (Config.FKOff, as the copy phase sets it).
	Unchecked []string            `json:"unchecked"`
	Tables    []goldenTable       `json:"tables"`
	Fetches   [][]eventjson.Event `json:"fetches"`
	// EventsFile, when set, names the file of the case that holds Fetches: one package binlog
	// writes from a binlog capture (binlog.TestCapture_applierInput).
	EventsFile string `json:"events_file"`
	// Parallel plans for workers (Config.Parallel): batches held until their commit, at most
	// 1 MiB of statements unless max_batch is set, as the applier plans with --apply-workers.
	Parallel bool `json:"parallel"`
	// InFlight, per fetch, gives the writesets of the jobs in flight while it is planned
	// (Planner.InFlight), which turns on Parallel and Config.Split. A job's writeset is a list
	// of keys, each "table index value" (the table's name, its target database implied; no
	// value: every value of the index; no index: the whole table), or ["barrier"].
	InFlight [][][]string `json:"in_flight"`
}

// goldenTable is a target table's definition, as information_schema would give it.
type goldenTable struct {
	Name    string `json:"name"`
	Columns []struct {
		Name      string `json:"name"`
		Type      string `json:"type"` // DATA_TYPE
		Unsigned  bool   `json:"unsigned"`
		NotNull   bool   `json:"not_null"`
		Generated bool   `json:"generated"`
		Collation string `json:"collation"`
		Length    int    `json:"length"`
	} `json:"columns"`
	// Keys are the unique keys, the primary key (named PRIMARY) first.
	Keys []struct {
		Name    string   `json:"name"`
		Columns []string `json:"columns"`
	} `json:"keys"`
	Related bool `json:"related"`
}

func readGolden(t *testing.T, dir string) goldenInput {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "input.json"))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	var in goldenInput
	if err := dec.Decode(&in); err != nil {
		t.Fatalf("%s/input.json: %v", dir, err)
	}
	if in.EventsFile != "" {
		raw, err := os.ReadFile(filepath.Join(dir, in.EventsFile))
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in.Fetches); err != nil {
			t.Fatalf("%s/%s: %v", dir, in.EventsFile, err)
		}
	}
	return in
}

// tableDefs builds the cases' tables, by name and column count (a DDL may change a table's
// columns: the rows before and after it find their own definition).
func (in goldenInput) tableDefs(t *testing.T) map[string]*Table {
	t.Helper()
	out := map[string]*Table{}
	for _, gt := range in.Tables {
		d := tabledef.Table{Schema: in.TargetDB, Name: gt.Name, Related: gt.Related}
		for _, c := range gt.Columns {
			d.Columns = append(d.Columns, tabledef.Column{Name: c.Name, Type: c.Type, Unsigned: c.Unsigned, NotNull: c.NotNull,
				Generated: c.Generated, Collation: c.Collation, OctetLength: c.Length})
		}
		for _, k := range gt.Keys {
			d.Uniques = append(d.Uniques, tabledef.Index{Name: k.Name, Columns: k.Columns, Primary: k.Name == "PRIMARY"})
		}
		tb, err := BuildTable(d)
		if err != nil {
			t.Fatalf("table %s: %v", gt.Name, err)
		}
		out[fmt.Sprintf("%s/%d", gt.Name, len(d.Columns))] = tb
	}
	return out
}

var (
	eventTypes = map[string]event.Type{}
	rowKinds   = map[string]event.RowKind{}
)

func init() {
	for ty := event.Begin; ty <= event.Statement; ty++ {
		eventTypes[ty.String()] = ty
	}
	for k := event.Insert; k <= event.Delete; k++ {
		rowKinds[k.String()] = k
	}
}

// value converts a JSON value to what the reader decodes for a column of c's type.
func goldenValue(t *testing.T, c *Column, v any) any {
	t.Helper()
	if v == nil {
		return nil
	}
	n, isNum := v.(json.Number)
	s, _ := v.(string)
	mustInt := func(bits int) int64 {
		i, err := strconv.ParseInt(string(n), 10, bits)
		if err != nil || !isNum {
			t.Fatalf("column %s: %v is not an integer", c.name, v)
		}
		return i
	}
	switch c.dataType {
	case "tinyint":
		return int8(mustInt(8))
	case "smallint":
		return int16(mustInt(16))
	case "mediumint", "int":
		return int32(mustInt(32))
	case "bigint", "enum", "set", "bit":
		return mustInt(64)
	case "year":
		return int(mustInt(64))
	case "float":
		f, err := strconv.ParseFloat(string(n), 32)
		if err != nil {
			t.Fatalf("column %s: %v", c.name, err)
		}
		return float32(f)
	case "double":
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			t.Fatalf("column %s: %v", c.name, err)
		}
		return f
	case "decimal":
		if isNum {
			s = string(n)
		}
		return decimal.RequireFromString(s)
	}
	if isNum {
		return string(n)
	}
	return s
}

func (in goldenInput) events(t *testing.T, tables map[string]*Table) [][]*event.Event {
	t.Helper()
	bts := map[string]*event.Table{}
	var out [][]*event.Event
	for _, f := range in.Fetches {
		var fetch []*event.Event
		for _, ge := range f {
			ty, ok := eventTypes[ge.Type]
			if !ok {
				t.Fatalf("event type %q", ge.Type)
			}
			e := &event.Event{Type: ty, Pos: ge.Pos, Timestamp: ge.TS, GTID: ge.GTID, XID: ge.XID, NoForeignKeyChecks: ge.NoFK,
				Schema: ge.Schema, Query: ge.Query, DBRefs: ge.DBRefs, Size: ge.Size}
			if ty == event.Rows {
				key := fmt.Sprintf("%s/%d", ge.Table, ge.Columns)
				tbl := tables[key]
				if tbl == nil {
					t.Fatalf("rows of %s with %d columns: no such table in input.json", ge.Table, ge.Columns)
				}
				if bts[key] == nil {
					bts[key] = &event.Table{Schema: "src", Name: ge.Table, ColumnCount: ge.Columns}
				}
				e.Table = bts[key]
				if e.Kind, ok = rowKinds[ge.Kind]; !ok {
					t.Fatalf("row kind %q", ge.Kind)
				}
				image := func(vals []any) []any {
					if vals == nil {
						return nil
					}
					if len(vals) != len(tbl.cols) {
						t.Fatalf("row of %s has %d values, the table %d columns", ge.Table, len(vals), len(tbl.cols))
					}
					out := make([]any, len(vals))
					for i, v := range vals {
						out[i] = goldenValue(t, &tbl.cols[i], v)
					}
					return out
				}
				e.BeforeCols, e.AfterCols = columnSet(ge.BeforeCols, ge.Columns), columnSet(ge.AfterCols, ge.Columns)
				for _, r := range ge.Rows {
					e.Rows = append(e.Rows, event.Row{Before: image(r.Before), After: image(r.After)})
				}
			}
			fetch = append(fetch, e)
		}
		out = append(out, fetch)
	}
	return out
}

// TestPlanner_Golden plans each case of testdata/applier and compares the steps, their SQL and
// writesets with its want.txt; -update rewrites want.txt.
func TestPlanner_Golden(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(goldenDir, "*", "input.json"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no golden cases in %s: %v", goldenDir, err)
	}
	for _, in := range dirs {
		dir := filepath.Dir(in)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			got := planGolden(t, readGolden(t, dir))
			want := filepath.Join(dir, "want.txt")
			if *update {
				if err := os.WriteFile(want, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			raw, err := os.ReadFile(want)
			if err != nil {
				t.Fatalf("%v (run go test ./applier/plan -run Golden -update)", err)
			}
			if string(raw) != got {
				diffLinesGolden(t, string(raw), got)
			}
		})
	}
}

func diffLinesGolden(t *testing.T, want, got string) {
	t.Helper()
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			t.Fatalf("want.txt differs at line %d (run go test ./applier/plan -run Golden -update and review the diff):\n  want: %s\n  got:  %s", i+1, wl, gl)
		}
	}
}

// planGolden plans in's fetches and renders every step.
func planGolden(t *testing.T, in goldenInput) string {
	t.Helper()
	tables := in.tableDefs(t)
	cfg := Config{TargetDB: in.TargetDB, OnDDL: in.OnDDL, ExecMode: in.ExecMode, MaxBatch: in.MaxBatch, Writesets: true}
	cfg.Parallel = in.Parallel || in.InFlight != nil
	cfg.Split = in.InFlight != nil
	switch {
	case cfg.MaxBatch != 0:
	case cfg.Parallel:
		cfg.MaxBatch = 1 << 20
	default:
		cfg.MaxBatch = 4 << 20
	}
	if in.StopPos != "" {
		cfg.StopAt = func(pos string) bool { return pos == in.StopPos }
	}
	if in.Unchecked != nil {
		cfg.FKOff = func(Table string) bool { return slices.Contains(in.Unchecked, Table) }
	}
	p := New(cfg, "start")
	var w strings.Builder
	if in.Comment != "" {
		fmt.Fprintf(&w, "# %s\n", in.Comment)
	}
	for i, fetch := range in.events(t, tables) {
		fmt.Fprintf(&w, "fetch %d\n", i+1)
		if in.InFlight != nil {
			p.InFlight(in.inFlight(t, &w, i))
		}
		for _, e := range fetch {
			fmt.Fprintf(&w, "  event %s\n", describeEvent(e))
			var tbl *Table
			if e.Type == event.Rows && p.TakesRows() {
				tbl = tables[fmt.Sprintf("%s/%d", e.Table.Name, e.Table.ColumnCount)]
			}
			steps, err := p.Event(e, tbl)
			renderSteps(&w, steps)
			if err != nil {
				fmt.Fprintf(&w, "    error: %v\n", err)
				return w.String()
			}
			if p.stopped {
				return w.String()
			}
		}
		fmt.Fprintf(&w, "  end of fetch\n")
		steps, err := p.EndFetch()
		renderSteps(&w, steps)
		if err != nil {
			fmt.Fprintf(&w, "    error: %v\n", err)
			return w.String()
		}
	}
	return w.String()
}

// inFlight returns the writesets in flight while fetch i is planned, and renders them.
func (in goldenInput) inFlight(t *testing.T, w *strings.Builder, i int) []*Writeset {
	t.Helper()
	if i >= len(in.InFlight) || len(in.InFlight[i]) == 0 {
		w.WriteString("  in flight: none\n")
		return nil
	}
	var sets []*Writeset
	for n, keys := range in.InFlight[i] {
		ws := new(Writeset)
		if slices.Equal(keys, []string{"barrier"}) {
			ws.barrier = true
		}
		for _, k := range keys {
			f := strings.Fields(k)
			if ws.barrier || len(f) == 0 || len(f) > 3 {
				continue
			}
			f = append(f, "", "")
			ws.Add(sqlq.Ident(in.TargetDB)+"."+sqlq.Ident(f[0]), f[1], f[2])
		}
		if len(ws.keys) == 0 && !ws.barrier {
			t.Fatalf("fetch %d: job %d in flight has no key", i+1, n+1)
		}
		fmt.Fprintf(w, "  in flight: job %d\n", n+1)
		var r strings.Builder
		renderWriteset(&r, ws)
		w.WriteString(strings.ReplaceAll(r.String(), "      writeset", "    writeset"))
		sets = append(sets, ws)
	}
	return sets
}

func describeEvent(e *event.Event) string {
	s := e.Type.String()
	switch e.Type {
	case event.Begin:
		s += " " + e.GTID
		if e.XID != "" {
			s += " XA " + e.XID
		}
	case event.Rows:
		s += fmt.Sprintf(" %s %s, %d rows", e.Kind, e.Table.Name, len(e.Rows))
		if e.NoForeignKeyChecks {
			s += ", foreign_key_checks=0"
		}
	case event.DDL:
		s += " " + e.Query
	case event.XACommit, event.XARollback:
		s += " " + e.XID
	}
	if e.Pos != "" {
		s += " -> " + e.Pos
	}
	return s
}

func renderSteps(w *strings.Builder, steps []Step) {
	for i := range steps {
		renderStep(w, &steps[i])
	}
}

// renderStep writes s as the executor would run it, its record writes (which only the executor
// writes) in angle brackets where they go.
func renderStep(w *strings.Builder, s *Step) {
	fmt.Fprintf(w, "    %s", s.Kind)
	if s.XID != "" {
		fmt.Fprintf(w, " (session of XA %s)", s.XID)
	}
	switch s.Kind {
	case StepCommit, StepXAOnePhase:
		fmt.Fprintf(w, ": saves %s, %d source transactions, %d row changes", s.End.Pos, s.End.Commits, s.End.Rows)
	case StepStop:
		fmt.Fprintf(w, ": %s", s.Msg)
	}
	w.WriteString("\n")
	if s.Check != nil {
		renderBatch(w, "round trip of the checked statements", s.Check, -1, "")
	}
	if s.Stmts != nil {
		slot, record := -1, ""
		switch s.Kind {
		case StepCommit:
			slot, record = s.Stmts.n, "<position "+s.End.Pos+">"
		case StepXAOnePhase:
			slot, record = s.Slot, "<position "+s.End.Pos+">"
		case StepXAPrepare:
			slot, record = s.Slot, "<fence check>"
		case StepXAEnd, StepDDL:
			slot, record = 0, "<DDL mark "+s.Event.Pos+">"
		}
		if s.Late != nil {
			// The late part goes after the rest, before the position (see Config.Split).
			renderBatch(w, "statements", s.Stmts, -1, "")
			renderBatch(w, "late part, once the jobs in flight it overlaps committed", s.Late, -1, "")
			fmt.Fprintf(w, "      then:\n        %s\n", record)
		} else {
			renderBatch(w, "statements", s.Stmts, slot, record)
		}
		if s.Kind == StepCommit {
			w.WriteString("        COMMIT\n")
		}
	}
	if s.Writeset != nil {
		renderWriteset(w, s.Writeset)
	}
}

func renderBatch(w *strings.Builder, title string, b *Batch, slot int, record string) {
	if s := b.Shape(); s != "" && s != "COMMIT" {
		fmt.Fprintf(w, "      %s (stall message shape: %s):\n", title, s)
	} else {
		fmt.Fprintf(w, "      %s:\n", title)
	}
	for i := 0; i <= b.n; i++ {
		if i == slot {
			fmt.Fprintf(w, "        %s\n", record)
		}
		if i == b.n {
			break
		}
		fmt.Fprintf(w, "        %s\n", b.Stmt(i))
		for _, c := range b.checks {
			if c.Stmt == i {
				fmt.Fprintf(w, "          -- %s\n", describeCheck(&c))
			}
		}
	}
}

func describeCheck(c *Check) string {
	s := fmt.Sprintf("rows matched must be %d", c.Want)
	if c.Counted {
		s = "counted upsert: rows matched must be 1 (it found every key)"
	}
	s += fmt.Sprintf(", else %s of keys %s", c.Kind, strings.Join(c.KeyLiterals(), ","))
	if c.GTID != "" {
		s += ", source " + c.GTID
	}
	return s
}

func renderWriteset(w *strings.Builder, ws *Writeset) {
	if ws.barrier {
		w.WriteString("      writeset: barrier\n")
	} else if len(ws.keys) == 0 {
		w.WriteString("      writeset: empty\n")
		return
	} else {
		w.WriteString("      writeset:\n")
	}
	// Consecutive values of one key on one line.
	for i := 0; i < len(ws.keys); {
		k := ws.keys[i]
		switch {
		case k.wholeTable():
			fmt.Fprintf(w, "        %s (whole table)\n", k.table)
			i++
		case k.wholeIndex():
			fmt.Fprintf(w, "        %s %s (every value)\n", k.table, k.index)
			i++
		default:
			var values []string
			for ; i < len(ws.keys) && ws.keys[i].table == k.table && ws.keys[i].index == k.index && !ws.keys[i].wholeIndex(); i++ {
				values = append(values, ws.keys[i].value)
			}
			fmt.Fprintf(w, "        %s %s %s\n", k.table, k.index, strings.Join(values, " "))
		}
	}
}

// columnSet is the bitmap of a partial image's columns; nil (every column) for none.
func columnSet(cols []int, n int) event.Columns {
	if cols == nil {
		return nil
	}
	out := make(event.Columns, (n+7)/8)
	for _, i := range cols {
		out[i>>3] |= 1 << (i & 7)
	}
	return out
}
