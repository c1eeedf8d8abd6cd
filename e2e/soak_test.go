package e2e

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vplayer/vplayer/internal/eventually"
	"github.com/vplayer/vplayer/internal/workload"
	"github.com/vplayer/vplayer/workflow"
)

// soakSourceID is the soak's own source server's id, apart from the shared pair's and the other
// tests' own servers.
const soakSourceID = 41

// soakFor is how long the soak injects faults: about 25 of them, and the soak about 90s in all.
const soakFor = 50 * time.Second

// createWriterAudit makes every row change of the workload's tables on the target record who
// wrote it: the writing session's connection id beside the lease (epoch and recorded sessions)
// that the record held as that session read it. The read is a consistent one, taking no lock, in
// the writer's own transaction: a row whose transaction rolls back (a fenced batch) takes its
// audit row with it.
func (e *env) createWriterAudit() {
	e.t.Helper()
	e.execOn(e.dst, "CREATE TABLE writer_audit (seq BIGINT AUTO_INCREMENT PRIMARY KEY, tbl VARCHAR(20) NOT NULL, op CHAR(1) NOT NULL, conn BIGINT NOT NULL, epoch BIGINT, sessions VARCHAR(255))")
	for _, tbl := range workload.Tables {
		for _, op := range []string{"INSERT", "UPDATE", "DELETE"} {
			e.execOn(e.dst, "CREATE TRIGGER "+tbl+"_"+strings.ToLower(op)+"_audit AFTER "+op+" ON "+tbl+` FOR EACH ROW BEGIN
  DECLARE ep BIGINT;
  DECLARE ss VARCHAR(255);
  SELECT epoch, sessions INTO ep, ss FROM _vt.vreplication WHERE workflow = '`+e.workflow+`';
  INSERT INTO writer_audit (tbl, op, conn, epoch, sessions) VALUES ('`+tbl+`', '`+op[:1]+`', CONNECTION_ID(), ep, ss);
END`)
		}
	}
}

// notByHolder is the condition on writer_audit of a row change made by a session that was not
// among the lease owner's recorded sessions (sessions is "<boot>:<id>[,<id>...]").
const notByHolder = "sessions IS NULL OR FIND_IN_SET(conn, SUBSTRING_INDEX(sessions, ':', -1)) = 0"

// checkWriterAudit shows that the audit catches a writer that is not the lease holder: a row
// written and deleted on the target by the test's own session must count twice, and is then
// forgotten.
func (e *env) checkWriterAudit() {
	e.t.Helper()
	if err := workflow.New(e.dstPool, "_vt").Init(e.ctx()); err != nil { // the triggers read the record
		e.t.Fatal(err)
	}
	e.execOn(e.dst, "INSERT INTO order_lines (order_id, line, sku, qty, price) VALUES (-1, 1, 'audit', 1, 1)", "DELETE FROM order_lines WHERE order_id = -1")
	var n int
	if err := e.dst.QueryRowContext(e.ctx(), "SELECT COUNT(*) FROM writer_audit WHERE "+notByHolder).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	if n != 2 {
		e.t.Fatalf("the writer audit counts %d row changes of a session that holds no lease, want 2", n)
	}
	e.execOn(e.dst, "DELETE FROM writer_audit")
}

// assertWrittenByHolder checks that every audited row change was made by a session the lease
// recorded as its owner's at that moment, and logs how many each epoch wrote.
func (e *env) assertWrittenByHolder() {
	e.t.Helper()
	var total, bad int
	if err := e.dst.QueryRowContext(e.ctx(), "SELECT COUNT(*), COALESCE(SUM("+notByHolder+"), 0) FROM writer_audit").Scan(&total, &bad); err != nil {
		e.t.Fatal(err)
	}
	rows, err := e.dst.QueryContext(e.ctx(), "SELECT epoch, COUNT(*) FROM writer_audit GROUP BY epoch ORDER BY epoch")
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var per []string
	for rows.Next() {
		var ep, n int64
		if err := rows.Scan(&ep, &n); err != nil {
			e.t.Fatal(err)
		}
		per = append(per, strconv.FormatInt(ep, 10)+":"+strconv.FormatInt(n, 10))
	}
	e.t.Logf("%d row changes audited on the target, by epoch %s", total, strings.Join(per, " "))
	if total == 0 {
		e.t.Errorf("no row change audited: the writer triggers did not fire")
	}
	if bad > 0 {
		var sample string
		e.dst.QueryRowContext(e.ctx(), "SELECT CONCAT(tbl, ' ', op, ' by connection ', conn, ' at epoch ', COALESCE(epoch, 'NULL'), ', owner sessions ', COALESCE(sessions, 'NULL')) FROM writer_audit WHERE "+notByHolder+" LIMIT 1").Scan(&sample)
		e.t.Errorf("%d row changes written by a session that was not the lease holder's at the time, e.g. %s", bad, sample)
	}
}

// ownerPid returns the pid in the record's lease owner (host:pid:random), or 0.
func (e *env) ownerPid() int {
	e.t.Helper()
	owner, _ := e.owner()
	parts := strings.Split(owner, ":")
	if len(parts) < 3 {
		return 0
	}
	pid, _ := strconv.Atoi(parts[len(parts)-2])
	return pid
}

