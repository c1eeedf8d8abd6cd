package e2e

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vplayer/vplayer/internal/eventually"
	"github.com/vplayer/vplayer/internal/workload"
)

const leaseTTL = 2 * time.Second

// owner returns the record's lease owner and epoch.
func (e *env) owner() (string, uint64) {
	e.t.Helper()
	var owner string
	var epoch uint64
	if err := e.dstPool.QueryRowContext(e.ctx(), "SELECT owner, epoch FROM _vt.vreplication WHERE workflow = ?", e.workflow).Scan(&owner, &epoch); err != nil {
		e.t.Fatal(err)
	}
	return owner, epoch
}

// waitOutput waits until the process printed want.
func (p *proc) waitOutput(want string, timeout time.Duration) {
	p.t.Helper()
	eventually.Must(p.t, timeout, 20*time.Millisecond, fmt.Sprintf("the process to print %q", want), func() error {
		if out := p.out.String(); !strings.Contains(out, want) {
			return fmt.Errorf("output:\n%s", out)
		}
		return nil
	})
}

// ownerAndStandby starts an owner whose target DSN is ownerTarget (with ownerFlags), waits until it holds the
// lease, then starts a standby and waits until it says it waits.
func (e *env) ownerAndStandby(ownerTarget string, ownerFlags ...string) (owner, standby *proc) {
	e.t.Helper()
	owner = e.startVplayerTarget(ownerTarget, append([]string{"--lease-ttl", leaseTTL.String()}, ownerFlags...)...)
	e.waitRunning(30 * time.Second)
	owner.waitOutput("workflow lease acquired", 10*time.Second)
	standby = e.startVplayer("--lease-ttl", leaseTTL.String())
	standby.waitOutput("waiting as a standby", 10*time.Second)
	return owner, standby
}

// waitEpochAbove waits until the record's epoch is above epoch and returns when it was seen.
func (e *env) waitEpochAbove(epoch uint64, timeout time.Duration) time.Time {
	e.t.Helper()
	eventually.Must(e.t, timeout, 20*time.Millisecond, fmt.Sprintf("a takeover (the epoch above %d)", epoch), func() error {
		if owner, got := e.owner(); got <= epoch {
			return fmt.Errorf("owner %q, epoch %d", owner, got)
		}
		return nil
	})
	return time.Now()
}

// waitApplied waits until the record's position is no longer pos: its owner committed a
// transaction after the one at pos.
func (e *env) waitApplied(pos string, timeout time.Duration) {
	e.t.Helper()
	eventually.Must(e.t, timeout, 20*time.Millisecond, "a commit after "+pos, func() error {
		if got := e.record().Pos; got == pos {
			return fmt.Errorf("position still %s", got)
		}
		return nil
	})
}

// runWorkload runs a source workload until the returned stop is called.
func (e *env) runWorkload(seed uint64) (stop func()) {
	ctx, cancel := context.WithCancel(e.ctx())
	done := make(chan error, 1)
	go func() {
		done <- workload.Run(ctx, e.src, e.db, workload.Config{Workers: 2, Rate: 400, Seed: seed}, nil)
	}()
	return func() {
		cancel()
		if err := <-done; err != nil {
			e.t.Error(err)
		}
	}
}

