package e2e

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/event"
	"github.com/vplayer/vplayer/internal/eventually"
)

// discard is a binlog sink that drops every event.
type discard struct{}

func (discard) Put(context.Context, *event.Event) error { return nil }

// stray is a binlog connection to the source with the workflow's server id that no lease
// check guards: what a process that lost the workflow opens when its check came before the
// takeover, or its clock jumped.
type stray struct {
	connected time.Time     // when it was open, before it registered as a replica
	done      chan struct{} // closed when it ended, with err
	err       error
}

// startStray opens a stray binlog connection at the source's current position; it ends when the
// source ends it or at the test's end.
func (e *env) startStray() *stray {
	e.t.Helper()
	f, err := binlog.NewFilter(e.db, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	ids := make(chan time.Time, 1)
	r := binlog.NewReader(binlog.Config{
		Flavor: e.source.Flavor(), Host: "127.0.0.1", Port: uint16(e.source.Port()), User: "root",
		ServerID: binlog.ServerIDFor(e.workflow), Filter: f,
		OnConnect: func(uint32) error { ids <- time.Now(); return nil },
	})
	ctx, cancel := context.WithCancel(context.Background())
	s := &stray{done: make(chan struct{})}
	start := e.sourcePos()
	go func() {
		s.err = r.Run(ctx, start, discard{})
		close(s.done)
	}()
	e.t.Cleanup(func() {
		cancel()
		<-s.done
	})
	select {
	case s.connected = <-ids:
	case <-s.done:
		e.t.Fatalf("the stray binlog connection failed: %v", s.err)
	case <-time.After(10 * time.Second):
		e.t.Fatal("the stray binlog connection did not connect within 10s")
	}
	return s
}

// ownerBinlog waits until the lease owner's recorded binlog connection is a binlog dump on the
// source, and returns its connection id.
func (e *env) ownerBinlog(timeout time.Duration) int64 {
	e.t.Helper()
	var id int64
	eventually.Must(e.t, timeout, 20*time.Millisecond, "the owner's binlog connection a binlog dump on the source", func() error {
		var ok bool
		if id, ok = e.recordedSession("source_session"); !ok {
			return errors.New("no source_session recorded")
		}
		var n int
		if err := e.srcPool.QueryRowContext(e.ctx(), "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ? AND COMMAND LIKE 'Binlog Dump%'", id).Scan(&n); err != nil {
			e.t.Fatal(err)
		}
		if n != 1 {
			return fmt.Errorf("connection %d is no binlog dump", id)
		}
		return nil
	})
	return id
}

// strayRetryDelay is the owner's --retry-delay in the stray tests: long, so that an owner that
// backs off after losing its binlog connection shows it.
const strayRetryDelay = 10 * time.Second

// TestStray_holderEndsTheStrayBinlogConnection: while the lease holder streams, a binlog
// connection with the workflow's server id that holds no lease registers on the source, which
// ends the holder's (ERROR 4052). The holder, its lease checked and still its own, takes the
// source back at once instead of backing off for its retry delay: the stray's connection is the
// one that ends, and the holder applies the next source transaction without waiting out the
// delay, with its lease unchanged.
func TestStray_holderEndsTheStrayBinlogConnection(t *testing.T) {
	e := newEnv(t)
	e.forgetWorkflow()
	e.execBoth("CREATE TABLE marker (id INT PRIMARY KEY)")
	p := e.startVplayer("--lease-ttl", leaseTTL.String(), "--retry-delay", strayRetryDelay.String())
	e.waitRunning(30 * time.Second)
	p.waitOutput("workflow lease acquired", 10*time.Second)
	e.ownerBinlog(10 * time.Second)
	owner, epoch := e.owner()

	s := e.startStray()
	e.execOn(e.src, "INSERT INTO marker VALUES (1)")
	select {
	case <-s.done:
		ended := time.Since(s.connected)
		t.Logf("the stray binlog connection ended %v after it connected: %v", ended.Round(time.Millisecond), s.err)
		if !binlog.IsReplaced(s.err) {
			t.Errorf("the stray binlog connection ended with %v, want the source's same-server-id replacement", s.err)
		}
	case <-time.After(strayRetryDelay):
		t.Fatalf("the stray binlog connection still runs %v after it connected; holder output:\n%s", strayRetryDelay, p.out.String())
	}
	applied := e.waitMarker(1, 2*strayRetryDelay).Sub(s.connected)
	t.Logf("the holder applied the next source transaction %v after the stray connected (retry delay %v)", applied.Round(time.Millisecond), strayRetryDelay)
	if applied >= strayRetryDelay {
		t.Errorf("the holder applied the next transaction %v after the stray connected: it backed off for its retry delay %v", applied, strayRetryDelay)
	}
	if !strings.Contains(p.out.String(), "reconnecting at once") {
		t.Errorf("the holder did not say it took the source back:\n%s", p.out.String())
	}
	if o, ep := e.owner(); o != owner || ep != epoch {
		t.Errorf("lease after the stray: owner %q epoch %d, want %q %d", o, ep, owner, epoch)
	}
	e.execOn(e.src, "INSERT INTO marker VALUES (2)")
	e.waitMarker(2, 10*time.Second)
	e.assertEqual([]string{"marker"})
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Errorf("the holder exited with %d, want 0", code)
	}
}

// TestStray_ownerThatLostTheLeaseStops: an owner whose lease was taken over (the record's epoch
// moved on; its own keepalive would notice only at its next renewal, a third of its 60s ttl
// later) loses its binlog connection, replaced by another with the workflow's server id or
// killed on the source. It checks the lease, finds it lost, and stops with lost ownership at
// once, instead of backing off for its retry delay and reconnecting.
func TestStray_ownerThatLostTheLeaseStops(t *testing.T) {
	for _, how := range []string{"replaced", "killed"} {
		t.Run(how, func(t *testing.T) {
			e := newEnv(t)
			e.forgetWorkflow()
			e.execBoth("CREATE TABLE marker (id INT PRIMARY KEY)")
			p := e.startVplayer("--lease-ttl", "60s", "--retry-delay", strayRetryDelay.String())
			e.waitRunning(30 * time.Second)
			p.waitOutput("workflow lease acquired", 10*time.Second)
			dump := e.ownerBinlog(10 * time.Second)
			const thief = "test:takeover"
			e.execOn(e.dstPool, "UPDATE _vt.vreplication SET owner = '"+thief+"', epoch = epoch + 1, sessions = NULL, source_session = NULL, lease_until = CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) + 60000 WHERE workflow = '"+e.workflow+"'")
			var cut time.Time
			if how == "replaced" {
				cut = e.startStray().connected
			} else {
				cut = time.Now()
				e.execOn(e.srcPool, "KILL CONNECTION "+strconv.FormatInt(dump, 10))
			}
			code := p.wait(strayRetryDelay + 10*time.Second)
			stopped := time.Since(cut)
			t.Logf("the owner that lost the lease stopped %v after its binlog connection was %s (retry delay %v)", stopped.Round(time.Millisecond), how, strayRetryDelay)
			if code == 0 {
				t.Errorf("the owner exited with 0 after losing the workflow, want an error exit")
			}
			if want := "lost ownership of workflow " + e.workflow + " to " + thief; !strings.Contains(p.out.String(), want) {
				t.Errorf("the owner did not say %q:\n%s", want, p.out.String())
			}
			if stopped >= strayRetryDelay {
				t.Errorf("the owner stopped %v after its binlog connection was %s: it backed off for its retry delay %v before looking at the lease", stopped, how, strayRetryDelay)
			}
		})
	}
}
