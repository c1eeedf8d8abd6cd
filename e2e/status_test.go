package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vplayer/vplayer/internal/eventually"
	"github.com/vplayer/vplayer/workflow"
)

// runSplit runs the vplayer binary to its end with extra environment variables and returns its
// exit code, stdout and stderr apart.
func runSplit(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(cmd.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("vplayer %s: %v", strings.Join(args, " "), err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// statusDoc is the part of vplayer status --json the end-to-end tests read.
type statusDoc struct {
	SchemaVersion int `json:"schema_version"`
	Source        *struct {
		Address string  `json:"address"`
		GTIDPos *string `json:"gtid_pos"`
		End     *string `json:"end"`
	} `json:"source"`
	Workflows []statusWorkflow `json:"workflows"`
}

type statusWorkflow struct {
	Workflow   string `json:"workflow"`
	State      string `json:"state"`
	Healthy    bool   `json:"healthy"`
	Message    string `json:"message"`
	Pos        string `json:"pos"`
	LagSeconds *int64 `json:"lag_seconds"`
	Backlog    struct {
		Known         bool    `json:"known"`
		UnknownReason *string `json:"unknown_reason"`
		SourcePos     *string `json:"source_pos"`
		CaughtUp      *bool   `json:"caught_up"`
		Transactions  *int64  `json:"transactions"`
		Bytes         *int64  `json:"bytes"`
		BytesReason   *string `json:"bytes_reason"`
	} `json:"backlog"`
	Lease struct {
		Known       bool    `json:"known"`
		Owner       *string `json:"owner"`
		Epoch       *uint64 `json:"epoch"`
		Live        *bool   `json:"live"`
		ExpiresInMS *int64  `json:"expires_in_ms"`
	} `json:"lease"`
	Throttle struct {
		Active  *bool   `json:"active"`
		Forever *bool   `json:"forever"`
		Reason  *string `json:"reason"`
	} `json:"throttle"`
	Copy struct {
		Known       bool     `json:"known"`
		Phase       *string  `json:"phase"`
		TablesTotal int      `json:"tables_total"`
		TablesDone  int      `json:"tables_done"`
		RowsCopied  int64    `json:"rows_copied"`
		RowsTotal   int64    `json:"rows_total"`
		Percent     *float64 `json:"percent"`
		ETASeconds  *int64   `json:"eta_seconds"`
	} `json:"copy"`
	Log *struct {
		Rows []struct {
			Type    string `json:"type"`
			State   string `json:"state"`
			Message string `json:"message"`
		} `json:"rows"`
	} `json:"log"`
}

// status runs vplayer status --json for this env's workflow (name, when given) with the source,
// and returns its exit code and the workflow's entry.
func (e *env) status(name string, extra ...string) (int, statusDoc, statusWorkflow) {
	e.t.Helper()
	if name == "" {
		name = e.workflow
	}
	args := append([]string{"status", "--target", e.target.DSN(""), "--source", e.source.DSN(""), "--workflow", name, "--json"}, extra...)
	code, out, errOut := runSplit(e.t, nil, args...)
	var doc statusDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Workflows) != 1 {
		e.t.Fatalf("vplayer status --json: exit %d, %v: stdout %q, stderr %q", code, err, out, errOut)
	}
	if doc.SchemaVersion != 1 {
		e.t.Errorf("schema_version %d, want 1", doc.SchemaVersion)
	}
	return code, doc, doc.Workflows[0]
}

// masterStatus returns the source's current binary log file and offset.
func (e *env) masterStatus() (string, int64) {
	e.t.Helper()
	rows, err := e.srcPool.QueryContext(e.ctx(), "SHOW MASTER STATUS")
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]any, len(cols))
	var file string
	var pos int64
	vals[0], vals[1] = &file, &pos
	for i := 2; i < len(vals); i++ {
		vals[i] = new([]byte)
	}
	if !rows.Next() {
		e.t.Fatal("SHOW MASTER STATUS: no row")
	}
	if err := rows.Scan(vals...); err != nil {
		e.t.Fatal(err)
	}
	return file, pos
}

