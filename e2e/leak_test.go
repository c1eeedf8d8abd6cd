package e2e

import (
	"database/sql"
	"fmt"
	"github.com/vplayer/vplayer/internal/eventually"
	"runtime"
	"strings"
	"testing"
	"time"
)

// insertAutocommit writes n single-row transactions to kv, ids from first, 500 per round trip.
func (e *env) insertAutocommit(first, n int) {
	e.t.Helper()
	for done := 0; done < n; {
		var b strings.Builder
		k := min(500, n-done)
		for j := 0; j < k; j++ {
			fmt.Fprintf(&b, "INSERT INTO %s.kv VALUES (%d, %d);", e.db, first+done+j, done+j)
		}
		if _, err := e.srcPool.ExecContext(e.ctx(), b.String()); err != nil {
			e.t.Fatal(err)
		}
		done += k
	}
}

// settledGoroutines returns the lowest of 20 readings of runtime.NumGoroutine, 10ms apart, taken
// with the idle connections of the test's pools closed. go-sql-driver runs one goroutine per open
// connection, and the pools the stream shares with the test's own polls keep a varying number of
// connections idle; the lowest reading also leaves out goroutines of a moment (a connection being
// closed, a query in flight). A goroutine started and left behind is in every reading.
func (e *env) settledGoroutines() int {
	e.t.Helper()
	pools := []*sql.DB{e.src, e.dst, e.srcPool, e.dstPool}
	for _, db := range pools {
		db.SetMaxIdleConns(0) // closes the idle connections, and those returned meanwhile
	}
	defer func() {
		for _, db := range pools {
			db.SetMaxIdleConns(2) // database/sql's default, which the harness leaves in place
		}
	}()
	n := runtime.NumGoroutine()
	for i := 1; i < 20; i++ {
		time.Sleep(10 * time.Millisecond)
		n = min(n, runtime.NumGoroutine())
	}
	return n
}

// TestNoGoroutinePerTransaction: 100,000 transactions through the pipeline leave the number of
// goroutines where it was (within 2): nothing is started per transaction or event.
func TestNoGoroutinePerTransaction(t *testing.T) {
	e := newEnv(t)
	for _, db := range []*sql.DB{e.src, e.dst} {
		if _, err := db.ExecContext(e.ctx(), "CREATE TABLE kv (id int NOT NULL PRIMARY KEY, v int NOT NULL)"); err != nil {
			t.Fatal(err)
		}
	}
	var at attempts
	cfg := e.streamConfig()
	cfg.OnStart = at.add
	stop := e.runStream(cfg)
	e.waitRunning(30 * time.Second)
	e.insertAutocommit(0, 1000)
	e.waitCaughtUp(60 * time.Second)
	before := e.settledGoroutines()

	const n = 100_000
	e.insertAutocommit(1000, n-1000)
	e.waitCaughtUp(3 * time.Minute)
	// The counters move just after the commit the record shows: give them a moment.
	var txns, commits int64
	_ = eventually.Wait(5*time.Second, 10*time.Millisecond, func() error {
		if txns, commits, _ = at.totals(); txns < n {
			return fmt.Errorf("%d transactions", txns)
		}
		return nil
	}) // a shortfall is reported below
	after := e.settledGoroutines()
	t.Logf("goroutines: %d before, %d after %d source transactions (%d applied in %d target commits)", before, after, n, txns, commits)
	if txns < n {
		t.Errorf("applied %d transactions, want at least %d", txns, n)
	}
	if d := after - before; d > 2 || d < -2 {
		t.Errorf("goroutines went from %d to %d over %d transactions, want within 2", before, after, n)
	}
	if got := at.len(); got != 1 {
		t.Errorf("the stream ran %d attempts, want 1 (no errors)", got)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := e.count(e.dst, "kv"); got != n {
		t.Errorf("target has %d rows, want %d", got, n)
	}
}
