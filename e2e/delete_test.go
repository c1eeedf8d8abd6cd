package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDelete_refusedWhileOwned: vplayer delete refuses while a live process owns the workflow,
// deletes the record, its log and copy state once it is gone, and with --force under a live owner,
// which then stops as having lost the workflow.
func TestDelete_refusedWhileOwned(t *testing.T) {
	e := newEnv(t)
	e.execBoth("CREATE TABLE kv (id int PRIMARY KEY, v int)")
	tgt := e.target.DSN("")
	p := e.startVplayer("--lease-ttl", "3s")
	e.waitRunning(30 * time.Second)
	owner, _ := e.owner()
	id := e.record().ID

	code, out, errOut := runSplit(t, nil, "delete", "--target", tgt, "--workflow", e.workflow)
	if code != 1 || !strings.Contains(errOut, "owned by a live process: "+owner) || !strings.Contains(errOut, "--force") {
		t.Errorf("vplayer delete of an owned workflow: exit %d, want 1 naming %s and --force: %s%s", code, owner, out, errOut)
	}
	e.record() // still there
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Fatalf("vplayer exited with %d after SIGTERM, want 0", code)
	}
	code, out, errOut = runSplit(t, nil, "delete", "--target", tgt, "--workflow", e.workflow)
	if code != 0 || !strings.Contains(out, "deleted") {
		t.Fatalf("vplayer delete of a workflow nobody owns: exit %d: %s%s", code, out, errOut)
	}
	var logs int
	if err := e.dstPool.QueryRowContext(e.ctx(), "SELECT COUNT(*) FROM _vt.vreplication_log WHERE vrepl_id = ?", id).Scan(&logs); err != nil {
		t.Fatal(err)
	}
	if logs != 0 {
		t.Errorf("%d log rows of the deleted workflow left, want 0", logs)
	}
	if code, _, errOut := runSplit(t, nil, "status", "--target", tgt, "--workflow", e.workflow); code != 5 || !strings.Contains(errOut, "workflow not found") {
		t.Errorf("status of the deleted workflow: exit %d, %q; want 5, not found", code, errOut)
	}
	if code, _, _ := runSplit(t, nil, "delete", "--target", tgt, "--workflow", e.workflow); code != 1 {
		t.Errorf("vplayer delete of a deleted workflow: exit %d, want 1", code)
	}

	// --force under a live owner: it finds its record gone and stops, saying so.
	p = e.startVplayer("--lease-ttl", "3s")
	e.waitRunning(30 * time.Second)
	if code, out, errOut := runSplit(t, nil, "delete", "--target", tgt, "--workflow", e.workflow, "--force"); code != 0 || !strings.Contains(out, "finds its record gone") {
		t.Fatalf("vplayer delete --force: exit %d: %s%s", code, out, errOut)
	}
	if code := p.wait(20 * time.Second); code == 0 {
		t.Errorf("vplayer exited with 0 after its record was deleted, want the exit of a lost workflow")
	}
	if !strings.Contains(p.out.String(), "its record was deleted") {
		t.Errorf("vplayer's output does not say its record was deleted:\n%s", p.out.String())
	}
}
