package e2e

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vplayer/vplayer/applier"
	"github.com/vplayer/vplayer/internal/eventually"
	"github.com/vplayer/vplayer/stream"
	"github.com/vplayer/vplayer/workflow"
)

// execModeTables: a table whose changes fold per primary key, one with a second unique key whose
// changes keep their order, and one without a key.
var execModeTables = []string{
	"CREATE TABLE f (id INT NOT NULL PRIMARY KEY, v INT NOT NULL)",
	"CREATE TABLE u (id INT NOT NULL PRIMARY KEY, k INT NOT NULL, v INT NOT NULL, UNIQUE KEY (k))",
	"CREATE TABLE n (a INT NOT NULL, v INT NOT NULL)",
}

// TestExecModeStrict: an UPDATE or DELETE whose row is absent on the target, and an INSERT of a
// key that exists there, each stop the stream with a terminal error that names the table, the
// key values (no other column), the source transaction and the position; state Error, and the
// target left as it was.
func TestExecModeStrict(t *testing.T) {
	tests := []struct {
		name   string
		direct string // on the target only
		source string // replicated, statements separated by "; " run in one transaction; does not match the target
		want   []string
	}{
		{"fold_update_missing", "DELETE FROM f WHERE id = 5", "UPDATE f SET v = 50 WHERE id = 5",
			[]string{"UPDATE of a row that is absent on the target", "table `%s`.`f`", "key `id`=5"}},
		{"fold_delete_missing", "DELETE FROM f WHERE id = 6", "DELETE FROM f WHERE id IN (6, 7)",
			[]string{"DELETE of a row that is absent on the target", "`f`", "key `id`=6"}},
		{"fold_insert_exists", "INSERT INTO f VALUES (20, 99)", "INSERT INTO f VALUES (20, 20)",
			[]string{"INSERT of a key that already exists on the target", "`f`", "Duplicate entry '20'"}},
		// One folded upsert of six keys that existed: four change, one nets back to the row it
		// had, one is absent. Only the absent one is named.
		{"fold_upsert_missing_among_unchanged", "DELETE FROM f WHERE id = 6",
			"UPDATE f SET v = v + 1 WHERE id BETWEEN 1 AND 4; UPDATE f SET v = 50 WHERE id = 5; " +
				"UPDATE f SET v = 5 WHERE id = 5; UPDATE f SET v = 60 WHERE id = 6",
			[]string{"UPDATE of a row that is absent on the target", "`f`", "key `id`=6,"}},
		{"ordered_update_missing", "DELETE FROM u WHERE id = 5", "UPDATE u SET v = 50 WHERE id = 5",
			[]string{"UPDATE of a row that is absent on the target", "`u`", "key `id`=5"}},
		{"ordered_delete_missing", "DELETE FROM u WHERE id = 3", "DELETE FROM u WHERE id IN (2, 3, 4)",
			[]string{"DELETE of a row that is absent on the target", "`u`", "key `id`=3"}},
		{"keyless_update_missing", "DELETE FROM n WHERE a = 4", "UPDATE n SET v = 40 WHERE a = 4",
			[]string{"UPDATE of a row that is absent on the target", "`n`"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			for _, q := range execModeTables {
				e.execBoth(q)
			}
			e.execBoth("INSERT INTO f SELECT seq, seq FROM seq_1_to_10")
			e.execBoth("INSERT INTO u SELECT seq, seq, seq FROM seq_1_to_10")
			e.execBoth("INSERT INTO n SELECT seq, seq FROM seq_1_to_10")
			stop := e.runStream(e.streamConfig())
			e.waitCaughtUp(30 * time.Second)
			e.execOn(e.dst, tt.direct)
			before := e.checksums(e.dst, "f", "u", "n")
			e.execTxn(e.src, strings.Split(tt.source, "; ")...)
			gtid := strings.TrimPrefix(e.sourcePos().String(), "MariaDB/")
			r := e.waitState("Error", 30*time.Second)
			if err := stop(); !applier.IsTerminal(err) || !errors.Is(err, applier.ErrRowMismatch) {
				t.Errorf("stream ended with %v, want a terminal row mismatch", err)
			}
			t.Logf("message: %s", r.Message)
			if after := e.checksums(e.dst, "f", "u", "n"); after != before {
				t.Errorf("target tables changed by the refused transaction: checksums %s, before %s", after, before)
			}
			want := append([]string{"terminal error: row mismatch: ", "source transaction " + gtid, "after position MariaDB/", "--exec-mode idempotent"}, tt.want...)
			for _, w := range want {
				if strings.Contains(w, "%s") {
					w = strings.ReplaceAll(w, "%s", e.db)
				}
				if !strings.Contains(r.Message, w) {
					t.Errorf("message %q does not contain %q", r.Message, w)
				}
			}
		})
	}
}

