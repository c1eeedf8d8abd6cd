package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vplayer/vplayer/internal/eventually"
	"github.com/vplayer/vplayer/internal/mysqld"
	"github.com/vplayer/vplayer/internal/workload"
	"github.com/vplayer/vplayer/workflow"
)

// Server ids of the failover test's own source and replica, apart from the shared pair's.
const (
	failoverSourceID  = 21
	failoverReplicaID = 22
)

// startServer starts a binlog server of its own for this test, stopped at its end.
func startServer(t *testing.T, name string, id uint32) *mysqld.Server {
	t.Helper()
	s, err := mysqld.Start(t.Context(), mysqld.Options{Name: name, ServerID: id, Binlog: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	return s
}

// useSource points e at another source server, whose database e.db it opens.
func (e *env) useSource(s *mysqld.Server) {
	e.t.Helper()
	db, err := s.DB(e.db)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { db.Close() })
	e.source, e.src, e.srcPool = s, db, pool(e.t, s)
}

// writeThrough runs a workload on db until stop is called, starting it again after each error
// (a source restarting breaks its connections); only what committed is in the binary log, which
// is what the target is compared with.
func writeThrough(t *testing.T, db *sql.DB, name string, seed uint64) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := workload.Run(ctx, db, name, workload.Config{Workers: 2, Rate: 300, Seed: seed}, nil); err != nil && ctx.Err() == nil {
				t.Logf("workload: %v; starting it again", err)
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// waitGTID waits until s's binlog GTID position is want.
func waitGTID(t *testing.T, s *mysqld.Server, want string, timeout time.Duration) {
	t.Helper()
	eventually.Must(t, timeout, 50*time.Millisecond, fmt.Sprintf("%s at GTID %q", s.Name(), want), func() error {
		got, err := s.GTIDPos(t.Context())
		if err == nil && got != want {
			err = fmt.Errorf("GTID %q", got)
		}
		return err
	})
}

// TestSourceRestartAndFailover, on a source and a MariaDB GTID replica of its own (with
// log_slave_updates):
//   - a source restart mid-workload: vplayer retries and resumes, target == source;
//   - vplayer stopped behind the source, the replica promoted and written to, vplayer started
//     with --source at the replica: it resumes from the recorded position (the old source's
//     GTIDs, in the replica's binary log) and target == replica;
//   - --source at a server whose GTID history does not contain the recorded position: refused
//     at once (exit 1, state Error) with a message that says so.
func TestSourceRestartAndFailover(t *testing.T) {
	e := newEnv(t)
	shared := e.source
	src := startServer(t, "fo-source", failoverSourceID)
	replica := startServer(t, "fo-replica", failoverReplicaID)
	ctx := e.ctx()
	if err := replica.ReplicateFrom(ctx, src, ""); err != nil {
		t.Fatal(err)
	}
	// The source restarts below: the replica reconnects within a second, not the default 60s.
	e.execOn(pool(t, replica), "CHANGE MASTER TO master_connect_retry=1")
	if err := replica.StartReplica(ctx); err != nil {
		t.Fatal(err)
	}
	admin := pool(t, src)
	e.execOn(admin, "CREATE DATABASE `"+e.db+"`")
	e.useSource(src)
	if err := workload.Create(ctx, e.db, e.src); err != nil {
		t.Fatal(err)
	}
	if err := workload.Create(ctx, e.db, e.dst); err != nil {
		t.Fatal(err)
	}
	tables := []string{"customers", "orders", "order_lines"}

	// A source restart mid-workload.
	p := e.startVplayer()
	e.waitRunning(30 * time.Second)
	applied := e.record().Pos
	stop := writeThrough(t, e.src, e.db, 31)
	e.waitApplied(applied, 30*time.Second) // part of the workload applied before the restart
	if err := src.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // more of it after
	stop()
	e.waitCaughtUp(60 * time.Second)
	e.assertEqual(tables)
	if out := p.out.String(); !strings.Contains(out, "error in stream") {
		t.Errorf("vplayer logged no stream error across a source restart; output:\n%s", out)
	}
	select {
	case <-p.done:
		t.Fatalf("vplayer exited across a source restart; output:\n%s", p.out.String())
	default:
	}

	// Failover to the replica, vplayer behind the old source.
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Fatalf("vplayer exited with %d after SIGTERM, want 0", code)
	}
	recorded := e.record().Pos
	stop = writeThrough(t, e.src, e.db, 32)
	time.Sleep(time.Second) // a second of writes that vplayer, stopped, is behind
	stop()
	last, err := src.GTIDPos(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitGTID(t, replica, last, 30*time.Second)
	src.Stop() // the old primary is gone
	if err := replica.StopReplica(ctx); err != nil {
		t.Fatal(err)
	}
	e.useSource(replica)
	stop = writeThrough(t, e.src, e.db, 33)
	time.Sleep(time.Second) // a second of writes on the promoted replica
	stop()
	promoted, err := replica.GTIDPos(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %s; old source ended at %s; promoted replica at %s", recorded, last, promoted)
	p = e.startVplayer()
	e.waitCaughtUp(60 * time.Second)
	e.assertEqual(tables)
	if out := p.out.String(); !strings.Contains(out, "pos="+recorded) {
		t.Errorf("vplayer did not resume from the recorded %s; output:\n%s", recorded, out)
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Fatalf("vplayer exited with %d after SIGTERM, want 0", code)
	}

	// A source whose history does not have the position: the shared source (server 1).
	e.useSource(shared)
	p = e.startVplayer()
	if code := p.wait(30 * time.Second); code != 1 {
		t.Fatalf("vplayer exited with %d on a source without the recorded position, want 1", code)
	}
	r := e.record()
	t.Logf("record: state %s, message %q", r.State, r.Message)
	for _, want := range []string{"terminal error: source ", "cannot continue from the recorded position", "binary log history does not contain the recorded position",
		"server 22 never logged in domain 0", "point --source at a server whose binary log has the position"} {
		if !strings.Contains(r.Message, want) {
			t.Errorf("message %q, want it to contain %q", r.Message, want)
		}
	}
	if r.State != workflow.StateError {
		t.Errorf("state %q, want Error", r.State)
	}
	if n := strings.Count(p.out.String(), "error in stream"); n != 1 {
		t.Errorf("%d 'error in stream' lines, want 1: no retry", n)
	}
}
