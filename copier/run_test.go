package copier

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/internal/compare"
	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
	"github.com/vplayer/vplayer/snapshot"
	"github.com/vplayer/vplayer/workflow"
)

// copyEnv is a source database with tables, an empty target database, and a workflow record
// with its lease on the target, for a copier.
type copyEnv struct {
	src, dst *sql.DB
	db       string
	cfg      Config
}

func newCopyEnv(t *testing.T, schema ...string) *copyEnv {
	t.Helper()
	source, target := mysqltest.Pair(t)
	name := mysqltest.DBName(t)
	src := mysqltest.DB(t, source, name)
	mysqltest.DB(t, target, name)
	dst, err := target.Pool(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dst.Close() })
	srcPool, err := source.Pool(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srcPool.Close() })
	for _, q := range schema {
		if _, err := src.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	store := workflow.New(dst, name+"_vt")
	t.Cleanup(func() { dst.Exec("DROP DATABASE IF EXISTS " + name + "_vt") })
	ctx := t.Context()
	if err := store.Init(ctx); err != nil {
		t.Fatal(err)
	}
	rec, _, err := store.Create(ctx, workflow.Record{Workflow: "wf", Source: "{}", Pos: "MariaDB/0-1-1", State: workflow.StateCopying, Options: "{}"})
	if err != nil {
		t.Fatal(err)
	}
	lease, _, err := store.Acquire(ctx, rec.ID, "wf", "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return &copyEnv{src: src, dst: dst, db: name, cfg: Config{
		Source: srcPool, Target: dst, SourceDB: name, TargetDB: name, Store: store, ID: rec.ID, Lease: lease,
		Flavor: binlog.FlavorMariaDB,
	}}
}

// run plans and runs the copy of tables with an idle source: each round's catch-up has nothing
// to apply, and is checked to be at the source's position.
func (e *copyEnv) run(t *testing.T, tables []string) *Copier {
	t.Helper()
	ctx := t.Context()
	if err := Plan(ctx, e.cfg, tables); err != nil {
		t.Fatalf("Plan: %v", err)
	}
	snap, want, err := snapshot.Source(ctx, e.cfg.Source, e.cfg.Flavor)
	if err != nil {
		t.Fatal(err)
	}
	snap.Close()
	c := New(e.cfg)
	rounds := 0
	if err := c.Run(ctx, func(_ context.Context, pos binlog.Position) error {
		rounds++
		if !pos.Equal(want) {
			t.Errorf("round %d at %s, want the idle source's %s", rounds, pos, want)
		}
		return nil
	}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	rs, err := compare.Tables(ctx, e.src, e.dst, e.db, e.db, tables)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if !r.Equal() {
			t.Errorf("%s", r)
		}
	}
	t.Logf("%d rounds", rounds)
	return c
}