// TestSoak_ownershipUnderFaults: two processes of one workflow (owner and standby, 2s ttl) under
// a workload, on a source of its own, through a seeded mix of faults, one after another for 50s:
// the owner SIGKILLed, the standby SIGKILLed, the owner frozen (SIGSTOP) past its lease and
// resumed, the owner's target sessions killed, the source restarted; a process that exits is
// replaced by a new standby. At the end target == source, every row change on the target was made
// by the session of the lease holder of its moment (triggers record the writer and the lease),
// and no process met a duplicate key or a terminal error.
func TestSoak_ownershipUnderFaults(t *testing.T) {
	t.Parallel() // mostly waiting, on a source of its own: it runs beside the takeover tests
	e := newEnv(t)
	src := startServer(t, "soak-source", soakSourceID)
	e.execOn(pool(t, src), "CREATE DATABASE `"+e.db+"`")
	e.useSource(src)
	e.forgetWorkflow()
	if err := workload.Create(e.ctx(), e.db, e.src, e.dst); err != nil {
		t.Fatal(err)
	}
	e.createWriterAudit()
	e.checkWriterAudit()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	flags := []string{"--lease-ttl", leaseTTL.String(), "--allow-target-triggers"}
	var procs []*proc
	start := func() *proc {
		p := e.startVplayer(flags...)
		procs = append(procs, p)
		return p
	}
	alive := func() (live []*proc) {
		for _, p := range procs {
			select {
			case <-p.done:
			default:
				live = append(live, p)
			}
		}
		return live
	}
	// owner returns the live process that holds the lease, waiting for one to.
	owner := func() *proc {
		t.Helper()
		var o *proc
		eventually.Must(t, leaseTTL+20*time.Second, 50*time.Millisecond, "a live process holding the lease", func() error {
			pid := e.ownerPid()
			for _, p := range alive() {
				if p.cmd.Process.Pid == pid {
					o = p
					return nil
				}
			}
			return fmt.Errorf("the lease names pid %d, not a live process of the test", pid)
		})
		return o
	}
	start()
	e.waitRunning(30 * time.Second)
	start().waitOutput("waiting as a standby", 10*time.Second)
	stopLoad := writeThrough(t, e.src, e.db, seed)

	counts := map[string]int{}
	for began := time.Now(); time.Since(began) < soakFor; {
		o := owner()
		var standby *proc
		for _, p := range alive() {
			if p != o {
				standby = p
			}
		}
		_, epoch := e.owner()
		fault := []string{"kill owner", "kill standby", "freeze owner", "kill target sessions", "restart source"}[rng.IntN(5)]
		if fault == "kill standby" && standby == nil {
			fault = "kill owner"
		}
		counts[fault]++
		t.Logf("%v: %s (epoch %d)", time.Since(began).Round(time.Millisecond), fault, epoch)
		switch fault {
		case "kill owner":
			o.signal(syscall.SIGKILL)
			o.waitKilled(5 * time.Second)
			e.waitEpochAbove(epoch, leaseTTL+10*time.Second)
		case "kill standby":
			standby.signal(syscall.SIGKILL)
			standby.waitKilled(5 * time.Second)
		case "freeze owner":
			o.signal(syscall.SIGSTOP)
			e.waitEpochAbove(epoch, leaseTTL+10*time.Second)
			e.waitApplied(e.record().Pos, leaseTTL+10*time.Second)       // the new owner applies meanwhile
			time.Sleep(time.Duration(rng.IntN(2000)) * time.Millisecond) // a freeze of random length
			o.signal(syscall.SIGCONT)
			if code := o.wait(leaseTTL + 20*time.Second); code == 0 {
				t.Errorf("the resumed old owner exited with 0, want an error exit")
			}
			if !strings.Contains(o.out.String(), "lost ownership of workflow "+e.workflow) {
				t.Errorf("the resumed old owner did not say it lost the workflow:\n%s", o.out.String())
			}
		case "kill target sessions":
			var sessions string
			if err := e.dstPool.QueryRowContext(e.ctx(), "SELECT COALESCE(sessions, '') FROM _vt.vreplication WHERE workflow = ?", e.workflow).Scan(&sessions); err != nil {
				t.Fatal(err)
			}
			if _, ids, ok := strings.Cut(sessions, ":"); ok {
				for _, id := range strings.Split(ids, ",") {
					e.dstPool.ExecContext(e.ctx(), "KILL CONNECTION "+id) // gone already is fine
				}
			}
		case "restart source":
			if err := src.Restart(e.ctx()); err != nil {
				t.Fatal(err)
			}
		}
		for len(alive()) < 2 {
			start()
		}
		time.Sleep(time.Duration(500+rng.IntN(1500)) * time.Millisecond)
	}
	stopLoad()
	t.Logf("faults: %v", counts)
	e.waitCaughtUp(90 * time.Second)
	e.assertEqual(workload.Tables)
	e.assertWrittenByHolder()
	for _, p := range procs {
		for _, bad := range []string{"Duplicate entry", "terminal error"} {
			if strings.Contains(p.out.String(), bad) {
				t.Errorf("a process met %q:\n%s", bad, p.out.String())
			}
		}
	}
	for _, p := range alive() {
		p.signal(syscall.SIGTERM)
		if code := p.wait(10 * time.Second); code != 0 {
			t.Errorf("a process exited with %d after SIGTERM, want 0", code)
		}
	}
}
