package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestPacketTooLarge: the target's max_allowed_packet is small. A batch larger than it is cut
// between statements and applies; a row whose statement cannot fit alone is a terminal error at
// its first occurrence, naming the variable, its value and the size needed: state Error, exit 1,
// no retry storm of "connection reset by peer".
func TestPacketTooLarge(t *testing.T) {
	e := newEnv(t)
	const limit = 1 << 20
	var was int
	if err := e.dstPool.QueryRow("SELECT @@GLOBAL.max_allowed_packet").Scan(&was); err != nil {
		t.Fatal(err)
	}
	mustExec(t, e.dstPool, "SET GLOBAL max_allowed_packet = ?", limit)
	t.Cleanup(func() { e.dstPool.Exec("SET GLOBAL max_allowed_packet = ?", was) })
	e.dstPool.SetMaxIdleConns(0) // new connections see the new limit
	e.dstPool.SetMaxIdleConns(2)
	e.execBoth("CREATE TABLE blobs (id INT PRIMARY KEY, b LONGBLOB NOT NULL)")

	p := e.startVplayer("--retry-delay", "1s")
	e.waitRunning(30 * time.Second)
	// 3 MB of small rows in one transaction: more than one round trip can carry.
	e.execOn(e.src, "INSERT INTO blobs SELECT seq, REPEAT('x', 1000) FROM seq_1_to_3000")
	e.waitCaughtUp(60 * time.Second)
	e.assertEqual([]string{"blobs"})

	e.execOn(e.src, "INSERT INTO blobs VALUES (999999, REPEAT('y', 1500000))")
	if code := p.wait(30 * time.Second); code != 1 {
		t.Fatalf("vplayer exited with %d on a row over max_allowed_packet, want 1", code)
	}
	r := e.record()
	t.Logf("message: %s", r.Message)
	for _, want := range []string{"terminal error: ", "max_allowed_packet of 1048576 bytes", "over the target's max_allowed_packet", "raise it on the target to at least", "INSERT"} {
		if !strings.Contains(r.Message, want) {
			t.Errorf("message %q does not contain %q", r.Message, want)
		}
	}
	if r.State != "Error" {
		t.Errorf("state %q, want Error", r.State)
	}
	if n := strings.Count(p.out.String(), "error in stream"); n != 1 {
		t.Errorf("%d errors logged, want 1 (no retry)", n)
	}
}