// TestExecModeStrict_foldNetsToTargetRow: a source transaction whose changes of a key net back
// to the row the target has (its folded upsert then matches that row without changing it, which
// counts like an insert) is no mismatch: the stream goes on and target == source.
func TestExecModeStrict_foldNetsToTargetRow(t *testing.T) {
	e := newEnv(t)
	e.execBoth(execModeTables[0])
	e.execBoth("INSERT INTO f SELECT seq, seq FROM seq_1_to_10")
	stop := e.runStream(e.streamConfig())
	defer stop()
	e.waitCaughtUp(30 * time.Second)
	e.execTxn(e.src, "UPDATE f SET v = 50 WHERE id = 5", "UPDATE f SET v = 5 WHERE id = 5", "UPDATE f SET v = 70 WHERE id = 7")
	e.execTxn(e.src, "UPDATE f SET v = 80 WHERE id = 8", "UPDATE f SET v = 8 WHERE id = 8")
	e.waitCaughtUp(30 * time.Second)
	if r := e.record(); r.State != workflow.StateRunning || r.Message != "" {
		t.Fatalf("state %s, message %q; want Running with no message", r.State, r.Message)
	}
	e.assertEqual([]string{"f"})
}

// TestExecModeIdempotent: the same mismatches with --exec-mode idempotent: the after image is
// written, a delete of an absent row is skipped, the stream goes on, and each mismatch is counted
// by table and kind. Then target == source. With 4 workers too, whose mismatches are counted once
// their batch committed.
func TestExecModeIdempotent(t *testing.T) {
	for _, workers := range []int{1, 4} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) { testExecModeIdempotent(t, workers) })
	}
}

