package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vplayer/vplayer/sqlq"
	"github.com/vplayer/vplayer/workflow"
)

// MariaDB's UUID, INET6 and INET4 travel in the binlog as BINARY(16), BINARY(16) and BINARY(4)
// without their trailing 0x00 bytes; the copy reads them, and the diff compares them, where
// their text under SET NAMES binary would be read as bytes. The values below cover every
// version of UUID the server stores in another byte order than it prints (RFC 4122 variant,
// versions 1 to 5) and those it does not (versions 6 and 7, other variants), values that end in
// 0x00 bytes (down to all of them), and an INET6 whose text is exactly 16 characters.
var (
	mariaUUIDs = []string{
		"6ccd780c-baba-1026-9564-5b8c656024db", // v1
		"123e4567-e89b-12d3-a456-426614174000", // v1, one 0x00 byte at the end
		"9f1c2a44-8b3d-4e5f-a607-18293a4b5c6d", // v4
		"f47ac10b-58cc-4372-a567-0e02b2c30000", // v4, two 0x00 bytes at the end
		"00000000-0000-0000-0000-000000000000", // all zero: the binlog carries no byte
		"10000000-0000-0000-0000-000000000000", // one byte, then zeros
		"00000000-0000-0000-0000-000000000001",
		"1ef21d2f-1207-6660-8c4f-419efbd44d48", // v6
		"01890a5d-ac96-774b-bcce-b302099a8057", // v7
		"00000001-0000-1000-0000-000000000000", // v1 bits in the NCS variant: not swapped
		"ffffffff-ffff-ffff-ffff-ffffffffffff",
		"3c2f8d1e-5a6b-3c7d-8e9f-a0b1c2d3e4f5", // v3
		"7d444840-9dc0-51d1-a7e2-0000000000ff", // v5
	}
	mariaINET6s = []string{
		"::", "::1", "::ffff:10.0.0.1", "2001:db8:85a3:8d3:1319:8a2e:370:7348", "2001:db8::",
		"fe80::1:2:3:4:5a", // 16 characters: read as its bytes, it would be another address
		"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "1::",
	}
	mariaINET4s = []string{"0.0.0.0", "10.0.0.0", "255.255.255.255", "10.0.0.1", "192.168.1.0", "1.0.0.0"}
)

// mariaTables are the tables of TestMariaDBTypes, as the source defines them: each type as the
// primary key and in other columns, a table without any key (rows matched by every column), one
// whose copy takes INSERTs rather than LOAD DATA (its BIT column), and swapped, which the target
// defines with BINARY(16) and BINARY(4) where the source has UUID and INET4, and the reverse.
var mariaTables = []struct{ name, src, dst string }{
	{"uuid_pk", "u UUID NOT NULL PRIMARY KEY, v INT NULL, u2 UUID NULL, a6 INET6 NULL, a4 INET4 NULL", ""},
	{"inet6_pk", "a INET6 NOT NULL PRIMARY KEY, v INT NULL, u UUID NULL", ""},
	{"inet4_pk", "a INET4 NOT NULL PRIMARY KEY, v INT NULL, a6 INET6 NULL", ""},
	{"composite", "u UUID NOT NULL, a4 INET4 NOT NULL, v INT NULL, PRIMARY KEY (u, a4), UNIQUE KEY a4u (a4, u)", ""},
	{"nokey", "u UUID NULL, a6 INET6 NULL, a4 INET4 NULL, v INT NULL", ""},
	{"inserted", "u UUID NOT NULL PRIMARY KEY, b BIT(3) NULL, a6 INET6 NULL", ""},
	{"swapped", "id INT NOT NULL PRIMARY KEY, u UUID NULL, bu BINARY(16) NULL, a4 INET4 NULL, b4 BINARY(4) NULL, a6 INET6 NULL",
		"id INT NOT NULL PRIMARY KEY, u BINARY(16) NULL, bu UUID NULL, a4 BINARY(4) NULL, b4 INET4 NULL, a6 BINARY(16) NULL"},
}

// mariaQuote quotes each value as an SQL string, "NULL" as NULL.
func mariaQuote(v string) string {
	if v == "NULL" {
		return v
	}
	return sqlq.String(v)
}

