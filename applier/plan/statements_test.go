package plan

import "testing"

// TestBatchTruncate: truncate takes back the statements added after n, their checks with them,
// and the batch grows again as before.
func TestBatchTruncate(t *testing.T) {
	var b Batch
	b.Add("INSERT `t`", "INSERT INTO t VALUES (1)")
	b.Add("UPDATE `t`", "UPDATE t SET v=1 WHERE id=2")
	b.checks = append(b.checks, Check{Stmt: 1, Want: 1})
	b.Truncate(2) // nothing added: nothing changes
	if b.n != 2 || b.Stmt(1) != "UPDATE t SET v=1 WHERE id=2" || len(b.checks) != 1 {
		t.Fatalf("truncate to its own length changed the batch: %d statements %q", b.n, b.buf)
	}
	b.Add("", "UPDATE pos")
	b.Add("", "COMMIT")
	b.Truncate(2)
	if got, want := string(b.buf), "INSERT INTO t VALUES (1);UPDATE t SET v=1 WHERE id=2"; got != want || b.n != 2 {
		t.Fatalf("after truncate: %d statements %q, want 2 %q", b.n, got, want)
	}
	b.Add("", "COMMIT")
	if got, want := string(b.buf), "INSERT INTO t VALUES (1);UPDATE t SET v=1 WHERE id=2;COMMIT"; got != want || b.Stmt(2) != "COMMIT" {
		t.Fatalf("grown again: %q, want %q", got, want)
	}
	b.Truncate(1)
	if len(b.checks) != 0 || string(b.buf) != "INSERT INTO t VALUES (1)" {
		t.Fatalf("truncate(1) kept %q and %d checks", b.buf, len(b.checks))
	}
	b.Truncate(0)
	if b.n != 0 || len(b.buf) != 0 {
		t.Fatalf("truncate(0) kept %q", b.buf)
	}
}
