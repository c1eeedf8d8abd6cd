package e2e

import (
	"fmt"
	"github.com/vplayer/vplayer/internal/eventually"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// freeAddr returns a loopback address where nothing listens now: a dial there is refused.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// forwardOn starts a proxy listening on addr that forwards every connection to target, closed at
// the end of the test or by its close.
func forwardOn(t *testing.T, addr, target string) *stallProxy {
	t.Helper()
	var ln net.Listener
	// The port was given back a moment ago; a listener in TIME_WAIT may hold it briefly.
	eventually.Must(t, 5*time.Second, 50*time.Millisecond, "a listener on "+addr, func() error {
		var err error
		ln, err = net.Listen("tcp", addr)
		return err
	})
	p := &stallProxy{ln: ln, target: target, resume: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// waitHealth polls /healthz until its status is code and its body contains want.
func waitHealth(t *testing.T, addr string, code int, want string, timeout time.Duration) {
	t.Helper()
	eventually.Must(t, timeout, 50*time.Millisecond, fmt.Sprintf("/healthz to answer %d with %q", code, want), func() error {
		if got, body := httpGet("http://" + addr + "/healthz"); got != code || !strings.Contains(body, want) {
			return fmt.Errorf("%d %q", got, body)
		}
		return nil
	})
}

// TestTargetDownAtStart: vplayer run starts while its target refuses connections. It does not
// exit: it logs each retry, /healthz says 503 with the reason and the error is counted; once the
// target accepts connections it runs and applies; SIGTERM then exits 0.
func TestTargetDownAtStart(t *testing.T) {
	e := newEnv(t)
	e.execBoth("CREATE TABLE t (id INT NOT NULL PRIMARY KEY)")
	addr := freeAddr(t)
	p := e.startVplayerTarget("root@tcp("+addr+")/"+e.db, "--metrics-addr", "127.0.0.1:0")
	maddr := p.metricsAddr(30 * time.Second)
	p.waitOutput("will retry after 200ms: preflight: target not reachable: dial tcp "+addr, 30*time.Second)
	waitHealth(t, maddr, http.StatusServiceUnavailable, "waiting to retry after an error: preflight: target not reachable", 10*time.Second)
	if s, _ := getMetrics(t, maddr); s.get(t, "vplayer_errors_total", "kind", "other") < 1 {
		t.Errorf("vplayer_errors_total{kind=other} = %v, want the unreachable target counted", s.get(t, "vplayer_errors_total", "kind", "other"))
	}
	select {
	case <-p.done:
		t.Fatalf("vplayer exited while the target was down; output:\n%s", p.out.String())
	default:
	}

	forwardOn(t, addr, e.target.Addr())
	e.waitRunning(30 * time.Second)
	e.execOn(e.src, "INSERT INTO t VALUES (1), (2), (3)")
	e.waitCaughtUp(30 * time.Second)
	e.assertEqual([]string{"t"})
	waitHealth(t, maddr, http.StatusOK, "ok", 10*time.Second)
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Errorf("vplayer exited with %d after SIGTERM, want 0", code)
	}
}

// TestStandbyTargetDown: a standby whose target goes down while it waits stays up and retries,
// /healthz saying why; once the target is back it waits again, takes over when the owner stops,
// and applies.
func TestStandbyTargetDown(t *testing.T) {
	e := newEnv(t)
	e.execBoth("CREATE TABLE t (id INT NOT NULL PRIMARY KEY)")
	addr := freeAddr(t)
	proxy := forwardOn(t, addr, e.target.Addr())
	owner := e.startVplayer("--lease-ttl", leaseTTL.String())
	e.waitRunning(30 * time.Second)
	owner.waitOutput("workflow lease acquired", 10*time.Second)
	standby := e.startVplayerTarget("root@tcp("+addr+")/"+e.db, "--lease-ttl", leaseTTL.String(), "--metrics-addr", "127.0.0.1:0")
	maddr := standby.metricsAddr(30 * time.Second)
	standby.waitOutput("waiting as a standby", 30*time.Second)

	proxy.close()
	standby.waitOutput("will retry after 200ms: acquire workflow", 30*time.Second)
	waitHealth(t, maddr, http.StatusServiceUnavailable, "waiting to retry after an error: acquire workflow", 10*time.Second)
	if out := standby.out.String(); !strings.Contains(out, "connection refused") {
		t.Errorf("standby output %q, want the refused connection named", out)
	}
	select {
	case <-standby.done:
		t.Fatalf("the standby exited while its target was down; output:\n%s", standby.out.String())
	default:
	}
	e.execOn(e.src, "INSERT INTO t VALUES (1)")

	forwardOn(t, addr, e.target.Addr())
	waitHealth(t, maddr, http.StatusServiceUnavailable, "starting: no attempt has started yet", 10*time.Second)
	e.waitCaughtUp(30 * time.Second)
	before := strings.Count(standby.out.String(), "waiting as a standby")
	owner.signal(syscall.SIGTERM)
	if code := owner.wait(10 * time.Second); code != 0 {
		t.Fatalf("owner exited with %d after SIGTERM, want 0", code)
	}
	standby.waitOutput("workflow lease acquired", leaseTTL+10*time.Second)
	e.execOn(e.src, "INSERT INTO t VALUES (2), (3)")
	e.waitCaughtUp(30 * time.Second)
	e.assertEqual([]string{"t"})
	t.Logf("the standby logged 'waiting as a standby' %d times before the takeover", before)
	standby.signal(syscall.SIGTERM)
	if code := standby.wait(10 * time.Second); code != 0 {
		t.Errorf("standby exited with %d after SIGTERM, want 0", code)
	}
}
