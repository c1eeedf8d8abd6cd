package binlog

import (
	"fmt"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

func TestParseOnlineDDLPatterns(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		shadows int
		trashes int
		wantErr string
	}{
		{name: "empty is the default", in: "", shadows: 2, trashes: 3},
		{name: "default", in: DefaultOnlineDDLPatterns, shadows: 2, trashes: 3},
		{name: "none", in: "none"},
		{name: "one of each, spaced", in: " shadow = {table}_shadow , trash=old_{table} ", shadows: 1, trashes: 1},
		{name: "no kind", in: "_{table}_new", wantErr: "want shadow=<pattern>"},
		{name: "unknown kind", in: "ghost=_{table}_gho", wantErr: `kind "ghost"`},
		{name: "no placeholder", in: "shadow=_t_new", wantErr: "{table} once"},
		{name: "two placeholders", in: "shadow={table}_{table}", wantErr: "{table} once"},
		{name: "placeholder alone", in: "trash={table}", wantErr: "add something"},
		{name: "qualified", in: "shadow=db.{table}_new", wantErr: "without quotes, dots or slashes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := ParseOnlineDDLPatterns(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseOnlineDDLPatterns(%q) = %v, want an error with %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseOnlineDDLPatterns(%q): %v", tt.in, err)
			}
			if got, want := fmt.Sprint(len(o.shadow), len(o.trash)), fmt.Sprint(tt.shadows, tt.trashes); got != want {
				t.Errorf("ParseOnlineDDLPatterns(%q): shadow and trash patterns %s, want %s", tt.in, got, want)
			}
		})
	}
}

// onlineFilter is a filter of database shop with the default online DDL patterns.
func onlineFilter(t *testing.T, tables ...string) *Filter {
	t.Helper()
	f := mustFilter(t, "shop", tables...)
	o, err := ParseOnlineDDLPatterns("")
	if err != nil {
		t.Fatal(err)
	}
	f.SetOnlineDDL(o)
	return f
}

func TestFilter_onlineDDLTables(t *testing.T) {
	tests := []struct {
		name   string
		tables []string // --tables
		table  string
		kind   tableKind
		base   string
		match  bool // Filter.Match
	}{
		{name: "plain table", table: "orders", match: true},
		{name: "gh-ost ghost", table: "_orders_gho", kind: shadowTable, base: "orders"},
		{name: "gh-ost changelog", table: "_orders_ghc", kind: trashTable, base: "orders"},
		{name: "gh-ost trash", table: "_orders_del", kind: trashTable, base: "orders"},
		{name: "pt-osc new", table: "_orders_new", kind: shadowTable, base: "orders"},
		{name: "pt-osc old", table: "_orders_old", kind: trashTable, base: "orders"},
		{name: "pt-osc new with an extra underscore", table: "__orders_new", kind: shadowTable, base: "_orders"},
		{name: "extra underscore of a listed table", tables: []string{"orders"}, table: "__orders_new", kind: shadowTable, base: "orders"},
		{name: "table whose name has underscores", table: "_order_items_gho", kind: shadowTable, base: "order_items"},
		{name: "shadow of a table not replicated", tables: []string{"customers"}, table: "_orders_new"},
		{name: "listed table of a shadow's name", tables: []string{"orders", "_orders_new"}, table: "_orders_new", kind: shadowTable, base: "orders"},
		{name: "no table name", table: "__new", match: true},
		{name: "suffix only", table: "orders_new", match: true},
		{name: "underscore prefix only", table: "_orders", match: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := onlineFilter(t, tt.tables...)
			kind, base := f.onlineKind("shop", tt.table)
			if kind != tt.kind || base != tt.base {
				t.Errorf("onlineKind(%q) = %d, %q; want %d, %q", tt.table, kind, base, tt.kind, tt.base)
			}
			if got := f.Match("shop", tt.table); got != tt.match {
				t.Errorf("Match(%q) = %v, want %v", tt.table, got, tt.match)
			}
			if got := f.IsOnlineDDLTable("other", tt.table); got {
				t.Errorf("IsOnlineDDLTable of database other, %q = true, want false", tt.table)
			}
		})
	}
	t.Run("none", func(t *testing.T) {
		f := mustFilter(t, "shop")
		o, err := ParseOnlineDDLPatterns("none")
		if err != nil {
			t.Fatal(err)
		}
		f.SetOnlineDDL(o)
		if !f.Match("shop", "_orders_new") || f.IsOnlineDDLTable("shop", "_orders_new") {
			t.Errorf("with no patterns, _orders_new is not an ordinary replicated table")
		}
	})
}

