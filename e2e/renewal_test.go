package e2e

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/vplayer/vplayer/internal/eventually"
	"github.com/vplayer/vplayer/workflow"
)

// TestRenewalOverdueEndsAttempt: while the record row is locked by another session, the lease
// cannot be renewed; once no renewal succeeded for a ttl the stream reports "lease renewal
// overdue" (a standby may take over any moment) instead of going on as if it owned the workflow,
// and, the row released and the lease still its own, it resumes and applies.
func TestRenewalOverdueEndsAttempt(t *testing.T) {
	e := newEnv(t)
	e.forgetWorkflow()
	e.execBoth("CREATE TABLE t (id INT NOT NULL PRIMARY KEY)")
	cfg := e.streamConfig()
	cfg.LeaseTTL = 2 * time.Second
	cfg.HeartbeatInterval = time.Minute // no heartbeat write to meet the lock first
	cfg.SourceHeartbeatPeriod = 30 * time.Second
	var mu sync.Mutex
	var overdue []time.Time
	cfg.OnError = func(err error, terminal bool) {
		if errors.Is(err, workflow.ErrRenewalOverdue) {
			mu.Lock()
			overdue = append(overdue, time.Now())
			mu.Unlock()
			if terminal {
				t.Errorf("overdue renewal reported as terminal: %v", err)
			}
		}
	}
	stop := e.runStream(cfg)
	e.waitRunning(30 * time.Second)

	lock, err := e.dstPool.Conn(e.ctx())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	mustExecConn(t, lock, "BEGIN")
	mustExecConn(t, lock, "SELECT * FROM _vt.vreplication WHERE workflow = '"+e.workflow+"' FOR UPDATE")
	locked := time.Now()
	eventually.Must(t, time.Until(locked.Add(cfg.LeaseTTL+3*time.Second)), 20*time.Millisecond, "a lease renewal overdue reported within ttl + 3s of locking the record row", func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(overdue) == 0 {
			return errors.New("none reported")
		}
		return nil
	})
	mu.Lock()
	took := overdue[0].Sub(locked)
	mu.Unlock()
	t.Logf("renewal overdue reported %v after the record row was locked (ttl %v)", took.Round(time.Millisecond), cfg.LeaseTTL)
	if took < cfg.LeaseTTL-cfg.LeaseTTL/3 {
		t.Errorf("renewal overdue reported %v after the lock, before the lease could have run out", took)
	}
	mustExecConn(t, lock, "ROLLBACK")
	e.execOn(e.src, "INSERT INTO t VALUES (1)")
	e.waitCaughtUp(30 * time.Second)
	e.assertEqual([]string{"t"})
	if err := stop(); err != nil {
		t.Errorf("stream ended with %v, want nil", err)
	}
}