// uuidBytes and inet4Bytes are expressions of the bytes of a UUID and an INET4 written as text,
// for a BINARY column (a UUID or INET4 value stored into one is stored as its text).
func uuidBytes(u string) string { return "UNHEX(REPLACE('" + u + "', '-', ''))" }

func inet4Bytes(a string) string { return "INET6_ATON('" + a + "')" }

// mariaFill is the rows the source holds before the copy: every value of each type, as keys and
// in other columns, with NULLs.
func mariaFill() []string {
	var q []string
	nu, n6, n4 := len(mariaUUIDs), len(mariaINET6s), len(mariaINET4s)
	var rows []string
	for i, u := range mariaUUIDs {
		u2, a6, a4 := mariaUUIDs[(i+1)%nu], mariaINET6s[i%n6], mariaINET4s[i%n4]
		if i%4 == 3 {
			u2, a6, a4 = "NULL", "NULL", "NULL"
		}
		rows = append(rows, fmt.Sprintf("(%s, %d, %s, %s, %s)", mariaQuote(u), i, mariaQuote(u2), mariaQuote(a6), mariaQuote(a4)))
	}
	q = append(q, "INSERT INTO uuid_pk VALUES "+strings.Join(rows, ", "))
	rows = rows[:0]
	for i, a := range mariaINET6s {
		rows = append(rows, fmt.Sprintf("(%s, %d, %s)", mariaQuote(a), i, mariaQuote(mariaUUIDs[i%nu])))
	}
	q = append(q, "INSERT INTO inet6_pk VALUES "+strings.Join(rows, ", "))
	rows = rows[:0]
	for i, a := range mariaINET4s {
		rows = append(rows, fmt.Sprintf("(%s, %d, %s)", mariaQuote(a), i, mariaQuote(mariaINET6s[i%n6])))
	}
	q = append(q, "INSERT INTO inet4_pk VALUES "+strings.Join(rows, ", "))
	rows = rows[:0]
	for i, u := range mariaUUIDs {
		for j := 0; j < 2; j++ {
			rows = append(rows, fmt.Sprintf("(%s, %s, %d)", mariaQuote(u), mariaQuote(mariaINET4s[(i+j)%n4]), i*10+j))
		}
	}
	q = append(q, "INSERT INTO composite VALUES "+strings.Join(rows, ", "))
	rows = rows[:0]
	for i, u := range mariaUUIDs {
		a6, a4 := mariaQuote(mariaINET6s[i%n6]), mariaQuote(mariaINET4s[i%n4])
		if i%3 == 2 {
			a6 = "NULL"
		}
		rows = append(rows, fmt.Sprintf("(%s, %s, %s, %d)", mariaQuote(u), a6, a4, i%3))
	}
	// Two rows that are exact duplicates, and a row of NULLs.
	rows = append(rows, rows[0], "(NULL, NULL, NULL, NULL)")
	q = append(q, "INSERT INTO nokey VALUES "+strings.Join(rows, ", "))
	rows = rows[:0]
	for i, u := range mariaUUIDs {
		rows = append(rows, fmt.Sprintf("(%s, b'%03b', %s)", mariaQuote(u), i%8, mariaQuote(mariaINET6s[i%n6])))
	}
	q = append(q, "INSERT INTO inserted VALUES "+strings.Join(rows, ", "))
	rows = rows[:0]
	for i, u := range mariaUUIDs {
		a4 := mariaINET4s[i%n4]
		rows = append(rows, fmt.Sprintf("(%d, %s, %s, %s, %s, %s)",
			i, mariaQuote(u), uuidBytes(u), mariaQuote(a4), inet4Bytes(a4), mariaQuote(mariaINET6s[i%n6])))
	}
	rows = append(rows, "(100, NULL, NULL, NULL, NULL, NULL)")
	q = append(q, "INSERT INTO swapped VALUES "+strings.Join(rows, ", "))
	return q
}

