package e2e

import (
	"database/sql"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vplayer/vplayer/sqlq"
)

// keyTable is a table of the randomized key test: how rows are identified differs, the
// column kinds do not.
type keyTable struct {
	name string
	def  string
	cols []string // every column, in order
	key  []string // the columns a source statement identifies a row by; nil: all, with <=>
}

var keyTables = []keyTable{
	{
		name: "kpk",
		def:  "id INT NOT NULL PRIMARY KEY, s VARCHAR(8) NULL, f FLOAT NULL, t TEXT NULL",
		cols: []string{"id", "s", "f", "t"},
		key:  []string{"id"},
	},
	{
		name: "kcomposite",
		def:  "k1 INT NOT NULL, k2 VARCHAR(8) NOT NULL, s VARCHAR(8) NULL, f FLOAT NULL, t TEXT NULL, PRIMARY KEY (k1, k2)",
		cols: []string{"k1", "k2", "s", "f", "t"},
		key:  []string{"k1", "k2"},
	},
	{
		// A nullable unique key first (not usable), then one over NOT NULL columns.
		name: "kunique",
		def:  "n INT NULL, u1 INT NOT NULL, u2 VARCHAR(8) NOT NULL, s VARCHAR(8) NULL, f FLOAT NULL, t TEXT NULL, UNIQUE KEY a_nullable (n), UNIQUE KEY b_usable (u1, u2)",
		cols: []string{"n", "u1", "u2", "s", "f", "t"},
		key:  []string{"u1", "u2"},
	},
	{
		// No key at all: identical rows are common, and rows that differ only in case,
		// trailing spaces or a float's last bit.
		name: "knone",
		def:  "a INT NULL, s VARCHAR(8) NULL, f FLOAT NULL, t TEXT NULL",
		cols: []string{"a", "s", "f", "t"},
	},
}

// keyGen draws the random values of the test from a small domain, so that keys collide, rows
// repeat and collations have something to confuse.
type keyGen struct{ r *rand.Rand }

func (g keyGen) int() any {
	if g.r.IntN(10) == 0 {
		return nil
	}
	return g.r.IntN(12)
}

func (g keyGen) keyInt() any { return g.r.IntN(12) }

var keyStrings = []string{"a", "A", "a ", "b", "B ", "", "ß", "ss", "é", "e", "😀"}

func (g keyGen) str() any {
	if g.r.IntN(10) == 0 {
		return nil
	}
	return keyStrings[g.r.IntN(len(keyStrings))]
}

func (g keyGen) keyStr() any { return keyStrings[g.r.IntN(len(keyStrings))] }

var keyFloats = []float32{0.1, 0.3, 1.0 / 3, 3.4028235e38, 1.4e-45, 0, 16777216, 16777217}

func (g keyGen) float() any {
	if g.r.IntN(10) == 0 {
		return nil
	}
	f := keyFloats[g.r.IntN(len(keyFloats))]
	if g.r.IntN(4) == 0 {
		f = -f
	}
	return f
}

func (g keyGen) text() any {
	if g.r.IntN(5) == 0 {
		return nil
	}
	return strings.Repeat(keyStrings[g.r.IntN(len(keyStrings))], g.r.IntN(4))
}

// value draws a value for column col of table kt.
func (g keyGen) value(kt keyTable, col string) any {
	isKey := false
	for _, k := range kt.key {
		isKey = isKey || k == col
	}
	switch col {
	case "id", "k1", "u1":
		return g.keyInt()
	case "k2", "u2":
		return g.keyStr()
	case "n", "a":
		return g.int()
	case "s":
		if isKey {
			return g.keyStr()
		}
		return g.str()
	case "f":
		return g.float()
	case "t":
		return g.text()
	}
	panic("unknown column " + col)
}

// keyRun runs seeded random changes on the source.
type keyRun struct {
	e    *env
	seed uint64
	g    keyGen
	conn *sql.Conn
	ops  map[string]int
}

func (k *keyRun) exec(q string, args ...any) int64 {
	k.e.t.Helper()
	res, err := k.conn.ExecContext(k.e.ctx(), q, args...)
	if err != nil {
		k.e.t.Fatalf("seed %d: source: %s %v: %v", k.seed, q, args, err)
	}
	n, _ := res.RowsAffected()
	return n
}

// rows returns the table's rows in a stable order, floats as float32.
func (k *keyRun) rows(kt keyTable) [][]any {
	k.e.t.Helper()
	q := "SELECT " + strings.Join(kt.cols, ", ") + " FROM " + kt.name + " WHERE ? = 1 ORDER BY " + strings.Join(kt.cols, ", ")
	rows, err := k.conn.QueryContext(k.e.ctx(), q, 1)
	if err != nil {
		k.e.t.Fatalf("seed %d: %v", k.seed, err)
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		vals := make([]any, len(kt.cols))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			k.e.t.Fatal(err)
		}
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				vals[i] = string(b)
			}
		}
		out = append(out, vals)
	}
	return out
}

// where identifies row by the table's key, or by every column (NULL-safe, exact bytes, one
// row) for the table without a key.
func (k *keyRun) where(kt keyTable, row []any) (string, []any) {
	var conds []string
	var args []any
	for i, c := range kt.cols {
		isKey := kt.key == nil
		for _, kc := range kt.key {
			isKey = isKey || kc == c
		}
		if !isKey {
			continue
		}
		switch {
		case row[i] == nil:
			conds = append(conds, c+" IS NULL")
		case c == "s" || c == "t" || c == "k2" || c == "u2":
			conds = append(conds, "CAST("+c+" AS BINARY) = CAST(? AS BINARY)")
			args = append(args, row[i])
		default:
			conds = append(conds, c+" = ?")
			args = append(args, row[i])
		}
	}
	q := " WHERE " + strings.Join(conds, " AND ")
	if kt.key == nil {
		q += " LIMIT 1"
	}
	return q, args
}