func testExecModeIdempotent(t *testing.T, workers int) {
	e := newEnv(t)
	for _, q := range execModeTables {
		e.execBoth(q)
	}
	e.execBoth("INSERT INTO f SELECT seq, seq FROM seq_1_to_100")
	e.execBoth("INSERT INTO u SELECT seq, seq, seq FROM seq_1_to_100")
	e.execBoth("INSERT INTO n SELECT seq, seq FROM seq_1_to_100")
	// Rows lost on the target, and surplus rows it has that the source is about to insert.
	e.execOn(e.dst, "DELETE FROM f WHERE id BETWEEN 1 AND 10")
	e.execOn(e.dst, "DELETE FROM u WHERE id BETWEEN 1 AND 10")
	e.execOn(e.dst, "DELETE FROM n WHERE a BETWEEN 1 AND 4")
	e.execOn(e.dst, "INSERT INTO f SELECT seq, 0 FROM seq_201_to_203")
	e.execOn(e.dst, "INSERT INTO u SELECT seq, seq, 0 FROM seq_201_to_202")

	var app atomic.Pointer[applier.Applier]
	cfg := e.streamConfig()
	cfg.ExecMode = applier.ExecModeIdempotent
	cfg.ApplyWorkers = workers
	cfg.OnStart = func(a *stream.Attempt) { app.Store(a.Applier) }
	stop := e.runStream(cfg)
	e.waitRunning(30 * time.Second)

	e.execOn(e.src, "UPDATE f SET v = v + 1000 WHERE id BETWEEN 1 AND 6")     // 6 absent
	e.execOn(e.src, "DELETE FROM f WHERE id BETWEEN 7 AND 10")                // 4 absent
	e.execOn(e.src, "INSERT INTO f SELECT seq, seq FROM seq_201_to_205")      // 3 exist
	e.execOn(e.src, "UPDATE f SET v = v + 1 WHERE id BETWEEN 50 AND 60")      // all there
	e.execOn(e.src, "UPDATE u SET v = v + 1000 WHERE id BETWEEN 1 AND 5")     // 5 absent
	e.execOn(e.src, "DELETE FROM u WHERE id BETWEEN 6 AND 8")                 // 3 absent
	e.execOn(e.src, "INSERT INTO u SELECT seq, seq, seq FROM seq_201_to_204") // 2 exist
	e.execOn(e.src, "UPDATE n SET v = v + 1000 WHERE a BETWEEN 1 AND 2")      // 2 absent
	e.execOn(e.src, "DELETE FROM n WHERE a BETWEEN 3 AND 4")                  // 2 absent
	e.execOn(e.src, "UPDATE u SET v = v + 1 WHERE id BETWEEN 50 AND 60")
	e.waitCaughtUp(30 * time.Second)
	if st := e.record().State; st != workflow.StateRunning {
		t.Fatalf("state %s, want Running", st)
	}
	// The rows the source updated and the target had lost are there with their after image;
	// the rows deleted on both sides are gone; the rest matches too, except the rows the source
	// never touched again after the target lost them.
	e.execOn(e.src, "DELETE FROM f WHERE id BETWEEN 1 AND 10 AND v < 1000")
	e.execOn(e.src, "DELETE FROM u WHERE id BETWEEN 1 AND 10 AND v < 1000")
	e.execOn(e.src, "DELETE FROM n WHERE a BETWEEN 1 AND 4 AND v < 1000")
	e.waitCaughtUp(30 * time.Second)
	e.assertEqual([]string{"f", "u", "n"})
	got := app.Load().Stats().Mismatches()
	want := map[applier.MismatchKey]int64{
		{Table: e.db + ".f", Kind: applier.UpdateMissing}: 6,
		{Table: e.db + ".f", Kind: applier.DeleteMissing}: 4,
		{Table: e.db + ".f", Kind: applier.InsertExists}:  3,
		{Table: e.db + ".u", Kind: applier.UpdateMissing}: 5,
		{Table: e.db + ".u", Kind: applier.DeleteMissing}: 3 + 2, // and the cleanup's of rows 9 and 10
		{Table: e.db + ".u", Kind: applier.InsertExists}:  2,
		{Table: e.db + ".n", Kind: applier.UpdateMissing}: 2,
		{Table: e.db + ".n", Kind: applier.DeleteMissing}: 2,
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("mismatches %s %s = %d, want %d", k.Table, k.Kind, got[k], w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected mismatches %s %s = %d", k.Table, k.Kind, g)
		}
	}
	if err := stop(); err != nil {
		t.Errorf("stream ended with %v", err)
	}
}

// waitState polls the record until its state is want, and returns it.
func (e *env) waitState(want string, timeout time.Duration) workflow.Record {
	e.t.Helper()
	var r workflow.Record
	eventually.Must(e.t, timeout, 20*time.Millisecond, "state "+want, func() error {
		if r = e.record(); r.State != want {
			return fmt.Errorf("state %q, message %q", r.State, r.Message)
		}
		return nil
	})
	return r
}

// checksums returns CHECKSUM TABLE of tables on db, as one string.
func (e *env) checksums(db *sql.DB, tables ...string) string {
	e.t.Helper()
	var out []string
	for _, tb := range tables {
		var name string
		var sum sql.NullInt64
		if err := db.QueryRowContext(e.ctx(), "CHECKSUM TABLE "+tb).Scan(&name, &sum); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s=%d", tb, sum.Int64))
	}
	return strings.Join(out, " ")
}
