package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLease_lostOwnerReadsStopAsLoss: the owner is frozen past its lease, the standby takes the
// workflow over and is then stopped by a signal (the record says Stopped). The old owner, thawed,
// finds a Stopped record that is not its own to honour: it must report the lost lease and exit
// with status 3, never log a vplayer stop nobody ran and exit 0. Three rounds, since which of its
// loops sees the record first (the stop poller, the lease-loss watcher, a fenced write) is a race.
func TestLease_lostOwnerReadsStopAsLoss(t *testing.T) {
	for round := range 3 {
		e := newEnv(t)
		e.execBoth("CREATE TABLE t (id INT NOT NULL PRIMARY KEY)")
		a, b := e.ownerAndStandby(e.target.DSN(e.db))
		_, epochA := e.owner()
		a.signal(syscall.SIGSTOP)
		e.waitEpochAbove(epochA, leaseTTL+5*time.Second)
		b.waitOutput("workflow lease acquired", 10*time.Second)
		b.signal(syscall.SIGTERM)
		if code := b.wait(10 * time.Second); code != 0 {
			t.Fatalf("round %d: the new owner exited with %d on SIGTERM, want 0", round, code)
		}
		if got := e.record().State; got != "Stopped" {
			t.Fatalf("round %d: record state %s after the new owner's stop, want Stopped; its output:\n%s", round, got, b.out.String())
		}
		a.signal(syscall.SIGCONT)
		code := a.wait(leaseTTL + 15*time.Second)
		out := a.out.String()
		if code != 3 || strings.Contains(out, `reason="vplayer stop"`) {
			t.Errorf("round %d: the old owner exited with %d, want 3 (a lost lease, which supervisors restart); a lost lease must not read as a vplayer stop; output:\n%s", round, code, out)
		}
		if !strings.Contains(out, "lost ownership of workflow "+e.workflow) {
			t.Errorf("round %d: the old owner did not report the lost lease; output:\n%s", round, out)
		}
		e.execOn(e.dstPool, "DELETE FROM _vt.vreplication WHERE workflow = '"+e.workflow+"'")
	}
}