// TestStatus_againstTheSource runs a workflow and reads vplayer status against the real source:
// caught up, it shows the source's GTID position, 0 transactions behind, lag 0 and the process
// that owns the lease, its epoch and expiry, the log rows and a manual throttle; stopped, the
// transactions written since (exit code 4) and no owner; in Error, exit code 3. A workflow
// recorded at a file position shows the binary log bytes written after it.
func TestStatus_againstTheSource(t *testing.T) {
	e := newEnv(t)
	e.execBoth("CREATE TABLE kv (id int PRIMARY KEY, v int)")
	p := e.startVplayer("--lease-ttl", "4s")
	e.waitRunning(30 * time.Second)
	for i := range 5 {
		e.execOn(e.src, fmt.Sprintf("INSERT INTO kv VALUES (%d, %d)", i, i))
	}
	e.waitCaughtUp(30 * time.Second)
	owner, epoch := e.owner()

	code, doc, w := e.status("", "--log", "10")
	src := e.sourcePos().String()
	if code != 0 || w.State != workflow.StateRunning || !w.Healthy {
		t.Errorf("status of a running workflow: exit %d, state %s, healthy %v; want 0, Running, true", code, w.State, w.Healthy)
	}
	if doc.Source == nil || doc.Source.GTIDPos == nil || *doc.Source.GTIDPos != src || doc.Source.End == nil {
		t.Errorf("status source=%+v, want the source's GTID position %s and its binary log's end", doc.Source, src)
	}
	b := w.Backlog
	if !b.Known || deref(b.SourcePos) != src || deref(b.CaughtUp) != true || deref(b.Transactions) != int64(0) || b.Bytes != nil || b.BytesReason == nil {
		t.Errorf("backlog of a caught-up workflow=%+v, want the source at %s, caught up, 0 transactions, bytes not counted and why", b, src)
	}
	if deref(w.LagSeconds) != int64(0) {
		t.Errorf("lag of a caught-up workflow=%v, want 0", deref(w.LagSeconds))
	}
	l := w.Lease
	if !l.Known || deref(l.Owner) != owner || deref(l.Epoch) != epoch || deref(l.Live) != true || l.ExpiresInMS == nil || *l.ExpiresInMS <= 0 || *l.ExpiresInMS > 4000 {
		t.Errorf("lease=%+v, want %s's live lease at epoch %d expiring within the 4s ttl", l, owner, epoch)
	}
	if w.Log == nil || len(w.Log.Rows) == 0 || !strings.Contains(w.Log.Rows[len(w.Log.Rows)-1].Message, "Running at") {
		t.Errorf("log=%+v, want the State row of the start", w.Log)
	}
	if deref(w.Copy.Phase) != "none" {
		t.Errorf("copy phase=%v, want none: started at the source's position", deref(w.Copy.Phase))
	}
	code, text, errText := runSplit(t, nil, "status", "--target", e.target.DSN(""), "--source", e.source.DSN(""), "--workflow", e.workflow)
	if code != 0 {
		t.Errorf("status --workflow of a running workflow: exit %d, want 0:\n%s%s", code, text, errText)
	}
	for _, want := range []string{"behind:          caught up; 0 transactions", "lag:             0s", "lease:           owner " + owner} {
		if !strings.Contains(text, want) {
			t.Errorf("status --workflow lacks %q:\n%s", want, text)
		}
	}

	// A manual throttle shows with its reason.
	if code, out, errOut := runSplit(t, nil, "throttle", "--target", e.target.DSN(""), "--workflow", e.workflow, "--reason", "maintenance"); code != 0 {
		t.Fatalf("vplayer throttle: exit %d: %s%s", code, out, errOut)
	}
	code, _, w = e.status("")
	if code != 0 {
		t.Errorf("status of a throttled workflow: exit %d, want 0: a hold on purpose is healthy", code)
	}
	if deref(w.Throttle.Active) != true || deref(w.Throttle.Forever) != true || deref(w.Throttle.Reason) != "maintenance" {
		t.Errorf("throttle=%+v, want a throttle without end, reason maintenance", w.Throttle)
	}
	if code, out, errOut := runSplit(t, nil, "unthrottle", "--target", e.target.DSN(""), "--workflow", e.workflow); code != 0 {
		t.Fatalf("vplayer unthrottle: exit %d: %s%s", code, out, errOut)
	}

	// Stopped: the transactions written since are the backlog, nobody owns the workflow.
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Fatalf("vplayer exited with %d after SIGTERM, want 0", code)
	}
	for i := 100; i < 107; i++ {
		e.execOn(e.src, fmt.Sprintf("INSERT INTO kv VALUES (%d, %d)", i, i))
	}
	code, _, w = e.status("")
	if code != 4 || w.State != workflow.StateStopped || w.Healthy {
		t.Errorf("status of a stopped workflow: exit %d, state %s, healthy %v; want 4, Stopped, false", code, w.State, w.Healthy)
	}
	if b := w.Backlog; !b.Known || deref(b.CaughtUp) != false || deref(b.Transactions) != int64(7) || deref(b.SourcePos) != e.sourcePos().String() {
		t.Errorf("backlog of the stopped workflow=%+v, want 7 transactions behind the source at %s", b, e.sourcePos())
	}
	if deref(w.Lease.Live) != false || deref(w.Lease.Owner) != "" {
		t.Errorf("lease of the stopped workflow=%+v, want released", w.Lease)
	}

	// In Error: a row of the backlog already on the target.
	e.execOn(e.dst, "INSERT INTO kv VALUES (106, 0)")
	p = e.startVplayer()
	if code := p.wait(60 * time.Second); code == 0 {
		t.Errorf("vplayer exited with 0 on a duplicate key, want a terminal error")
	}
	code, _, w = e.status("")
	if code != 3 || w.State != workflow.StateError || w.Healthy || !strings.Contains(w.Message, "Duplicate") {
		t.Errorf("status of a failed workflow: exit %d, state %s, message %q; want 3, Error, the duplicate key", code, w.State, w.Message)
	}

	// A file position: the bytes the source's binary log grew by since.
	file, off := e.masterStatus()
	store := workflow.New(e.dstPool, "_vt")
	fp := e.workflow + "_fp"
	if _, _, err := store.Create(e.ctx(), workflow.Record{Workflow: fp, Source: `{"address":"` + e.source.Addr() + `"}`,
		Pos: fmt.Sprintf("FilePos/%s:%d", file, off), DBName: e.db, Options: "{}"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Delete(context.Background(), fp, true) })
	for i := 200; i < 203; i++ {
		e.execOn(e.src, fmt.Sprintf("INSERT INTO kv VALUES (%d, %d)", i, i))
	}
	file2, off2 := e.masterStatus()
	if file2 != file {
		t.Skipf("the source's binary log rotated (%s to %s) during the test", file, file2)
	}
	code, _, w = e.status(fp)
	if code != 0 || !w.Backlog.Known || deref(w.Backlog.Bytes) != off2-off || deref(w.Backlog.CaughtUp) != false || w.Backlog.Transactions != nil {
		t.Errorf("file position %s:%d: exit %d, backlog %+v; want %d bytes behind (%s:%d), transactions not counted", file, off, code, w.Backlog, off2-off, file2, off2)
	}
}

