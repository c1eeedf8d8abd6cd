package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/vplayer/vplayer/internal/workload"
)

// TestConcurrentWorkload: a concurrent workload of inserts, updates (some changing the primary
// key) and deletes over several tables, replicated while it runs, ends with target == source.
func TestConcurrentWorkload(t *testing.T) {
	e := newEnv(t)
	e.createWorkload()
	stop := e.runStream(e.streamConfig())
	e.waitRunning(30 * time.Second)

	ctx, cancel := context.WithTimeout(e.ctx(), 6*time.Second)
	defer cancel()
	var st workload.Stats
	if err := workload.Run(ctx, e.src, e.db, workload.Config{Workers: 4, Seed: 1}, &st); err != nil {
		t.Fatal(err)
	}
	t.Logf("workload: %d transactions, %d statements, %d deadlock retries", st.Transactions.Load(), st.Rows.Load(), st.Retries.Load())
	if st.Transactions.Load() < 100 {
		t.Fatalf("workload ran only %d transactions", st.Transactions.Load())
	}
	e.waitCaughtUp(60 * time.Second)
	if err := stop(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	e.assertEqual(workload.Tables)
	if got := e.count(e.dst, "customers"); got == 0 {
		t.Errorf("target has no customers: nothing was replicated")
	}
}