func (k *keyRun) insert(kt keyTable) {
	n := 1 + k.g.r.IntN(3)
	var tuples []string
	var args []any
	existing := k.rows(kt)
	for range n {
		if kt.key == nil && len(existing) > 0 && k.g.r.IntN(2) == 0 {
			// An exact duplicate of a row that is there.
			args = append(args, existing[k.g.r.IntN(len(existing))]...)
		} else {
			for _, c := range kt.cols {
				args = append(args, k.g.value(kt, c))
			}
		}
		tuples = append(tuples, "("+strings.TrimSuffix(strings.Repeat("?,", len(kt.cols)), ",")+")")
	}
	k.exec("INSERT IGNORE INTO "+kt.name+" ("+strings.Join(kt.cols, ", ")+") VALUES "+strings.Join(tuples, ", "), args...)
	k.ops["insert"]++
}

func (k *keyRun) update(kt keyTable) {
	rows := k.rows(kt)
	if len(rows) == 0 {
		return
	}
	row := rows[k.g.r.IntN(len(rows))]
	var sets []string
	var args []any
	for _, c := range kt.cols {
		if k.g.r.IntN(3) == 0 {
			sets = append(sets, c+" = ?")
			args = append(args, k.g.value(kt, c))
		}
	}
	if len(sets) == 0 {
		sets = append(sets, kt.cols[0]+" = ?")
		args = append(args, k.g.value(kt, kt.cols[0]))
	}
	w, wargs := k.where(kt, row)
	if k.exec("UPDATE IGNORE "+kt.name+" SET "+strings.Join(sets, ", ")+w, append(args, wargs...)...) > 0 {
		k.ops["update"]++
	}
}

func (k *keyRun) delete(kt keyTable) {
	rows := k.rows(kt)
	if len(rows) == 0 {
		return
	}
	w, args := k.where(kt, rows[k.g.r.IntN(len(rows))])
	k.ops["delete"] += int(k.exec("DELETE FROM "+kt.name+w, args...))
}

// keySeed is the test's seed: VPLAYER_KEYS_SEED to replay a failure, else the clock.
func keySeed(t *testing.T) uint64 {
	if s := os.Getenv("VPLAYER_KEYS_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("VPLAYER_KEYS_SEED=%q: %v", s, err)
		}
		return n
	}
	return uint64(time.Now().UnixNano())
}

// TestRandomKeys: seeded random inserts, updates (changing keys too) and deletes over a table with
// a primary key, one with a composite key, one with only a unique key over NOT NULL columns and
// one with no key at all, holding duplicate rows, replicated while they run: the target ends
// equal to the source, compared row by row in order. Replay a failure with
// VPLAYER_KEYS_SEED=<seed>.
func TestRandomKeys(t *testing.T) {
	seed := keySeed(t)
	t.Logf("seed %d (replay with VPLAYER_KEYS_SEED=%d)", seed, seed)
	e := newEnv(t)
	var names []string
	for _, kt := range keyTables {
		names = append(names, kt.name)
		for _, db := range []*sql.DB{e.src, e.dst} {
			if _, err := db.ExecContext(e.ctx(), "CREATE TABLE "+sqlq.Ident(kt.name)+" ("+kt.def+") DEFAULT CHARSET=utf8mb4"); err != nil {
				t.Fatal(err)
			}
		}
	}
	stop := e.runStream(e.streamConfig())
	e.waitRunning(30 * time.Second)

	conn, err := e.src.Conn(e.ctx())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	k := &keyRun{e: e, seed: seed, g: keyGen{rand.New(rand.NewPCG(seed, seed>>1))}, conn: conn, ops: map[string]int{}}
	start := time.Now()
	const transactions = 400
	for range transactions {
		tx := k.g.r.IntN(3) == 0
		if tx {
			k.exec("BEGIN")
		}
		for range 1 + k.g.r.IntN(4) {
			kt := keyTables[k.g.r.IntN(len(keyTables))]
			switch n := k.g.r.IntN(10); {
			case n < 4:
				k.insert(kt)
			case n < 8:
				k.update(kt)
			default:
				k.delete(kt)
			}
		}
		if tx {
			k.exec("COMMIT")
		}
	}
	t.Logf("seed %d: %d transactions, %v on the source in %v", seed, transactions, k.ops, time.Since(start))
	e.waitCaughtUp(30 * time.Second)
	if err := stop(); err != nil {
		t.Fatalf("seed %d: stream: %v", seed, err)
	}
	e.assertEqual(names)
	e.assertIdentical(e.db, names)
	for _, name := range names {
		if n := e.count(e.src, name); n == 0 {
			t.Errorf("seed %d: %s is empty on the source: the test exercised nothing", seed, name)
		}
	}
	var dups int
	if err := e.src.QueryRowContext(e.ctx(), "SELECT COUNT(*) FROM (SELECT 1 FROM knone GROUP BY a, CAST(s AS BINARY), f, CAST(t AS BINARY) HAVING COUNT(*) > 1) d").Scan(&dups); err != nil {
		t.Fatal(err)
	}
	t.Logf("seed %d: knone holds %d rows that are there more than once", seed, dups)
	if t.Failed() {
		t.Logf("seed %d failed: replay with VPLAYER_KEYS_SEED=%d", seed, seed)
	}
}