// TestStatus_copyProgress reads the copy's progress in status --json while a workflow copies and
// once it replicates: a percentage between 0 and 100, then 100 with every table done. So that
// status sees the copy in progress whatever the machine's speed, one target table, created empty
// beforehand, is kept from taking rows by a transaction that locks it whole, until status has
// looked; other tables take rows meanwhile.
func TestStatus_copyProgress(t *testing.T) {
	e := newEnv(t)
	const rows = 2000
	e.createCopySource(200, rows)
	var name, create string
	if err := e.src.QueryRowContext(e.ctx(), "SHOW CREATE TABLE bins").Scan(&name, &create); err != nil {
		t.Fatal(err)
	}
	e.execOn(e.dst, create)
	lock, err := e.dst.BeginTx(e.ctx(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.ExecContext(e.ctx(), "SELECT * FROM bins FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release := func() { once.Do(func() { lock.Rollback() }) }
	defer release()

	p := e.startVplayer("--start-pos=", "--copy-chunk-rows", "100")
	e.waitRecordState(workflow.StateCopying, 30*time.Second)
	var seen statusWorkflow
	eventually.Must(t, 60*time.Second, 100*time.Millisecond, "status to show rows copied", func() error {
		var code int
		if code, _, seen = e.status(""); code != 0 {
			t.Fatalf("status while copying: exit %d, want 0", code)
		}
		if seen.Copy.RowsCopied == 0 {
			return fmt.Errorf("copy %+v", seen.Copy)
		}
		return nil
	})
	c := seen.Copy
	if !c.Known || deref(c.Phase) != "copying" || c.TablesTotal != len(copyTables) || c.RowsCopied == 0 || c.RowsTotal <= c.RowsCopied ||
		c.Percent == nil || *c.Percent <= 0 || *c.Percent >= 100 {
		t.Errorf("copy in progress=%+v, want copying %d tables, a percentage between 0 and 100", c, len(copyTables))
	}
	if seen.State != workflow.StateCopying || !seen.Healthy {
		t.Errorf("while copying: state %s, healthy %v; want Copying, healthy", seen.State, seen.Healthy)
	}
	release()
	e.waitRecordState(workflow.StateRunning, 120*time.Second)
	code, _, w := e.status("")
	if code != 0 {
		t.Errorf("status once replicating: exit %d, want 0", code)
	}
	_, rowsCopied := e.copyTotals()
	if c := w.Copy; deref(c.Phase) != "done" || c.TablesDone != len(copyTables) || deref(c.Percent) != 100.0 || deref(c.ETASeconds) != int64(0) || c.RowsCopied != rowsCopied {
		t.Errorf("copy once replicating=%+v, want done, %d tables, 100%%, ETA 0, %d rows", c, len(copyTables), rowsCopied)
	}
	p.signal(syscall.SIGTERM)
	p.waitCode(10*time.Second, 0)
}

// deref returns *p, or nil.
func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