// mariaChanges are the changes the stream applies after the copy: inserts, updates of other
// columns and of keys (to and from values that end in 0x00 bytes), NULLs set and cleared, and
// deletes, some in one transaction.
var mariaChanges = [][]string{
	{
		"INSERT INTO uuid_pk VALUES (UUID(), 100, UUID(), '::2', '0.0.0.2'), ('a0000000-0000-4000-8000-000000000000', 101, NULL, '::', '0.0.0.0')",
		"UPDATE uuid_pk SET v = v + 1000, u2 = '00000000-0000-0000-0000-000000000000', a6 = '::ffff:10.0.0.1', a4 = '10.0.0.0' WHERE v = 5",
		"UPDATE uuid_pk SET u2 = NULL, a6 = NULL, a4 = NULL WHERE u = '9f1c2a44-8b3d-4e5f-a607-18293a4b5c6d'",
		"UPDATE uuid_pk SET u2 = u, a6 = '2001:db8::', a4 = '255.255.255.255' WHERE u2 IS NULL AND v < 100",
	},
	{
		// Keys changed: to all zero (free after the delete), and away from it.
		"DELETE FROM uuid_pk WHERE u = '00000000-0000-0000-0000-000000000000'",
		"UPDATE uuid_pk SET u = '00000000-0000-0000-0000-000000000000' WHERE u = '123e4567-e89b-12d3-a456-426614174000'",
		"UPDATE uuid_pk SET u = '123e4567-e89b-12d3-a456-426614170000' WHERE u = 'f47ac10b-58cc-4372-a567-0e02b2c30000'",
		"DELETE FROM uuid_pk WHERE u IN ('6ccd780c-baba-1026-9564-5b8c656024db', '01890a5d-ac96-774b-bcce-b302099a8057')",
	},
	{
		"INSERT INTO inet6_pk VALUES ('::2', 50, NULL), ('fe80::', 51, '00000000-0000-0000-0000-000000000000')",
		"UPDATE inet6_pk SET a = '::3', u = 'ffffffff-ffff-ffff-ffff-ffffffffffff' WHERE a = '::'",
		"UPDATE inet6_pk SET a = '::' WHERE a = '::1'",
		"UPDATE inet6_pk SET u = NULL WHERE a = '2001:db8::'",
		"DELETE FROM inet6_pk WHERE a IN ('fe80::1:2:3:4:5a', '1::')",
	},
	{
		"INSERT INTO inet4_pk VALUES ('0.0.0.1', 50, '::'), ('127.0.0.0', 51, NULL)",
		"UPDATE inet4_pk SET a = '0.0.0.9' WHERE a = '0.0.0.0'",
		"UPDATE inet4_pk SET a = '0.0.0.0', a6 = 'fe80::1:2:3:4:5a' WHERE a = '10.0.0.0'",
		"UPDATE inet4_pk SET v = v + 1 WHERE a = '255.255.255.255'",
		"DELETE FROM inet4_pk WHERE a = '192.168.1.0'",
	},
	{
		"UPDATE composite SET v = v + 1 WHERE a4 = '10.0.0.0'",
		"UPDATE composite SET a4 = '0.0.0.0' WHERE u = 'f47ac10b-58cc-4372-a567-0e02b2c30000' AND a4 = '192.168.1.0'",
		"DELETE FROM composite WHERE u = '00000000-0000-0000-0000-000000000000'",
		"INSERT INTO composite VALUES ('00000000-0000-0000-0000-000000000000', '0.0.0.0', 7)",
	},
	{
		"INSERT INTO nokey VALUES ('00000000-0000-0000-0000-000000000000', '::', '0.0.0.0', 9), (NULL, NULL, NULL, NULL)",
		"UPDATE nokey SET v = 20 WHERE u = '6ccd780c-baba-1026-9564-5b8c656024db' LIMIT 1",
		"UPDATE nokey SET a6 = '::1', a4 = '10.0.0.0' WHERE u = '00000000-0000-0000-0000-000000000000' AND v = 9",
		"UPDATE nokey SET u = '123e4567-e89b-12d3-a456-426614174000' WHERE u IS NULL LIMIT 1",
		"DELETE FROM nokey WHERE a4 = '255.255.255.255'",
		"DELETE FROM nokey WHERE a6 IS NULL AND u IS NOT NULL LIMIT 1",
	},
	{
		"UPDATE inserted SET b = b'111', a6 = NULL WHERE u = '10000000-0000-0000-0000-000000000000'",
		"DELETE FROM inserted WHERE a6 = '::'",
	},
	{
		"INSERT INTO swapped VALUES (200, '00000000-0000-0000-0000-000000000000', " + uuidBytes("00000000-0000-0000-0000-000000000000") + ", '10.0.0.0', " + inet4Bytes("10.0.0.0") + ", '::')",
		"INSERT INTO swapped VALUES (201, '123e4567-e89b-12d3-a456-426614174000', " + uuidBytes("123e4567-e89b-12d3-a456-426614174000") + ", '0.0.0.0', " + inet4Bytes("0.0.0.0") + ", '2001:db8::')",
		"UPDATE swapped SET u = 'f47ac10b-58cc-4372-a567-0e02b2c30000', bu = " + uuidBytes("f47ac10b-58cc-4372-a567-0e02b2c30000") + ", a4 = '255.255.255.255', b4 = " + inet4Bytes("255.255.255.255") + " WHERE id = 1",
		"UPDATE swapped SET u = NULL, bu = NULL, a4 = NULL, b4 = NULL, a6 = NULL WHERE id = 2",
		"DELETE FROM swapped WHERE id = 3",
	},
}

