package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/internal/workload"
)

// diffRun is one `vplayer diff` process: its exit code, report (stdout) and log (stderr).
type diffRun struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// runDiff runs `vplayer diff` for this env's workflow with extra flags.
func (e *env) runDiff(extra ...string) diffRun {
	e.t.Helper()
	args := append([]string{"diff",
		"--workflow", e.workflow,
		"--source", e.source.DSN(e.db),
		"--target", e.target.DSN(e.db),
		"--wait-timeout", "60s",
	}, extra...)
	ctx, cancel := context.WithTimeout(e.ctx(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := diffRun{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		e.t.Fatalf("vplayer diff: %v\n%s", err, r.stderr)
	}
	e.t.Logf("vplayer diff: exit %d in %v\n%s%s", r.code, r.took.Round(time.Millisecond), r.stdout, r.stderr)
	return r
}

// pausePos returns the record's pause column (NULL as "").
func (e *env) pausePos() string {
	e.t.Helper()
	var p sql.NullString
	if err := e.dstPool.QueryRowContext(e.ctx(), "SELECT pause_pos FROM _vt.vreplication WHERE workflow = ?", e.workflow).Scan(&p); err != nil {
		e.t.Fatal(err)
	}
	return p.String
}

var comparedLine = regexp.MustCompile(`(?m)^(\w+): (\d+) rows compared: equal$`)

// TestDiff_equalWhileReplicating: while a workload writes to the source and a vplayer process
// replicates it, `vplayer diff` pauses the process at the source snapshot's position, compares,
// reports every table equal with exit 0, and lets the process go on: it keeps replicating and
// ends with target == source. With 4 workers the pause first commits the jobs in flight and the
// batch the dispatcher holds open for them (applier.ErrSettle).
func TestDiff_equalWhileReplicating(t *testing.T) {
	for _, workers := range []string{"1", "4"} {
		t.Run("workers="+workers, func(t *testing.T) { testDiffEqualWhileReplicating(t, workers) })
	}
}

func testDiffEqualWhileReplicating(t *testing.T, workers string) {
	e := newEnv(t)
	e.createWorkload()
	p := e.startVplayer("--apply-workers", workers)
	e.waitRunning(30 * time.Second)

	ctx, cancel := context.WithCancel(e.ctx())
	defer cancel()
	var st workload.Stats
	wdone := make(chan error, 1)
	go func() {
		wdone <- workload.Run(ctx, e.src, e.db, workload.Config{Workers: 3, Rate: 400, Seed: 11}, &st)
	}()
	time.Sleep(2 * time.Second) // rows to compare, and a stream busy applying them

	before := st.Transactions.Load()
	r := e.runDiff("--chunk-size", "100")
	during := st.Transactions.Load() - before
	if r.code != 0 {
		t.Fatalf("vplayer diff exited %d on equal data, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "the running vplayer paused there") || !strings.Contains(r.stdout, "equal: 3 tables") {
		t.Errorf("report does not say the running vplayer was paused and 3 tables are equal:\n%s", r.stdout)
	}
	tables := map[string]int{}
	for _, m := range comparedLine.FindAllStringSubmatch(r.stdout, -1) {
		tables[m[1]], _ = strconv.Atoi(m[2])
	}
	for _, name := range workload.Tables {
		if tables[name] == 0 {
			t.Errorf("report has no equal line with rows for %s:\n%s", name, r.stdout)
		}
	}
	if during == 0 {
		t.Errorf("the workload committed nothing while the diff ran: it did not run under writes")
	}
	t.Logf("%d source transactions during the diff", during)

	// The stream was paused and resumed, and keeps replicating. It notices the cleared pause at its
	// next poll, after the diff may have exited, and its log comes through a pipe: wait for it.
	for _, want := range []string{"paused for vplayer diff", "vplayer diff pause ended; resuming"} {
		p.waitOutput(want, 5*time.Second)
	}
	if got := e.pausePos(); got != "" {
		t.Errorf("pause_pos after the diff = %q, want it cleared", got)
	}
	diffPos := regexp.MustCompile(`at source position (\S+)`).FindStringSubmatch(r.stdout)
	if diffPos == nil {
		t.Fatalf("report names no position:\n%s", r.stdout)
	}
	at, err := binlog.ParsePosition(diffPos[1], "mariadb")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // more writes after the diff
	cancel()
	if err := <-wdone; err != nil {
		t.Fatal(err)
	}
	e.waitCaughtUp(60 * time.Second)
	if rec := e.record(); rec.State != "Running" || rec.Pos == at.String() {
		t.Errorf("record after the diff: state %q at %s, want Running past the diff's %s", rec.State, rec.Pos, at)
	}
	e.assertEqual(workload.Tables)
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Errorf("vplayer exited %d after SIGTERM, want 0", code)
	}
}

// TestDiff_findsInjectedDifferences: with no vplayer running and the target behind the source,
// `vplayer diff` applies the workflow up to its source snapshot itself, then finds a row changed,
// a row deleted and a row added directly on the target, names each by its key, and exits 1.
func TestDiff_findsInjectedDifferences(t *testing.T) {
	e := newEnv(t)
	e.createWorkload()
	p := e.startVplayer()
	e.waitRunning(30 * time.Second)
	if err := workload.Run(e.ctx(), e.src, e.db, workload.Config{Workers: 2, Transactions: 200, Seed: 5}, nil); err != nil {
		t.Fatal(err)
	}
	e.waitCaughtUp(60 * time.Second)
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Fatalf("vplayer exited %d after SIGTERM, want 0", code)
	}
	// The source moves on while no vplayer runs: the diff must catch the target up itself.
	if err := workload.Run(e.ctx(), e.src, e.db, workload.Config{Workers: 2, Transactions: 40, Seed: 6}, nil); err != nil {
		t.Fatal(err)
	}

	var ids []int64
	rows, err := e.dst.QueryContext(e.ctx(), "SELECT id FROM customers ORDER BY id LIMIT 2")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if len(ids) != 2 {
		t.Fatalf("target has %d customers, want at least 2", len(ids))
	}
	changed, deleted, added := ids[0], ids[1], int64(7)
	for _, q := range []string{
		fmt.Sprintf("UPDATE customers SET name = 'tampered' WHERE id = %d", changed),
		fmt.Sprintf("DELETE FROM customers WHERE id = %d", deleted),
		fmt.Sprintf("INSERT INTO customers (id, name, balance, updated_at) VALUES (%d, 'intruder', 0, '2020-01-01')", added),
	} {
		if _, err := e.dst.ExecContext(e.ctx(), q); err != nil {
			t.Fatal(err)
		}
	}

	r := e.runDiff()
	if r.code != 1 {
		t.Fatalf("vplayer diff exited %d with differences, want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"no vplayer was running: applied up to it here",
		"customers: ",
		"DIFFERENT: 1 missing on the target, 1 extra on the target, 1 differing",
		fmt.Sprintf("missing on the target: id=%d\n", deleted),
		fmt.Sprintf("extra on the target: id=%d\n", added),
		fmt.Sprintf("differing: id=%d\n", changed),
		"DIFFERENT: 1 of 3 tables",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, r.stdout)
		}
	}
	for _, name := range []string{"orders", "order_lines"} {
		if !regexp.MustCompile(`(?m)^` + name + `: \d+ rows compared: equal$`).MatchString(r.stdout) {
			t.Errorf("report does not show %s equal:\n%s", name, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "differences found") {
		t.Errorf("stderr lacks the summary error:\n%s", r.stderr)
	}
	// The diff applied the workflow up to its snapshot, which is where the source still is.
	rec := e.record()
	if want := e.sourcePos(); rec.Pos != want.String() || rec.State != "Stopped" {
		t.Errorf("record after the diff: %s at %s, want Stopped at the source's %s", rec.State, rec.Pos, want)
	}
}
