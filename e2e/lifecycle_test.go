package e2e

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vplayer/vplayer/workflow"
)

// TestStartStop_waitWhileStopped: under --wait-while-stopped, vplayer stop leaves the process up,
// holding the lease and applying nothing, and vplayer start resumes it in the same process (the
// same epoch); a process started on a workflow stopped on purpose waits for vplayer start too.
func TestStartStop_waitWhileStopped(t *testing.T) {
	e := newEnv(t)
	e.execBoth("CREATE TABLE kv (id int PRIMARY KEY, v int)")
	insert := func(from, to int) {
		for i := from; i < to; i++ {
			e.execOn(e.src, fmt.Sprintf("INSERT INTO kv VALUES (%d, %d)", i, i))
		}
	}
	tgt := e.target.DSN("")
	p := e.startVplayer("--wait-while-stopped", "--lease-ttl", "4s")
	e.waitRunning(30 * time.Second)
	insert(0, 3)
	e.waitCaughtUp(30 * time.Second)
	owner, epoch := e.owner()

	if code, out, errOut := runSplit(t, nil, "stop", "--target", tgt, "--workflow", e.workflow); code != 0 {
		t.Fatalf("vplayer stop: exit %d: %s%s", code, out, errOut)
	}
	e.waitState(workflow.StateStopped, 10*time.Second)
	p.waitOutput("waiting while the workflow is stopped", 10*time.Second)
	insert(3, 8)
	time.Sleep(2 * time.Second) // the poller's second, and then some: nothing may be applied
	if n := e.count(e.dst, "kv"); n != 3 {
		t.Errorf("rows on the target while stopped: %d, want 3", n)
	}
	select {
	case <-p.done:
		t.Fatalf("vplayer --wait-while-stopped exited after vplayer stop:\n%s", p.out.String())
	default:
	}
	code, _, w := e.status("")
	if code != 4 || deref(w.Lease.Live) != true || deref(w.Lease.Owner) != owner || deref(w.Backlog.Transactions) != int64(5) {
		t.Errorf("status while waiting: exit %d, lease %+v, backlog %+v; want 4, %s still holding the lease, 5 transactions behind", code, w.Lease, w.Backlog, owner)
	}
	if code, out, errOut := runSplit(t, nil, "delete", "--target", tgt, "--workflow", e.workflow); code != 1 || !strings.Contains(out+errOut, owner) {
		t.Errorf("vplayer delete while a process waits on the workflow: exit %d, want 1 naming %s: %s%s", code, owner, out, errOut)
	}

	code, out, errOut := runSplit(t, nil, "start", "--target", tgt, "--workflow", e.workflow)
	if code != 0 || !strings.Contains(out, "state set to Init (was Stopped)") || !strings.Contains(out, owner) {
		t.Fatalf("vplayer start: exit %d, want 0 naming the owner that resumes it: %s%s", code, out, errOut)
	}
	e.waitRunning(10 * time.Second)
	e.waitCaughtUp(30 * time.Second)
	if n := e.count(e.dst, "kv"); n != 8 {
		t.Errorf("rows on the target after vplayer start: %d, want 8", n)
	}
	if o, ep := e.owner(); o != owner || ep != epoch {
		t.Errorf("owner after vplayer start: %s at epoch %d, want the same process, %s at %d", o, ep, owner, epoch)
	}
	if code, out, _ := runSplit(t, nil, "start", "--target", tgt, "--workflow", e.workflow); code != 0 || !strings.Contains(out, "already runnable") {
		t.Errorf("vplayer start of a running workflow: exit %d, %q; want 0, already runnable", code, out)
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Fatalf("vplayer exited with %d after SIGTERM, want 0", code)
	}

	// Stopped on purpose with no process: a new process waits for vplayer start.
	if code, out, errOut := runSplit(t, nil, "stop", "--target", tgt, "--workflow", e.workflow); code != 0 {
		t.Fatalf("vplayer stop: exit %d: %s%s", code, out, errOut)
	}
	p = e.startVplayer("--wait-while-stopped", "--lease-ttl", "4s")
	p.waitOutput("waiting while the workflow is stopped", 30*time.Second)
	insert(8, 10)
	time.Sleep(2 * time.Second) // the poller's second, and then some: nothing may be applied
	if n := e.count(e.dst, "kv"); n != 8 {
		t.Errorf("rows on the target while a new process waits: %d, want 8", n)
	}
	if r := e.record(); r.State != workflow.StateStopped || r.Message != workflow.StopRequestedMessage {
		t.Errorf("record while a new process waits: %s %q, want Stopped by vplayer stop", r.State, r.Message)
	}
	if code, out, errOut := runSplit(t, nil, "start", "--target", tgt, "--workflow", e.workflow); code != 0 {
		t.Fatalf("vplayer start: exit %d: %s%s", code, out, errOut)
	}
	e.waitRunning(10 * time.Second)
	e.waitCaughtUp(30 * time.Second)
	if n := e.count(e.dst, "kv"); n != 10 {
		t.Errorf("rows on the target after the second vplayer start: %d, want 10", n)
	}
	// A signal while it waits ends it with 0 and leaves the stop's reason.
	if code, out, errOut := runSplit(t, nil, "stop", "--target", tgt, "--workflow", e.workflow); code != 0 {
		t.Fatalf("vplayer stop: exit %d: %s%s", code, out, errOut)
	}
	e.waitState(workflow.StateStopped, 10*time.Second)
	p.waitOutput("waiting while the workflow is stopped", 10*time.Second)
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Errorf("vplayer waiting while stopped exited with %d on SIGTERM, want 0", code)
	}
	if r := e.record(); r.State != workflow.StateStopped || r.Message != workflow.StopRequestedMessage {
		t.Errorf("record after SIGTERM while waiting: %s %q, want Stopped by vplayer stop still", r.State, r.Message)
	}
}