// TestLease_standbyTakesOverAfterKill: two processes on one workflow under a workload: one owns
// it, the other waits as a standby; SIGKILL of the owner makes the standby take over within
// ttl + 2s; target == source at the end.
func TestLease_standbyTakesOverAfterKill(t *testing.T) {
	e := newEnv(t)
	e.createWorkload()
	a := e.startVplayer("--lease-ttl", leaseTTL.String())
	e.waitRunning(30 * time.Second)
	a.waitOutput("workflow lease acquired", 10*time.Second)
	stopLoad := e.runWorkload(7)
	b := e.startVplayer("--lease-ttl", leaseTTL.String())
	b.waitOutput("waiting as a standby", 10*time.Second)
	time.Sleep(leaseTTL) // both running: the standby must keep waiting while the owner renews
	if strings.Contains(b.out.String(), "workflow lease acquired") {
		t.Fatalf("the standby acquired the lease while the owner was alive:\n%s", b.out.String())
	}
	ownerA, epochA := e.owner()
	killed := time.Now()
	a.signal(syscall.SIGKILL)
	a.waitKilled(5 * time.Second)
	took := e.waitEpochAbove(epochA, leaseTTL+5*time.Second).Sub(killed)
	t.Logf("standby took over %v after the owner was killed (ttl %v)", took.Round(time.Millisecond), leaseTTL)
	if took > leaseTTL+2*time.Second {
		t.Errorf("takeover took %v, want within ttl + 2s = %v", took, leaseTTL+2*time.Second)
	}
	if ownerB, _ := e.owner(); ownerB == ownerA {
		t.Errorf("owner after takeover is still %q", ownerB)
	}
	stopLoad()
	e.waitCaughtUp(60 * time.Second)
	e.assertEqual(workload.Tables)
	b.signal(syscall.SIGTERM)
	if code := b.wait(10 * time.Second); code != 0 {
		t.Errorf("standby-turned-owner exited with %d, want 0", code)
	}
}

// TestLease_frozenOwnerIsFenced: the owner is frozen (SIGSTOP) past its lease, the standby takes
// over and applies; the old owner, resumed, commits nothing more: its next write is fenced, it
// logs the loss and exits. Target == source.
func TestLease_frozenOwnerIsFenced(t *testing.T) {
	e := newEnv(t)
	e.createWorkload()
	a, b := e.ownerAndStandby(e.target.DSN(e.db))
	stopLoad := e.runWorkload(8)
	e.waitApplied(e.record().Pos, 10*time.Second) // the owner applies the workload
	_, epochA := e.owner()
	a.signal(syscall.SIGSTOP)
	e.waitEpochAbove(epochA, leaseTTL+5*time.Second)
	e.waitApplied(e.record().Pos, 10*time.Second) // the new owner applies while the old one is frozen
	a.signal(syscall.SIGCONT)
	code := a.wait(leaseTTL + 10*time.Second)
	if code == 0 {
		t.Errorf("the fenced old owner exited with 0, want an error exit")
	}
	if !strings.Contains(a.out.String(), "lost ownership of workflow "+e.workflow+" to ") {
		t.Errorf("the old owner did not log the loss:\n%s", a.out.String())
	}
	stopLoad()
	e.waitCaughtUp(60 * time.Second)
	e.assertEqual(workload.Tables)
	b.signal(syscall.SIGTERM)
	b.waitCode(10*time.Second, 0)
}

// stallProxy forwards TCP connections to a target address until paused: while paused it holds
// every connection open and moves no bytes, like a network partition. healNew ends the pause for
// new connections only: those open before it stay held, open and silent, until the proxy closes,
// like flows a middlebox forgot while failing over.
type stallProxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu       sync.Mutex
	paused   bool
	resume   chan struct{} // closed when holds must look again
	gen      int           // generation of the connections accepted now
	deadGens int           // connections of an older generation are held for good
	closed   bool
	conns    []net.Conn
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{ln: ln, target: target, resume: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *stallProxy) addr() string { return p.ln.Addr().String() }

func (p *stallProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			u.Close()
			return
		}
		p.conns = append(p.conns, c, u)
		gen := p.gen
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, u, gen)
		go p.pipe(u, c, gen)
	}
}

