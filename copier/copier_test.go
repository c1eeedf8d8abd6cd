package copier

import (
	"database/sql"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vplayer/vplayer/workflow"
)

// TestCopier_Work: the watchdog sees the oldest round trip in flight on any writer, whatever the
// reader did since, and the reader's own progress when no round trip is in flight.
func TestCopier_Work(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := t0
	c := New(Config{Now: func() time.Time { return now }})
	if w := c.Work(); !w.ProgressSince.IsZero() || w.Statement != "" {
		t.Errorf("idle copier: %+v, want no work", w)
	}
	c.progressed()
	c.running("SELECT `db`.`t`")
	if w := c.Work(); !w.ProgressSince.Equal(t0) || w.Statement != "SELECT `db`.`t`" {
		t.Errorf("reading: %+v, want progress at t0 in the SELECT", w)
	}
	a, b := &writer{c: c}, &writer{c: c}
	ws := []*writer{a, b}
	c.writers.Store(&ws)
	sa, sb := "INSERT `db`.`a`", "INSERT `db`.`b`"
	a.statement.Store(&sa)
	a.statementSince.Store(t0.Add(time.Second).UnixNano())
	b.statement.Store(&sb)
	b.statementSince.Store(t0.Add(2 * time.Second).UnixNano())
	now = t0.Add(3 * time.Second)
	c.progressed() // the reader moves on while a's INSERT waits
	w := c.Work()
	if !w.ProgressSince.Equal(t0.Add(time.Second)) || w.Statement != sa {
		t.Errorf("two writers busy: %+v, want a's INSERT since t0+1s", w)
	}
	a.statementSince.Store(0)
	a.statement.Store(nil)
	if w := c.Work(); !w.ProgressSince.Equal(t0.Add(2*time.Second)) || w.Statement != sb {
		t.Errorf("b busy: %+v, want b's INSERT since t0+2s", w)
	}
	b.statementSince.Store(0)
	b.statement.Store(nil)
	c.idle()
	if w := c.Work(); !w.ProgressSince.IsZero() {
		t.Errorf("between rounds: %+v, want no work", w)
	}
}

func TestMessage(t *testing.T) {
	got := Message([]workflow.TableCopy{
		{Table: "a", Rows: 10, Estimated: 10, Done: true},
		{Table: "b", Rows: 5, Estimated: 100},
	})
	if want := "copying: 1 of 2 tables done; b 5/~100 rows"; got != want {
		t.Errorf("Message()=%q, want %q", got, want)
	}
	if Done(nil) != true || Done([]workflow.TableCopy{{Done: false}}) {
		t.Errorf("Done: want true for none, false for a table not done")
	}
}

// TestDeferrableKeys: only the plain secondary keys of an InnoDB table with a primary key and no
// foreign keys are built after the copy; unique, full-text and spatial keys stay, and so do every
// key of a table without a primary key (the binlog's changes find their rows through them) or
// with foreign keys.
func TestDeferrableKeys(t *testing.T) {
	for _, tc := range []struct {
		name, ddl string
		want      []string
	}{
		{"sysbench", "CREATE TABLE `sbtest1` (\n  `id` int(11) NOT NULL AUTO_INCREMENT,\n  `k` int(11) NOT NULL DEFAULT 0,\n  `c` char(120) NOT NULL DEFAULT '',\n  PRIMARY KEY (`id`),\n  KEY `k_1` (`k`)\n) ENGINE=InnoDB AUTO_INCREMENT=7 DEFAULT CHARSET=latin1",
			[]string{"KEY `k_1` (`k`)"}},
		{"several, unique and full-text kept", "CREATE TABLE `t` (\n  `id` int NOT NULL,\n  `a` varchar(50) DEFAULT NULL,\n  `b` text,\n  PRIMARY KEY (`id`),\n  UNIQUE KEY `a` (`a`),\n  KEY `a b``x` (`a`(10),`id`) COMMENT 'x',\n  KEY `ab` (`a`,`b`(20)),\n  FULLTEXT KEY `ft` (`b`)\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
			[]string{"KEY `a b``x` (`a`(10),`id`) COMMENT 'x'", "KEY `ab` (`a`,`b`(20))"}},
		{"no primary key", "CREATE TABLE `t` (\n  `a` int DEFAULT NULL,\n  KEY `a` (`a`)\n) ENGINE=InnoDB", nil},
		{"foreign key", "CREATE TABLE `c` (\n  `id` int NOT NULL,\n  `p` int DEFAULT NULL,\n  PRIMARY KEY (`id`),\n  KEY `p` (`p`),\n  CONSTRAINT `c_ibfk_1` FOREIGN KEY (`p`) REFERENCES `p` (`id`)\n) ENGINE=InnoDB", nil},
		{"not InnoDB", "CREATE TABLE `t` (\n  `id` int NOT NULL,\n  `a` int DEFAULT NULL,\n  PRIMARY KEY (`id`),\n  KEY `a` (`a`)\n) ENGINE=MyISAM", nil},
	} {
		if got := deferrableKeysOf(tc.ddl); !slices.Equal(got, tc.want) {
			t.Errorf("%s: deferred %q, want %q", tc.name, got, tc.want)
		}
	}
	for def, want := range map[string]string{"KEY `k_1` (`k`)": "`k_1`", "KEY `a b``x` (`a`(10),`id`) COMMENT 'x'": "`a b``x`"} {
		if got := keyName(def); got != want {
			t.Errorf("keyName(%q) = %q, want %q", def, got, want)
		}
		if got, want := unquote(keyName(def)), strings.ReplaceAll(strings.Trim(want, "`"), "``", "`"); got != want {
			t.Errorf("unquote(keyName(%q)) = %q, want %q", def, got, want)
		}
	}
}

