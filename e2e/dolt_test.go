package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/vplayer/vplayer/stream/preflight"
)

// doltTypes is the type mix replicated from Dolt: what Dolt stores as MySQL does (see
// docs/support.md for what it does not).
var doltTypes = []string{
	`CREATE TABLE types (
  id int NOT NULL PRIMARY KEY,
  ti tinyint, tiu tinyint unsigned, si smallint, siu smallint unsigned, mi mediumint, miu mediumint unsigned,
  i int, iu int unsigned, bi bigint, biu bigint unsigned,
  dec1 decimal(65,30), dec2 decimal(10,2),
  f float, d double,
  bt bit(13),
  dt date, dtm datetime(6), dt0 datetime, ts timestamp(3) NULL DEFAULT NULL, tm time(6), y year,
  c char(10), vc varchar(100), tx text, l1 varchar(20) CHARACTER SET latin1,
  bin binary(6), vb varbinary(20), bl blob,
  e enum('a','b','c'), st set('x','y','z')
)`,
	`CREATE TABLE docs (id int NOT NULL PRIMARY KEY, doc json)`,
}

var doltRows = []string{
	`INSERT INTO types VALUES
 (1, -128, 255, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295, -9223372036854775808, 18446744073709551615,
  '-12345678901234567890123456789012345.123456789012345678901234567890', 99999999.99,
  -3.5, 2.2250738585072014e-308,
  b'1010101010101',
  '1000-01-01', '9999-12-31 23:59:59.999999', '2024-02-29 12:00:00', '2038-01-19 03:14:07.999', '-838:59:59.000000', 1901,
  'ab', 'héllo wörld ✓', 'a longer text', 'caf\xe9',
  X'000102000000', X'00ff00', X'00000000ff',
  'b', 'x,z'),
 (2, 127, 0, 32767, 0, 8388607, 0, 2147483647, 0, 9223372036854775807, 0,
  '0.000000000000000000000000000001', 0.00,
  3.4028234663852886e38, 1.7976931348623157e308,
  b'0',
  '2000-01-01', '1970-01-01 00:00:01.000001', '1999-12-31 23:59:59', '1970-01-01 00:00:01.000', '838:59:59.999999', 2155,
  '', '', '', '',
  X'', X'', X'',
  'a', ''),
 (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
	`INSERT INTO docs VALUES (1, '{"a": 1, "b": [1.5, -2, "x", null, true], "c": {"d": "é"}}'), (2, '[]'), (3, '"text"'), (4, NULL), (5, '12345678901')`,
}

// TestDolt_TypesChangesAndDDL: a MySQL-flavour source (Dolt) → MariaDB: the type mix inserted,
// updated and deleted by key, then a DDL executed (--on-ddl exec) and rows after it; target ==
// source byte for byte, JSON by value.
func TestDolt_TypesChangesAndDDL(t *testing.T) {
	e := newDoltEnv(t)
	e.execBoth(doltTypes...)
	cfg := e.streamConfig()
	cfg.OnDDL = "exec"
	stop := e.runStream(cfg)
	e.waitRunning(30 * time.Second)

	e.execSource(doltRows...)
	e.execSource(
		`UPDATE types SET vc = 'changed', i = i - 1, dtm = '2001-02-03 04:05:06.7', bl = X'0000', st = 'y' WHERE id = 1`,
		`UPDATE types SET id = 20, d = -0.0 WHERE id = 2`,
		`DELETE FROM types WHERE id = 3`,
		`UPDATE docs SET doc = JSON_SET(doc, '$.a', 2.25) WHERE id = 1`,
		`DELETE FROM docs WHERE id = 3`,
		`ALTER TABLE types ADD COLUMN extra varchar(10) DEFAULT 'dflt'`,
		`INSERT INTO types (id, vc, extra) VALUES (4, 'after ddl', 'new')`,
		`UPDATE types SET extra = 'upd' WHERE id = 1`,
	)
	e.waitCaughtUp(60 * time.Second)
	e.assertTablesEqual("id", "types")
	e.assertJSONEqual("docs", "id", "doc")
	if got, want := e.count(e.dst, "types"), 3; got != want {
		t.Errorf("target has %d rows in types, want %d", got, want)
	}
	if err := stop(); err != nil {
		t.Errorf("stream: %v", err)
	}
}

// TestDolt_Preflight: the preflight's MySQL path passes against Dolt, and names a missing target
// table.
func TestDolt_Preflight(t *testing.T) {
	e := newDoltEnv(t)
	e.execBoth(`CREATE TABLE a (id int PRIMARY KEY, v varchar(10))`)
	e.execSource(`CREATE TABLE b (id int PRIMARY KEY)`)
	cfg := e.streamConfig()
	cfg.Source.Tables = []string{"a"}
	if err := preflight.Check(e.ctx(), cfg.Preflight()); err != nil {
		t.Errorf("preflight against Dolt: %v", err)
	}
	cfg.Source.Tables = nil
	err := preflight.Check(e.ctx(), cfg.Preflight())
	if err == nil || !strings.Contains(err.Error(), "table "+e.db+".b does not exist") {
		t.Errorf("preflight with table b missing on the target = %v, want it named", err)
	}
}