// pipe copies src to dst in small pieces, holding each piece, and the end of src, while the
// proxy holds connections of generation gen. When either side ends, both are closed once the
// proxy forwards again: the peer then learns it at once, as it would over a real network when a
// partition heals (the server ends a handshake held past its connect_timeout, a killed session's
// socket is closed).
func (p *stallProxy) pipe(dst, src net.Conn, gen int) {
	defer p.wg.Done()
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 4096)
	for {
		n, err := src.Read(buf)
		p.hold(gen)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// hold waits while the proxy holds the connections of generation gen.
func (p *stallProxy) hold(gen int) {
	for {
		p.mu.Lock()
		held := !p.closed && (p.paused || gen < p.deadGens)
		resume := p.resume
		p.mu.Unlock()
		if !held {
			return
		}
		<-resume
	}
}

// wake makes every hold look again; p.mu must be held.
func (p *stallProxy) wake() {
	close(p.resume)
	p.resume = make(chan struct{})
}

func (p *stallProxy) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused = true
}

func (p *stallProxy) unpause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused = false
	p.wake()
}

// healNew forwards the connections accepted from now on, and holds those accepted before for
// good.
func (p *stallProxy) healNew() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gen++
	p.deadGens = p.gen
	p.paused = false
	p.wake()
}

func (p *stallProxy) close() {
	p.mu.Lock()
	p.closed = true
	p.wake()
	p.mu.Unlock()
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// TestLease_partitionedOwnerIsFenced: the owner's target connection stalls in a proxy (a
// partition): it cannot renew, the standby takes over and applies; when the partition heals the
// old owner commits nothing more and exits. Target == source.
func TestLease_partitionedOwnerIsFenced(t *testing.T) {
	e := newEnv(t)
	e.createWorkload()
	proxy := newStallProxy(t, e.target.Addr())
	a, b := e.ownerAndStandby("root@tcp("+proxy.addr()+")/"+e.db, "--vplayer-progress-deadline", "1m")
	stopLoad := e.runWorkload(9)
	e.waitApplied(e.record().Pos, 10*time.Second) // the owner applies the workload
	_, epochA := e.owner()
	proxy.pause()
	took := time.Now()
	e.waitEpochAbove(epochA, leaseTTL+5*time.Second)
	t.Logf("standby took over %v after the partition", time.Since(took).Round(time.Millisecond))
	e.waitApplied(e.record().Pos, 10*time.Second) // the new owner applies while the old one is partitioned
	proxy.unpause()
	code := a.wait(leaseTTL + 15*time.Second)
	if code == 0 {
		t.Errorf("the partitioned old owner exited with 0, want an error exit")
	}
	if !strings.Contains(a.out.String(), "lost ownership of workflow "+e.workflow) {
		t.Errorf("the old owner did not log the loss:\n%s", a.out.String())
	}
	stopLoad()
	e.waitCaughtUp(60 * time.Second)
	e.assertEqual(workload.Tables)
	b.signal(syscall.SIGTERM)
	b.waitCode(10*time.Second, 0)
}

// TestLease_stopStopsTheStandbyToo: vplayer stop stops the workflow: the owner exits, and the
// standby that waited on it does not take over but exits 0 as well.
func TestLease_stopStopsTheStandbyToo(t *testing.T) {
	e := newEnv(t)
	e.createWorkload()
	a, b := e.ownerAndStandby(e.target.DSN(e.db))
	out, err := exec.Command(binary, "stop", "--target", e.target.DSN(""), "--workflow", e.workflow).CombinedOutput()
	if err != nil {
		t.Fatalf("vplayer stop: %v\n%s", err, out)
	}
	if code := a.wait(5 * time.Second); code != 0 {
		t.Errorf("owner exited with %d after vplayer stop, want 0", code)
	}
	if code := b.wait(leaseTTL + 5*time.Second); code != 0 {
		t.Errorf("standby exited with %d after vplayer stop, want 0", code)
	}
	if strings.Contains(b.out.String(), "workflow lease acquired") && !strings.Contains(b.out.String(), "not taking over") {
		t.Errorf("the standby took the stopped workflow over:\n%s", b.out.String())
	}
	if r := e.record(); r.State != "Stopped" {
		t.Errorf("state = %q, want Stopped", r.State)
	}
}