func TestNamePattern_is(t *testing.T) {
	p := namePattern{prefix: "_", suffix: "_new"}
	for _, tt := range []struct {
		name, base string
		want       bool
	}{
		{"_t_new", "t", true},
		{"__t_new", "t", true},
		{"___t_new", "t", true},
		{"__t_new", "_t", true},
		{"_t_new", "_t", false},
		{"t_new", "t", false},
		{"_t_new", "u", false},
		{"_t_old", "t", false},
	} {
		if got := p.is(tt.name, tt.base); got != tt.want {
			t.Errorf("is(%q, %q) = %v, want %v", tt.name, tt.base, got, tt.want)
		}
	}
}

func TestAlterOf(t *testing.T) {
	tests := []struct {
		q     string
		table string
		spec  string
		ok    bool
	}{
		{"ALTER TABLE `shop`.`_t_new` ADD COLUMN c INT NULL", "shop._t_new", "ADD COLUMN c INT NULL", true},
		{"alter /* gh-ost */ table `shop`.`_t_gho` add column c int, add key ic (c);", "shop._t_gho", "add column c int, add key ic (c)", true},
		{"ALTER ONLINE IGNORE TABLE IF EXISTS _t_new ENGINE=InnoDB", "def._t_new", "ENGINE=InnoDB", true},
		{"ALTER TABLE `we``ird` DROP c", "def.we`ird", "DROP c", true},
		{"ALTER VIEW v AS SELECT 1", "", "", false},
		{"CREATE TABLE t (id INT)", "", "", false},
	}
	for _, tt := range tests {
		tr, spec, ok := alterOf(tt.q, "def")
		if ok != tt.ok || (ok && (tr.schema+"."+tr.name != tt.table || spec != tt.spec)) {
			t.Errorf("alterOf(%q) = %s.%s, %q, %v; want %s, %q, %v", tt.q, tr.schema, tr.name, spec, ok, tt.table, tt.spec, tt.ok)
		}
	}
}

func TestCreateLike(t *testing.T) {
	tests := []struct {
		q    string
		like string
		ok   bool
	}{
		{"create /* gh-ost */ table `shop`.`_t_gho` like `shop`.`t`", "shop.t", true},
		{"CREATE TABLE IF NOT EXISTS _t_gho (LIKE t)", "def.t", true},
		{"CREATE TABLE `shop`.`_t_new` (\n  `id` int(11) NOT NULL\n)", "", false},
	}
	for _, tt := range tests {
		tr, ok := createLike(tt.q, "def")
		if ok != tt.ok || (ok && tr.schema+"."+tr.name != tt.like) {
			t.Errorf("createLike(%q) = %s.%s, %v; want %s, %v", tt.q, tr.schema, tr.name, ok, tt.like, tt.ok)
		}
	}
}