// mariaChecks are values the target must hold as the server prints them, so that a comparison of
// bytes that were both wrong the same way cannot pass.
var mariaChecks = []struct{ query, want string }{
	{"SELECT COUNT(*) FROM uuid_pk WHERE u = '00000000-0000-0000-0000-000000000000' AND v = 1", "1"},
	{"SELECT CAST(u2 AS CHAR) FROM uuid_pk WHERE u = '00000000-0000-0000-0000-000000000000'", "9f1c2a44-8b3d-4e5f-a607-18293a4b5c6d"},
	{"SELECT CAST(u AS CHAR) FROM uuid_pk WHERE v = 3", "123e4567-e89b-12d3-a456-426614170000"},
	{"SELECT CONCAT_WS(' ', u2, a6, a4) FROM uuid_pk WHERE v = 1005", "00000000-0000-0000-0000-000000000000 ::ffff:10.0.0.1 10.0.0.0"},
	{"SELECT CONCAT_WS(' ', u, a6, a4) FROM uuid_pk WHERE v = 101", "a0000000-0000-4000-8000-000000000000 :: 0.0.0.0"},
	{"SELECT CAST(u AS CHAR) FROM inet6_pk WHERE a = '::3'", "ffffffff-ffff-ffff-ffff-ffffffffffff"},
	{"SELECT v FROM inet6_pk WHERE a = '::'", "1"},
	{"SELECT COUNT(*) FROM inet6_pk WHERE a = 'fe80::1:2:3:4:5a'", "0"},
	{"SELECT CAST(a6 AS CHAR) FROM inet4_pk WHERE a = '0.0.0.0'", "fe80::1:2:3:4:5a"},
	{"SELECT v FROM inet4_pk WHERE a = '0.0.0.9'", "0"},
	{"SELECT v FROM composite WHERE u = '00000000-0000-0000-0000-000000000000' AND a4 = '0.0.0.0'", "7"},
	{"SELECT COUNT(*) FROM nokey WHERE u IS NULL", "1"},
	{"SELECT CONCAT_WS(' ', a6, a4) FROM nokey WHERE v = 9", "::1 10.0.0.0"},
	{"SELECT HEX(u) FROM swapped WHERE id = 0", "6CCD780CBABA102695645B8C656024DB"},
	{"SELECT CONCAT_WS(' ', bu, b4) FROM swapped WHERE id = 201", "123e4567-e89b-12d3-a456-426614174000 0.0.0.0"},
	{"SELECT HEX(a4) FROM swapped WHERE id = 200", "0A000000"},
	{"SELECT HEX(u) FROM swapped WHERE id = 201", "123E4567E89B12D3A456426614174000"},
	{"SELECT HEX(a6) FROM swapped WHERE id = 200", strings.Repeat("00", 16)},
}