// TestAppendLoadRow: a row's LOAD DATA line escapes what the statement's FIELDS and LINES
// clauses give a meaning to (the escape character, tab, newline, NUL) and writes NULL as \N, so
// that the server reads back every byte; an empty string stays empty, not NULL.
func TestAppendLoadRow(t *testing.T) {
	tb := &table{cols: []column{{name: "a", value: valueNumber}, {name: "b", value: valueBytes}, {name: "c", value: valueBytes}, {name: "d", value: valueBytes}}}
	got := string(tb.appendLoadRow(nil, []sql.RawBytes{sql.RawBytes("-12.5"), sql.RawBytes("x\ty\nz\\w\x00\r'\""), nil, sql.RawBytes("")}))
	if want := "-12.5\tx\\ty\\nz\\\\w\\0\r'\"\t\\N\t\n"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
}

// BenchmarkAppendLoadRow: one sysbench row (two integers, c and pad) as a LOAD DATA line.
func BenchmarkAppendLoadRow(b *testing.B) {
	tb := &table{cols: []column{{name: "id", value: valueNumber}, {name: "k", value: valueNumber}, {name: "c", value: valueBytes}, {name: "pad", value: valueBytes}}}
	vals := []sql.RawBytes{sql.RawBytes("123456"), sql.RawBytes("75012"),
		sql.RawBytes("68487932199-96439406143-93774651418-41631865787-96406072701-20604855487-25459966574-28203206787-41238978918-19503783441"),
		sql.RawBytes("22195207048-70116052123-74140395089-76317954521-98694025897")}
	line := make([]byte, 0, 512)
	b.SetBytes(int64(len(tb.appendLoadRow(nil, vals))))
	for b.Loop() {
		line = tb.appendLoadRow(line[:0], vals)
	}
}

// TestBulkInserts: the servers whose bulk insert into an empty table the copy turns on, as
// their @@version reads.
func TestBulkInserts(t *testing.T) {
	for _, c := range []struct {
		version string
		want    bool
	}{
		{"10.11.19-MariaDB-0+deb12u1", true},
		{"10.11.11-MariaDB", true},
		{"10.11.10-MariaDB-log", false},
		{"10.6.20-MariaDB", false},
		{"11.4.5-MariaDB", true},
		{"11.4.4-MariaDB", false},
		{"11.5.2-MariaDB", false},
		{"11.7.2-MariaDB", true},
		{"12.0.1-MariaDB", true},
		{"8.0.36", false},
		{"8.4.3-commercial", false},
		{"garbage-MariaDB", false},
	} {
		if got := bulkInserts(c.version); got != c.want {
			t.Errorf("bulkInserts(%q) = %v, want %v", c.version, got, c.want)
		}
	}
}
