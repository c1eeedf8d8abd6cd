package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"github.com/vplayer/vplayer/internal/eventually"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// bigRows and bigPayload make one source transaction of over 100 MB of binlog: 200,000 rows of
// 896 characters.
const (
	bigRows    = 200000
	bigPayload = "REPEAT(MD5(seq), 28)"
)

var (
	plainOnce sync.Once
	plainPath string
	plainErr  error
)

// plainBinary is vplayer built without the race detector, whose memory overhead would hide the
// process's own peak RSS.
func plainBinary(t *testing.T) string {
	t.Helper()
	plainOnce.Do(func() {
		plainPath = filepath.Join(filepath.Dir(binary), "vplayer-plain")
		out, err := exec.Command("go", "build", "-o", plainPath, "github.com/vplayer/vplayer/cmd/vplayer").CombinedOutput()
		if err != nil {
			plainErr = fmt.Errorf("build vplayer: %v: %s", err, out)
		}
	})
	if plainErr != nil {
		t.Fatal(plainErr)
	}
	return plainPath
}

// peakRSS returns the process's peak resident set size (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// TestBigTransaction: one source transaction of over 100 MB applies exactly once with a 5 s
// progress deadline and no stall, in bounded memory, although applying it takes longer than the
// deadline: the applier keeps completing round trips, which is progress, however far away its
// COMMIT is. Then a row lock on the target inside another large transaction (a fifth of the
// rows) is still reported within deadline + 1 s, and the stream recovers once it is released.
func TestBigTransaction(t *testing.T) {
	e := newEnv(t)
	// The source's binlog file ends some 600 MB long. A copy round's snapshot reads its GTID
	// position with BINLOG_GTID_POS, which reads the file up to the snapshot: the copy tests
	// after this one took 82 s instead of 11 s in that file, so it ends here.
	t.Cleanup(func() { e.execOn(e.srcPool, "FLUSH BINARY LOGS") })
	// The second unique key keeps the table's updates one statement per row, in source order.
	const ddl = "CREATE TABLE big (id INT PRIMARY KEY, u INT NOT NULL UNIQUE, v VARCHAR(1000) NOT NULL, n INT NOT NULL DEFAULT 0)"
	mustExec(t, e.src, ddl)
	mustExec(t, e.dst, ddl)
	mustExec(t, e.src, fmt.Sprintf("INSERT INTO big (id, u, v) SELECT seq, seq, %s FROM seq_1_to_%d", bigPayload, bigRows))
	mustExec(t, e.dst, fmt.Sprintf("INSERT INTO big (id, u, v) SELECT seq, seq, %s FROM seq_1_to_%d", bigPayload, bigRows))

	const deadline = 5 * time.Second
	p := e.startVplayerBinary(plainBinary(t), "--vplayer-progress-deadline", deadline.String(), "--retry-delay", "1s")
	e.waitRunning(30 * time.Second)

	before := e.binlogBytes()
	mustExec(t, e.src, "UPDATE big SET n = n + 1, u = u + 1000000")
	if grew := e.binlogBytes() - before; grew < 100<<20 {
		t.Fatalf("the source transaction wrote %d bytes of binlog, want at least 100 MB", grew)
	}
	start := time.Now()
	e.waitCaughtUp(3 * time.Minute)
	took := time.Since(start)
	t.Logf("a %d-row, %d MB transaction applied in %v", bigRows, (e.binlogBytes()-before)>>20, took)
	if took < deadline {
		t.Errorf("the transaction applied in %v, within the %v deadline: the test shows nothing; make it bigger", took, deadline)
	}
	e.assertEqual([]string{"big"})
	if out := p.out.String(); strings.Contains(out, "stalled") {
		t.Fatalf("a stall was reported while the big transaction applied:\n%s", out)
	}
	if rss := peakRSS(t, p.cmd.Process.Pid); rss > 64<<20 {
		t.Errorf("peak RSS %d MiB while applying a 100 MB transaction, want at most 64 MiB", rss>>20)
	} else {
		t.Logf("peak RSS while applying a 100 MB transaction: %.1f MiB", float64(rss)/(1<<20))
	}

	// Another transaction, of a fifth of the rows (some 70 MB of binlog, hundreds of fetches),
	// one of whose rows a target session holds locked: the applier blocks inside the
	// transaction, after round trips that completed.
	const second = bigRows / 5
	release := e.lockRow(fmt.Sprintf("SELECT * FROM %s.big WHERE id = %d FOR UPDATE", e.db, second/2))
	mustExec(t, e.src, fmt.Sprintf("UPDATE big SET n = n + 1 WHERE id <= %d", second))
	// The reader is blocked on the full relay log too, so the message may carry 4.1's text.
	blocked, at, msg := e.waitStallAfterLockWait(3 * time.Minute)
	if !strings.Contains(msg, "applier stalled: no progress for") && !strings.Contains(msg, "relay log I/O stalled") {
		t.Errorf("stall message %q names neither detector", msg)
	}
	var latency time.Duration
	if !blocked.IsZero() {
		latency = at.Sub(blocked)
		t.Logf("stall reported %v after InnoDB saw the applier's lock wait begin", latency)
	} else {
		// The lock wait was not caught in INNODB_TRX between two polls: take the age of the
		// blocked statement when the watchdog fired, as the message says it.
		m := regexp.MustCompile(`(?:busy for|no progress for) ([0-9.]+m?s)`).FindStringSubmatch(msg)
		if m == nil {
			t.Fatalf("stall message %q says no duration", msg)
		}
		d, err := time.ParseDuration(m[1])
		if err != nil {
			t.Fatal(err)
		}
		latency = d
		t.Logf("stall reported when the blocked statement had run %v", latency)
	}
	if latency > deadline+time.Second {
		t.Errorf("stall reported %v after the applier blocked, want at most deadline + 1s = %v", latency, deadline+time.Second)
	}
	if !strings.Contains(msg, "transaction open for") {
		t.Errorf("stall message %q does not say how long the transaction has been open", msg)
	}
	release()
	e.waitCaughtUp(3 * time.Minute)
	e.assertEqual([]string{"big"})
	if got := e.count(e.dst, "big WHERE n = 2"); got != second {
		t.Errorf("target has %d rows updated twice, want %d", got, second)
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Errorf("vplayer exited with %d, want 0", code)
	}
}

func mustExec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func mustExecConn(t *testing.T, c *sql.Conn, q string, args ...any) {
	t.Helper()
	if _, err := c.ExecContext(context.Background(), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// waitStallAfterLockWait polls until the record's message reports a stall, noting when InnoDB
// first shows a target transaction waiting on a lock, and when that wait began (zero when no
// poll caught it).
func (e *env) waitStallAfterLockWait(timeout time.Duration) (blocked, at time.Time, msg string) {
	e.t.Helper()
	eventually.Must(e.t, timeout, 20*time.Millisecond, "a stall reported", func() error {
		if blocked.IsZero() {
			var waited sql.NullFloat64
			var err error
			readInnodbTrx(func() {
				err = e.dstPool.QueryRowContext(e.ctx(), `SELECT MAX(TIMESTAMPDIFF(MICROSECOND, trx_wait_started, NOW(6))) / 1e6
FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'`).Scan(&waited)
			})
			if err != nil {
				e.t.Fatal(err)
			}
			if waited.Valid {
				blocked = time.Now().Add(-time.Duration(waited.Float64 * float64(time.Second)))
			}
		}
		if msg = e.record().Message; !strings.Contains(msg, stalledText) {
			return fmt.Errorf("message %q", msg)
		}
		return nil
	})
	return blocked, time.Now(), msg
}
