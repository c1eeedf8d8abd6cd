package sqlq_test

import (
	"bytes"
	"database/sql"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
	"github.com/vplayer/vplayer/sqlq"
)

func TestMain(m *testing.M) { mysqltest.Main(m) }

// roundTripInputs are the byte strings sent as literals to the server.
func roundTripInputs() []struct {
	name string
	in   []byte
} {
	type input = struct {
		name string
		in   []byte
	}
	var ins []input
	for c := 0; c < 256; c++ {
		ins = append(ins, input{fmt.Sprintf("byte %#02x", c), []byte{byte(c)}})
	}
	for _, tt := range stringTests {
		ins = append(ins, input{tt.name, []byte(tt.in)})
	}
	ins = append(ins,
		input{"quotes and backslashes", []byte(`'\''\\'"\"` + "`" + `\`)},
		input{"backslash before every special", []byte("\\\x00\\\n\\\r\\\x1a\\'\\\\")},
		input{"escape look-alikes", []byte(`\0\n\r\Z\b\t\%\_`)},
		input{"nul runs", []byte("\x00\x00\x000\x00")},
		input{"4-byte utf8", []byte("a😀b𝄞c🀄")},
		input{"invalid utf8", []byte("\xf0\x9f\x98\xc3\x28\xa0\xa1\xe2\x82")},
		input{"gbk-like 0x5c trail", []byte("\xbf\x5c\x27\x81\x5c\x5c")},
	)
	all := make([]byte, 0, 512)
	for c := 0; c < 256; c++ {
		all = append(all, byte(c))
	}
	ins = append(ins, input{"all bytes ascending", all})
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 40; i++ {
		b := make([]byte, rnd.IntN(2048))
		for j := range b {
			b[j] = byte(rnd.UintN(256))
		}
		ins = append(ins, input{fmt.Sprintf("random %d (%d bytes)", i, len(b)), b})
	}
	return ins
}

// binaryConn returns a connection whose session reads the query text as bytes.
func binaryConn(t *testing.T, db *sql.DB) *sql.Conn {
	t.Helper()
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.ExecContext(t.Context(), "SET NAMES binary"); err != nil {
		t.Fatalf("SET NAMES binary: %v", err)
	}
	return conn
}

func TestAppendString_server(t *testing.T) {
	_, target := mysqltest.Pair(t)
	db := mysqltest.DB(t, target, mysqltest.DBName(t))
	conn := binaryConn(t, db)
	for _, tt := range roundTripInputs() {
		want := strings.ToUpper(hex.EncodeToString(tt.in))
		for _, lit := range []struct {
			name string
			sql  []byte
		}{
			{"AppendString", sqlq.AppendString(nil, string(tt.in))},
			{"AppendBytes", sqlq.AppendBytes(nil, tt.in)},
		} {
			q := "SELECT HEX(" + string(lit.sql) + ")"
			var got string
			if err := conn.QueryRowContext(t.Context(), q).Scan(&got); err != nil {
				t.Errorf("%s: %s(%q): %v", tt.name, lit.name, tt.in, err)
				continue
			}
			if got != want {
				t.Errorf("%s: SELECT HEX(%s(%q))=%s, want %s", tt.name, lit.name, tt.in, got, want)
			}
		}
	}
}

// TestAppendBytes_serverInsert stores literals in a BLOB column and reads the bytes back.
func TestAppendBytes_serverInsert(t *testing.T) {
	_, target := mysqltest.Pair(t)
	db := mysqltest.DB(t, target, mysqltest.DBName(t))
	conn := binaryConn(t, db)
	if _, err := conn.ExecContext(t.Context(), "CREATE TABLE "+sqlq.Ident("bl`ob")+" (id int PRIMARY KEY, b longblob NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	ins := roundTripInputs()
	q := []byte("INSERT INTO " + sqlq.Ident("bl`ob") + " (id, b) VALUES ")
	for i, tt := range ins {
		if i > 0 {
			q = append(q, ", "...)
		}
		q = fmt.Appendf(q, "(%d, ", i)
		q = sqlq.AppendBytes(q, tt.in)
		q = append(q, ')')
	}
	if _, err := conn.ExecContext(t.Context(), string(q)); err != nil {
		t.Fatalf("insert %d literals: %v", len(ins), err)
	}
	rows, err := conn.QueryContext(t.Context(), "SELECT id, b FROM "+sqlq.Ident("bl`ob")+" ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id int
		var b []byte
		if err := rows.Scan(&id, &b); err != nil {
			t.Fatal(err)
		}
		if id != n {
			t.Fatalf("row %d has id %d", n, id)
		}
		if !bytes.Equal(b, ins[id].in) {
			t.Errorf("%s: stored %q, want %q", ins[id].name, b, ins[id].in)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if got, want := n, len(ins); got != want {
		t.Errorf("rows read back=%d, want %d", got, want)
	}
}
