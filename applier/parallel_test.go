package applier

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestOverlapsIndexed: the executor's indexed overlap test agrees with the pairwise rule of
// writeset.overlaps on random writesets of values, whole keys and whole tables.
func TestOverlapsIndexed(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := func() *writeset {
		var w writeset
		for range rng.IntN(6) {
			tbl := fmt.Sprintf("`s`.`t%d`", rng.IntN(3))
			switch r := rng.IntN(20); {
			case r == 0:
				w.add(wkey{table: tbl})
			case r == 1:
				w.add(wkey{table: tbl, index: fmt.Sprintf("u%d", rng.IntN(2))})
			default:
				w.add(wkey{table: tbl, index: fmt.Sprintf("u%d", rng.IntN(2)), value: fmt.Sprint(rng.IntN(8))})
			}
		}
		w.barrier = rng.IntN(40) == 0
		return &w
	}
	overlapping := 0
	for i := range 20000 {
		a, b := random(), random()
		want := a.overlaps(b)
		if got := a.overlapsIndexed(b); got != want {
			t.Fatalf("case %d: overlapsIndexed = %v, overlaps = %v\n  a %q barrier %v\n  b %q barrier %v", i, got, want, keysOf(a), a.barrier, keysOf(b), b.barrier)
		}
		if got := b.overlapsIndexed(a); got != want {
			t.Fatalf("case %d: reversed overlapsIndexed = %v, overlaps = %v", i, got, want)
		}
		if want {
			overlapping++
		}
	}
	if overlapping < 1000 || overlapping > 19000 {
		t.Fatalf("%d of 20000 cases overlap: the generator tests too little of one side", overlapping)
	}
}

// TestBatchTruncate: truncate takes back the statements added after n, their checks with them,
// and the batch grows again as before.
func TestBatchTruncate(t *testing.T) {
	var b batch
	b.add("INSERT `t`", "INSERT INTO t VALUES (1)")
	b.add("UPDATE `t`", "UPDATE t SET v=1 WHERE id=2")
	b.checks = append(b.checks, check{stmt: 1, want: 1})
	b.truncate(2) // nothing added: nothing changes
	if b.n != 2 || b.stmt(1) != "UPDATE t SET v=1 WHERE id=2" || len(b.checks) != 1 {
		t.Fatalf("truncate to its own length changed the batch: %d statements %q", b.n, b.buf)
	}
	b.add("", "UPDATE pos")
	b.add("", "COMMIT")
	b.truncate(2)
	if got, want := string(b.buf), "INSERT INTO t VALUES (1);UPDATE t SET v=1 WHERE id=2"; got != want || b.n != 2 {
		t.Fatalf("after truncate: %d statements %q, want 2 %q", b.n, got, want)
	}
	b.add("", "COMMIT")
	if got, want := string(b.buf), "INSERT INTO t VALUES (1);UPDATE t SET v=1 WHERE id=2;COMMIT"; got != want || b.stmt(2) != "COMMIT" {
		t.Fatalf("grown again: %q, want %q", got, want)
	}
	b.truncate(1)
	if len(b.checks) != 0 || string(b.buf) != "INSERT INTO t VALUES (1)" {
		t.Fatalf("truncate(1) kept %q and %d checks", b.buf, len(b.checks))
	}
	b.truncate(0)
	if b.n != 0 || len(b.buf) != 0 {
		t.Fatalf("truncate(0) kept %q", b.buf)
	}
}

// TestWork_longestStatementAndWorker: with workers, the watchdog's probe names the round trip in
// flight longest, with its worker, and the oldest open transaction of any session.
func TestWork_longestStatementAndWorker(t *testing.T) {
	a := New(Config{Workers: 2})
	t0 := time.Unix(1000, 0)
	ws := []*worker{{n: 1}, {n: 2}}
	for _, w := range ws {
		w.s = &session{tr: &tracker{}, w: w}
	}
	a.par.list.Store(&ws)
	a.inline.start("UPDATE `db`.`main`", t0.Add(3*time.Second))
	ws[0].s.tr.start("INSERT `db`.`a`", t0.Add(2*time.Second))
	ws[1].s.tr.start("UPDATE `db`.`b`", t0.Add(time.Second))
	ws[0].txnSince.Store(t0.Add(500 * time.Millisecond).UnixNano())
	a.txnSince.Store(t0.Add(4 * time.Second).UnixNano())
	w := a.Work()
	if w.Statement != "UPDATE `db`.`b` on worker 2" || !w.StatementSince.Equal(t0.Add(time.Second)) {
		t.Errorf("Work() statement %q since %v, want worker 2's UPDATE since %v", w.Statement, w.StatementSince, t0.Add(time.Second))
	}
	if !w.TxnSince.Equal(t0.Add(500 * time.Millisecond)) {
		t.Errorf("Work() TxnSince %v, want worker 1's %v", w.TxnSince, t0.Add(500*time.Millisecond))
	}
	ws[1].s.tr.stop()
	ws[0].s.tr.stop()
	if w := a.Work(); w.Statement != "UPDATE `db`.`main`" {
		t.Errorf("with no worker in a round trip, Work() statement %q, want the main session's, unlabelled", w.Statement)
	}
}