// TestMariaDBTypes: tables with MariaDB's UUID, INET6 and INET4 columns, as keys and not, are
// copied in chunks of two rows onto a target that lacks them (the swapped table onto one whose
// columns are BINARY(16) and BINARY(4) where the source's are UUID and INET4, and the reverse),
// then inserted, updated and deleted on the source through the stream; `vplayer diff`, in
// chunks of two keys, finds the target equal, then finds a value changed and a row deleted on
// the target by their keys; the target ends byte for byte identical to the source.
func TestMariaDBTypes(t *testing.T) {
	e := newEnv(t)
	var names, same []string
	for _, tb := range mariaTables {
		e.execOn(e.src, "CREATE TABLE "+tb.name+" ("+tb.src+")")
		if tb.dst != "" {
			e.execOn(e.dst, "CREATE TABLE "+tb.name+" ("+tb.dst+")")
		} else {
			same = append(same, tb.name)
		}
		names = append(names, tb.name)
	}
	e.execOn(e.src, mariaFill()...)

	cfg := e.streamConfig()
	cfg.StartPos, cfg.CopyChunkRows = "", 2
	stop := e.runStream(cfg)
	e.waitRecordState(workflow.StateRunning, 60*time.Second)
	var chunks int64
	for _, c := range e.copyState() {
		chunks += c.Chunks
	}
	if chunks < int64(len(mariaUUIDs)) {
		t.Errorf("copied in %d chunks, want the tables cut in chunks of two rows", chunks)
	}
	e.assertIdentical(e.db, names)

	for _, txn := range mariaChanges {
		e.execTxn(e.src, txn...)
	}
	e.waitCaughtUp(30 * time.Second)
	if err := stop(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if r := e.record(); r.Message != "" {
		t.Errorf("record message = %q, want none", r.Message)
	}
	e.assertIdentical(e.db, names)
	e.assertEqual(same) // swapped's types differ on the target: assertIdentical compared its bytes
	e.expectTarget(mariaChecks)

	r := e.runDiff("--chunk-size", "2")
	if r.code != 0 {
		t.Fatalf("vplayer diff exited %d on equal data, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if want := fmt.Sprintf("equal: %d tables", len(names)); !strings.Contains(r.stdout, want) {
		t.Errorf("diff report lacks %q:\n%s", want, r.stdout)
	}
	e.execOn(e.dst,
		"UPDATE uuid_pk SET a4 = '0.0.0.1' WHERE u = '10000000-0000-0000-0000-000000000000'",
		"DELETE FROM inet4_pk WHERE a = '255.255.255.255'",
	)
	r = e.runDiff("--chunk-size", "2")
	if r.code != 1 {
		t.Fatalf("vplayer diff exited %d with differences, want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"differing: u=0x10000000000000000000000000000000\n",
		"missing on the target: a=0xFFFFFFFF\n",
		fmt.Sprintf("DIFFERENT: 2 of %d tables", len(names)),
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("diff report lacks %q:\n%s", want, r.stdout)
		}
	}
	if m := regexp.MustCompile(`(?m)^composite: \d+ rows compared: equal$`); !m.MatchString(r.stdout) {
		t.Errorf("diff report does not show composite equal:\n%s", r.stdout)
	}
}

// TestMariaDBTypes_unwritableValueTerminal: a value the target's UUID column cannot hold as the
// source holds it (the source's column is text) stops vplayer with a terminal error naming the
// table and the column, rather than a retry every second.
func TestMariaDBTypes_unwritableValueTerminal(t *testing.T) {
	e := newEnv(t)
	e.execOn(e.src, "CREATE TABLE t (id INT NOT NULL PRIMARY KEY, u CHAR(36) CHARACTER SET ascii NULL)")
	e.execOn(e.dst, "CREATE TABLE t (id INT NOT NULL PRIMARY KEY, u UUID NULL)")
	p := e.startVplayer()
	e.waitRunning(30 * time.Second)
	e.execOn(e.src, "INSERT INTO t VALUES (1, '6ccd780c-baba-1026-9564-5b8c656024db')")
	if code := p.wait(30 * time.Second); code != 1 {
		t.Fatalf("vplayer exited with %d on a value it cannot write, want 1", code)
	}
	r := e.record()
	want := "column u of " + sqlq.Ident(e.db) + ".`t` is UUID, whose values are 16 bytes, but the source logged a value of 36 bytes"
	if r.State != "Error" || !strings.HasPrefix(r.Message, "terminal error: ") || !strings.Contains(r.Message, want) {
		t.Errorf("record: state %q message %q, want Error, terminal error: ... %s", r.State, r.Message, want)
	}
	if n := e.count(e.dst, "t"); n != 0 {
		t.Errorf("target holds %d rows, want none", n)
	}
}
