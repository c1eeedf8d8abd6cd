package snapshot_test

import (
	"testing"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
	"github.com/vplayer/vplayer/snapshot"
)

func TestMain(m *testing.M) { mysqltest.Main(m) }

// TestSourceSnapshot: on an idle source, the snapshot's position is the source's GTID position,
// and its file and offset form in FilePos workflows.
func TestSourceSnapshot(t *testing.T) {
	source, _ := mysqltest.Pair(t)
	src := mysqltest.DB(t, source, mysqltest.DBName(t))
	for _, q := range []string{"CREATE TABLE t (id int PRIMARY KEY)", "INSERT INTO t VALUES (1)"} {
		if _, err := src.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var gtid string
	if err := src.QueryRowContext(t.Context(), "SELECT @@GLOBAL.gtid_binlog_pos").Scan(&gtid); err != nil {
		t.Fatal(err)
	}
	want, err := binlog.ParsePosition(gtid, "mariadb")
	if err != nil {
		t.Fatal(err)
	}
	s, pos, err := snapshot.Source(t.Context(), src, binlog.FlavorMariaDB)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if !pos.Equal(want) {
		t.Errorf("snapshot position %s, want the source's %s", pos, want)
	}
	s, pos, err = snapshot.Source(t.Context(), src, binlog.FlavorFilePos)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if pos.Flavor != binlog.FlavorFilePos || pos.File == "" || pos.Offset < 4 {
		t.Errorf("FilePos snapshot position %+v, want a file and an offset", pos)
	}
}

// TestSnapshot_Another: another snapshot of an idle source sees what the first sees, and reads
// its rows; once the source commits after the first, another one is refused.
func TestSnapshot_Another(t *testing.T) {
	source, _ := mysqltest.Pair(t)
	src := mysqltest.DB(t, source, mysqltest.DBName(t))
	ctx := t.Context()
	for _, q := range []string{"CREATE TABLE t (id int PRIMARY KEY)", "INSERT INTO t VALUES (1)"} {
		if _, err := src.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, flavor := range []string{binlog.FlavorMariaDB, binlog.FlavorFilePos} {
		first, _, err := snapshot.Source(ctx, src, flavor)
		if err != nil {
			t.Fatal(err)
		}
		more, err := first.Another(ctx, src)
		if err != nil || more == nil {
			t.Fatalf("%s: Another on an idle source = %v, %v; want a snapshot", flavor, more, err)
		}
		if _, err := src.ExecContext(ctx, "INSERT INTO t SELECT MAX(id) + 1 FROM t"); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := more.Conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM t").Scan(&n); err != nil {
			t.Fatal(err)
		}
		var all int
		if err := first.Conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM t").Scan(&all); err != nil {
			t.Fatal(err)
		}
		if n != all {
			t.Errorf("%s: the other snapshot sees %d rows, the first %d", flavor, n, all)
		}
		more.Close()
		late, err := first.Another(ctx, src)
		if err != nil || late != nil {
			t.Errorf("%s: Another after a commit = %v, %v; want none", flavor, late, err)
		}
		late.Close()
		first.Close()
	}
}

// TestBinlogFile: on a source that knows SHOW MASTER STATUS (MariaDB), BinlogFile reads its file
// and offset (the offset only checked to be one: other tests share the source).
func TestBinlogFile(t *testing.T) {
	source, _ := mysqltest.Pair(t)
	src := mysqltest.DB(t, source, mysqltest.DBName(t))
	var want struct {
		file   string
		offset uint64
	}
	rows, err := src.QueryContext(t.Context(), "SHOW MASTER STATUS")
	if err != nil {
		t.Fatal(err)
	}
	cols, _ := rows.Columns()
	dest := make([]any, len(cols))
	dest[0], dest[1] = &want.file, &want.offset
	for i := 2; i < len(dest); i++ {
		dest[i] = new(any)
	}
	if !rows.Next() {
		t.Fatal("SHOW MASTER STATUS: no row")
	}
	if err := rows.Scan(dest...); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	file, offset, err := snapshot.BinlogFile(t.Context(), src)
	if err != nil {
		t.Fatal(err)
	}
	if file != want.file || offset < 4 {
		t.Errorf("BinlogFile() = %s:%d, want %s and an offset", file, offset, want.file)
	}
}