func TestCutOverAlter(t *testing.T) {
	tests := []struct {
		name   string
		alters []recordedAlter
		want   string
	}{
		{"one", []recordedAlter{{ID: "a", Spec: "ADD COLUMN c INT NULL"}}, "ALTER TABLE `shop`.`t` ADD COLUMN c INT NULL"},
		{"two, the first with a line comment", []recordedAlter{{ID: "a", Spec: "ADD COLUMN c INT -- why"}, {ID: "b", Spec: "ADD KEY ic (c)"}},
			"ALTER TABLE `shop`.`t` ADD COLUMN c INT -- why\n, ADD KEY ic (c)"},
	}
	for _, tt := range tests {
		if got := cutOverAlter("shop", "t", tt.alters); got != tt.want {
			t.Errorf("%s: cutOverAlter = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// onlineRun feeds MariaDB standalone statements (each its own GTID, 0-1-seq from first on) and
// transactions to a translator and collects what it emits and each state it would save.
type onlineRun struct {
	t     *testing.T
	tr    *translator
	seq   uint64
	out   []string
	saves []string
}

func newOnlineRun(t *testing.T, f *Filter, seq uint64, state string) *onlineRun {
	t.Helper()
	start := emptyMariaDB(t)
	if seq > 0 {
		set, err := mysql.ParseMariadbGTIDSet(fmt.Sprintf("0-1-%d", seq))
		if err != nil {
			t.Fatal(err)
		}
		start.GTID = set
	}
	tr := newTranslator(start, f)
	tr.skip.stats = &Stats{}
	st, err := parseOnlineState(state)
	if err != nil {
		t.Fatal(err)
	}
	st.prune(start)
	tr.online = st
	return &onlineRun{t: t, tr: tr, seq: seq}
}

func (r *onlineRun) feed(e replication.Event) {
	r.t.Helper()
	out, err := r.tr.translate(&replication.BinlogEvent{Header: hdr(1700000000, 0, 40), Event: e})
	if err != nil {
		r.t.Fatalf("translate %T: %v", e, err)
	}
	for _, e := range out {
		s := summary(e)
		if e.CutOver != "" {
			s += " | cut-over " + e.CutOver
		}
		r.out = append(r.out, s)
	}
	if r.tr.onlineDirty {
		r.saves = append(r.saves, r.tr.online.String())
		r.tr.onlineDirty = false
	}
}

// stmt feeds one standalone statement with default database shop.
func (r *onlineRun) stmt(q string) {
	r.t.Helper()
	r.seq++
	r.feed(&replication.MariadbGTIDEvent{GTID: mysql.MariadbGTID{DomainID: 0, ServerID: 1, SequenceNumber: r.seq}, Flags: replication.BINLOG_MARIADB_FL_STANDALONE})
	r.feed(&replication.QueryEvent{Schema: []byte("shop"), Query: []byte(q)})
}

// rows feeds a transaction with one rows event on table of shop, whose table map the filter
// passes over.
func (r *onlineRun) rows(table string) {
	r.t.Helper()
	r.seq++
	r.feed(&replication.MariadbGTIDEvent{GTID: mysql.MariadbGTID{DomainID: 0, ServerID: 1, SequenceNumber: r.seq}})
	r.feed(&replication.TableMapEvent{TableID: 90, Schema: []byte("shop"), Table: []byte(table), ColumnCount: 2})
	r.feed(&replication.RowsEvent{TableID: 90})
	r.feed(&replication.XIDEvent{XID: 1})
}

func (r *onlineRun) lastSave() string {
	if len(r.saves) == 0 {
		return ""
	}
	return r.saves[len(r.saves)-1]
}

// The statements the tools log on MariaDB 10.11 (pt-online-schema-change 3.2's as the binlog
// has them; gh-ost's as it sends them).
const (
	ptCreate  = "CREATE TABLE `shop`.`_t_new` (\n  `id` int(11) NOT NULL,\n  `a` int(11) DEFAULT NULL,\n  PRIMARY KEY (`id`)\n) ENGINE=InnoDB"
	ptAlter   = "ALTER TABLE `shop`.`_t_new` ADD COLUMN c INT NULL"
	ptTrigger = "CREATE DEFINER=`root`@`127.0.0.1` TRIGGER `pt_osc_shop_t_ins` AFTER INSERT ON `shop`.`t` FOR EACH ROW REPLACE INTO `shop`.`_t_new` (`id`, `a`) VALUES (NEW.`id`, NEW.`a`)"
	ptAnalyze = "ANALYZE TABLE `shop`.`_t_new` /* pt-online-schema-change */"
	ptRename  = "RENAME TABLE `shop`.`t` TO `shop`.`_t_old`, `shop`.`_t_new` TO `shop`.`t`"
	ptDrop    = "DROP TABLE IF EXISTS `_t_old` /* generated by server */"

	ghCreate    = "create /* gh-ost */ table `shop`.`_t_gho` like `shop`.`t`"
	ghAlter     = "alter /* gh-ost */ table `shop`.`_t_gho` add column c int null"
	ghChangelog = "create /* gh-ost */ table `shop`.`_t_ghc` (id bigint auto_increment, hint varchar(64), primary key(id))"
	ghSentry    = "create /* gh-ost */ table `shop`.`_t_del` (id int auto_increment primary key) comment='ghost-cut-over-sentry'"
	ghDropDel   = "drop /* gh-ost */ table if exists `shop`.`_t_del`"
	ghRename    = "rename /* gh-ost */ table `shop`.`t` to `shop`.`_t_del`, `shop`.`_t_gho` to `shop`.`t`"
	ghDropGhc   = "drop /* gh-ost */ table if exists `shop`.`_t_ghc`"
)

func TestTranslator_OnlineDDL(t *testing.T) {
	const alterT = "ALTER TABLE `shop`.`t` ADD COLUMN c INT NULL"
	t.Run("pt-online-schema-change", func(t *testing.T) {
		r := newOnlineRun(t, onlineFilter(t), 0, "")
		r.stmt(ptCreate)
		r.stmt(ptAlter)
		r.stmt(ptTrigger)
		r.rows("_t_new") // the copy, and a trigger's row
		r.stmt(ptAnalyze)
		r.stmt(ptRename)
		r.stmt(ptDrop)
		r.stmt("DROP TRIGGER IF EXISTS `shop`.`pt_osc_shop_t_ins`")
		want := []string{"SKIP MariaDB/0-1-1", "SKIP MariaDB/0-1-2", "SKIP MariaDB/0-1-3", "SKIP MariaDB/0-1-4", "SKIP MariaDB/0-1-5",
			"DDL MariaDB/0-1-6 shop " + alterT + " | cut-over " + ptRename,
			"SKIP MariaDB/0-1-7", "SKIP MariaDB/0-1-8"}
		diffLines(t, "events", r.out, want)
		if got, want := r.tr.skip.stats.SkippedOnlineDDLRows.Load(), int64(1); got != want {
			t.Errorf("SkippedOnlineDDLRows = %d, want %d", got, want)
		}
		if got, want := r.tr.skip.stats.SkippedOnlineDDLStatements.Load(), int64(3); got != want {
			t.Errorf("SkippedOnlineDDLStatements = %d, want %d (CREATE, ALTER, DROP)", got, want)
		}
		// Saved: at the CREATE, the ALTER and the cut-over.
		if got, want := len(r.saves), 3; got != want {
			t.Fatalf("states saved %d times, want %d: %q", got, want, r.saves)
		}
		if want := `{"shadows":[{"table":"_t_new","base":"t","created":"MariaDB/0-1-1","alters":[{"id":"MariaDB/0-1-2","spec":"ADD COLUMN c INT NULL"}],"cut_over":"MariaDB/0-1-6"}]}`; r.lastSave() != want {
			t.Errorf("state saved last:\n%s\nwant\n%s", r.lastSave(), want)
		}
	})
	t.Run("gh-ost", func(t *testing.T) {
		r := newOnlineRun(t, onlineFilter(t), 0, "")
		r.stmt(ghChangelog)
		r.stmt(ghCreate)
		r.stmt(ghAlter)
		r.rows("_t_ghc")
		r.rows("_t_gho")
		r.stmt(ghSentry)
		r.stmt(ghDropDel)
		r.stmt(ghRename)
		r.stmt(ghDropDel)
		r.stmt(ghDropGhc)
		want := []string{"SKIP MariaDB/0-1-1", "SKIP MariaDB/0-1-2", "SKIP MariaDB/0-1-3", "SKIP MariaDB/0-1-4", "SKIP MariaDB/0-1-5",
			"SKIP MariaDB/0-1-6", "SKIP MariaDB/0-1-7",
			"DDL MariaDB/0-1-8 shop ALTER TABLE `shop`.`t` add column c int null | cut-over " + ghRename,
			"SKIP MariaDB/0-1-9", "SKIP MariaDB/0-1-10"}
		diffLines(t, "events", r.out, want)
	})
	t.Run("gh-ost cut-over in two steps", func(t *testing.T) {
		r := newOnlineRun(t, onlineFilter(t), 0, "")
		r.stmt(ghCreate)
		r.stmt(ghAlter)
		r.stmt("rename /* gh-ost */ table `shop`.`t` to `shop`.`_t_del`")
		r.stmt("rename /* gh-ost */ table `shop`.`_t_gho` to `shop`.`t`")
		want := []string{"SKIP MariaDB/0-1-1", "SKIP MariaDB/0-1-2", "SKIP MariaDB/0-1-3",
			"DDL MariaDB/0-1-4 shop ALTER TABLE `shop`.`t` add column c int null | cut-over rename /* gh-ost */ table `shop`.`_t_gho` to `shop`.`t`"}
		diffLines(t, "events", r.out, want)
	})
	t.Run("several ALTERs become one", func(t *testing.T) {
		r := newOnlineRun(t, onlineFilter(t), 0, "")
		r.stmt(ghCreate)
		r.stmt(ghAlter)
		r.stmt("alter table `shop`.`_t_gho` add key ic (c)")
		r.stmt(ghRename)
		if got, want := r.out[3], "DDL MariaDB/0-1-4 shop ALTER TABLE `shop`.`t` add column c int null\n, add key ic (c) | cut-over "+ghRename; got != want {
			t.Errorf("cut-over:\n%s\nwant\n%s", got, want)
		}
	})
	t.Run("no ALTER: nothing to change", func(t *testing.T) {
		r := newOnlineRun(t, onlineFilter(t), 0, "")
		r.stmt(ghCreate)
		r.stmt(ghRename)
		diffLines(t, "events", r.out, []string{"SKIP MariaDB/0-1-1", "SKIP MariaDB/0-1-2"})
	})
	t.Run("shadow table created before the start", func(t *testing.T) {
		r := newOnlineRun(t, onlineFilter(t), 1, "")
		r.stmt(ptAlter)
		r.stmt(ptRename)
		// Query is the cut-over itself: the applier refuses it under exec.
		diffLines(t, "events", r.out, []string{"SKIP MariaDB/0-1-2", "DDL MariaDB/0-1-3 shop " + ptRename + " | cut-over " + ptRename})
	})
	t.Run("index created on the shadow table", func(t *testing.T) {
		r := newOnlineRun(t, onlineFilter(t), 0, "")
		r.stmt(ghCreate)
		r.stmt("CREATE INDEX ic ON `shop`.`_t_gho` (a)")
		r.stmt(ghRename)
		diffLines(t, "events", r.out, []string{"SKIP MariaDB/0-1-1", "SKIP MariaDB/0-1-2", "DDL MariaDB/0-1-3 shop " + ghRename + " | cut-over " + ghRename})
	})
	t.Run("abandoned and run again", func(t *testing.T) {
		r := newOnlineRun(t, onlineFilter(t), 0, "")
		r.stmt(ptCreate)
		r.stmt("ALTER TABLE `shop`.`_t_new` ADD COLUMN wrong INT")
		r.stmt("DROP TABLE IF EXISTS `shop`.`_t_new`")
		r.stmt(ptCreate)
		r.stmt(ptAlter)
		r.stmt(ptRename)
		if got, want := r.out[5], "DDL MariaDB/0-1-6 shop "+alterT+" | cut-over "+ptRename; got != want {
			t.Errorf("cut-over:\n%s\nwant\n%s", got, want)
		}
	})
	t.Run("a rename that is no cut-over", func(t *testing.T) {
		r := newOnlineRun(t, onlineFilter(t), 0, "")
		// No shadow table of t is open: t renamed to a trash-like name is the operator's.
		r.stmt("RENAME TABLE t TO _t_old")
		r.stmt("RENAME TABLE _t_new TO u") // the tool's table becoming a plain one: not the tool's
		diffLines(t, "events", r.out, []string{"DDL MariaDB/0-1-1 shop RENAME TABLE t TO _t_old", "DDL MariaDB/0-1-2 shop RENAME TABLE _t_new TO u"})
	})
	t.Run("plain DDL untouched", func(t *testing.T) {
		r := newOnlineRun(t, onlineFilter(t), 0, "")
		r.stmt("ALTER TABLE t ADD COLUMN c INT")
		r.stmt("DROP TABLE `_t_new`, u")
		diffLines(t, "events", r.out, []string{"DDL MariaDB/0-1-1 shop ALTER TABLE t ADD COLUMN c INT", "DDL MariaDB/0-1-2 shop DROP TABLE `_t_new`, u"})
		if len(r.saves) != 0 {
			t.Errorf("states saved: %q, want none", r.saves)
		}
	})
}

// TestTranslator_OnlineDDLRestart: a stream that restarts between the shadow table's ALTER and the
// cut-over, from any position, with the state the previous reader saved last (which may be ahead
// of the position), turns the cut-over into the same ALTER, once.
func TestTranslator_OnlineDDLRestart(t *testing.T) {
	script := []string{ptCreate, ptAlter, ptTrigger, "", ptRename, ptDrop}
	// The whole run, once, for the states saved and the cut-over's event.
	full := newOnlineRun(t, onlineFilter(t), 0, "")
	var saved []string // the state saved last once statement i was read
	for _, q := range script {
		if q == "" {
			full.rows("_t_new")
		} else {
			full.stmt(q)
		}
		saved = append(saved, full.lastSave())
	}
	wantCutOver := full.out[4]
	// Restart from the position after statement from, with the state saved when the reader had
	// read up to statement ahead (ahead >= from: the reader runs ahead of the applier).
	for from := 0; from < 4; from++ {
		for ahead := from; ahead < len(script); ahead++ {
			r := newOnlineRun(t, onlineFilter(t), uint64(from+1), saved[ahead])
			for _, q := range script[from+1:] {
				if q == "" {
					r.rows("_t_new")
				} else {
					r.stmt(q)
				}
			}
			if got := r.out[len(r.out)-2]; got != wantCutOver {
				t.Errorf("restart after statement %d with the state saved after %d: cut-over\n%s\nwant\n%s", from+1, ahead+1, got, wantCutOver)
			}
			if got := r.tr.online.String(); got != full.tr.online.String() {
				t.Errorf("restart after statement %d with the state saved after %d: state\n%s\nwant\n%s", from+1, ahead+1, got, full.tr.online.String())
			}
		}
	}
	// A restart past the cut-over forgets the record.
	r := newOnlineRun(t, onlineFilter(t), 5, saved[len(saved)-1])
	if got := r.tr.online.String(); got != `{"shadows":[]}` {
		t.Errorf("state after a restart past the cut-over: %s, want no record", got)
	}
}

func TestOnlineState_trim(t *testing.T) {
	var s onlineState
	for i := range maxShadowRecords + 5 {
		table := fmt.Sprintf("_t%d_new", i)
		s.created(table, "t", fmt.Sprintf("MariaDB/0-1-%d", i))
		if i%2 == 0 {
			s.dropped(table, fmt.Sprintf("MariaDB/0-2-%d", i))
		}
	}
	if got, want := len(s.Shadows), maxShadowRecords; got != want {
		t.Fatalf("%d records kept, want %d", got, want)
	}
	open := 0
	for _, r := range s.Shadows {
		if !r.ended() {
			open++
		}
	}
	if got, want := open, (maxShadowRecords+5)/2; got != want {
		t.Errorf("%d open records kept, want every one of the %d", got, want)
	}
}