// valueTables are the tables of the value tests: integers at their limits, the bytes a LOAD DATA
// line escapes, NULLs, a composite key of a string and an integer, a table without a key, and
// MariaDB's UUID, INET4 and INET6 (a composite key of the first two; bytes 0x00, tab and newline
// in their values; an INET6 whose text is 16 characters, which the target would read as bytes).
var valueTables = []string{
	"CREATE TABLE ints (id bigint NOT NULL PRIMARY KEY, ti tinyint, tu tinyint unsigned, mi mediumint, iu int unsigned, bu bigint unsigned, y year, d decimal(65,30), x double) ENGINE=InnoDB",
	"INSERT INTO ints VALUES (-9223372036854775808, -128, 0, -8388608, 0, 0, 1999, '-99999999999999999999999999999999999.999999999999999999999999999999', -1.7976931348623157e308)," +
		" (0, 0, 0, 0, 0, 0, 1901, 0, 0), (1, 127, 255, 8388607, 4294967295, 18446744073709551615, 2155, '0.000000000000000000000000000001', 4.9406564584124654e-324)," +
		" (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), (9223372036854775807, 1, 1, 1, 1, 1, 2000, 1, 0.1)",
	"CREATE TABLE strs (s varbinary(20) NOT NULL, n int NOT NULL, v varchar(20), b blob, PRIMARY KEY (s, n), KEY (n)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
	"INSERT INTO strs VALUES ('a', 1, 'x\\ty\\nz', 'a\\\\b\\0c'), ('a', 2, '', ''), ('a\\tb', -1, NULL, NULL), ('\\0', 0, '\\\\N', '\\\\'), ('zz', 5, 'ü😀', 0x00FF0A09)",
	"CREATE TABLE nokey (a int, b varchar(10)) ENGINE=InnoDB",
	"INSERT INTO nokey VALUES (1, 'x'), (1, 'x'), (NULL, NULL), (2, 'y\tz')",
	"CREATE TABLE maria (u uuid NOT NULL, a4 inet4 NOT NULL, a6 inet6, PRIMARY KEY (u, a4)) ENGINE=InnoDB",
	"INSERT INTO maria VALUES ('00000000-0000-0000-0000-000000000000', '0.0.0.0', '::'), ('00000000-0000-0000-0000-000000000000', '10.0.0.0', NULL)," +
		" ('6ccd780c-baba-1026-9564-5b8c656024db', '255.255.255.255', 'fe80::1:2:3:4:5a'), ('f47ac10b-58cc-4372-a567-0e02b2c30000', '10.9.0.0', '::ffff:10.0.0.1')," +
		" ('01890a5d-ac96-774b-bcce-b302099a8057', '0.0.0.10', '2001:db8::')",
}

// TestCopier_Run_loadValues: the values LOAD DATA writes read back byte for byte: integers at
// their limits, the bytes a LOAD DATA line escapes, NULLs, in chunks of two rows over several rounds, keys read from their
// column (the integer key) and beside it (the composite key of a string and an integer).
func TestCopier_Run_loadValues(t *testing.T) {
	e := newCopyEnv(t, valueTables...)
	e.cfg.ChunkRows = 2
	c := e.run(t, []string{"ints", "maria", "nokey", "strs"})
	if got, want := c.RowsCopied(), int64(19); got != want {
		t.Errorf("RowsCopied()=%d, want %d", got, want)
	}
	var keys string
	if err := e.dst.QueryRowContext(t.Context(), "SELECT GROUP_CONCAT(INDEX_NAME) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'strs' AND INDEX_NAME <> 'PRIMARY'", e.db).Scan(&keys); err != nil || !strings.Contains(keys, "n") {
		t.Errorf("strs' secondary keys %q (%v), want its deferred key n built", keys, err)
	}
}

// TestCopier_Run_localInfileOff: on a target with local_infile off, every chunk is written with
// INSERTs (no LOAD DATA reaches the server) and the values read back byte for byte as through
// LOAD DATA.
func TestCopier_Run_localInfileOff(t *testing.T) {
	e := newCopyEnv(t, valueTables...)
	ctx := t.Context()
	var was int
	if err := e.dst.QueryRowContext(ctx, "SELECT @@GLOBAL.local_infile").Scan(&was); err != nil {
		t.Fatal(err)
	}
	if _, err := e.dst.ExecContext(ctx, "SET GLOBAL local_infile = 0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.dst.Exec("SET GLOBAL local_infile = ?", was) })
	loads := func() int64 {
		var name string
		var n int64
		if err := e.dst.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Com_load'").Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := loads()
	e.cfg.ChunkRows = 2
	c := e.run(t, []string{"ints", "maria", "nokey", "strs"})
	if got, want := c.RowsCopied(), int64(19); got != want {
		t.Errorf("RowsCopied()=%d, want %d", got, want)
	}
	if n := loads() - before; n != 0 {
		t.Errorf("%d LOAD DATA statements ran on a target with local_infile off, want none", n)
	}
}
