package e2e

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/vplayer/vplayer/applier"
	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
)

// Online schema changes on the source (SPEC 7b): pt-online-schema-change itself, and gh-ost's
// table protocol driven by the test. Each test changes a table of onlineRows rows while a workload
// writes it, and ends with the target equal to the source.

const onlineRows = 20000

// onlineTools are the tables the tools leave on the source, none of which the target may get.
var onlineTools = []string{"_t_new", "_t_old", "_t_gho", "_t_ghc", "_t_del"}

// createOnlineTable creates t with onlineRows rows, the same on both sides.
func (e *env) createOnlineTable() {
	e.t.Helper()
	e.execBoth(
		"CREATE TABLE t (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, a INT NOT NULL, b VARCHAR(64) NOT NULL, d DECIMAL(12,2) NULL)",
		fmt.Sprintf("INSERT INTO t (id, a, b, d) SELECT seq, seq %% 1000, CONCAT('row ', seq), seq / 100 FROM seq_1_to_%d", onlineRows),
	)
}

// tWorkload writes t from one session until stopped: inserts, updates and deletes, each in its
// own transaction. With withC set (once the table has it) updates also set the new column c.
// With mirror set it also plays gh-ost's binlog applier: after each change it copies the row it
// changed from t to the ghost table _t_gho (or deletes it there), as gh-ost applies the changes
// it reads from the binlog.
type tWorkload struct {
	db      *sql.DB
	withC   atomic.Bool
	mirror  atomic.Bool
	changes atomic.Int64 // rows changed on t
	quit    chan struct{}
	done    chan error
	stopped bool
}

// startTWorkload starts the workload on the source.
func (e *env) startTWorkload() *tWorkload {
	w := &tWorkload{db: e.src, quit: make(chan struct{}), done: make(chan error, 1)}
	ctx := e.ctx()
	go func() { w.done <- w.run(ctx) }()
	e.t.Cleanup(func() { w.stop() })
	return w
}

// stop ends the workload once its change in flight is done (and mirrored), and returns its
// error; a second call returns nil.
func (w *tWorkload) stop() error {
	if w.stopped {
		return nil
	}
	w.stopped = true
	close(w.quit)
	return <-w.done
}

func (w *tWorkload) run(ctx context.Context) error {
	rng := rand.New(rand.NewPCG(1, 2))
	maxID := int64(onlineRows)
	for {
		select {
		case <-w.quit:
			return nil
		default:
		}
		id := 1 + rng.Int64N(maxID)
		var q string
		var args []any
		switch r := rng.IntN(10); {
		case r < 4:
			q, args = "INSERT INTO t (a, b, d) VALUES (?, ?, ?)", []any{rng.IntN(1000), fmt.Sprintf("new %d", rng.Int()), fmt.Sprintf("%d.%02d", rng.IntN(10000), rng.IntN(100))}
		case r < 8 && w.withC.Load():
			q, args = "UPDATE t SET a = a + 1, b = CONCAT('upd ', id), c = ? WHERE id = ?", []any{rng.IntN(100), id}
		case r < 8:
			q, args = "UPDATE t SET a = a + 1, b = CONCAT('upd ', id), d = NULL WHERE id = ?", []any{id}
		default:
			q, args = "DELETE FROM t WHERE id = ?", []any{id}
		}
		res, err := w.db.ExecContext(ctx, q, args...)
		switch {
		case retryable(err), tableGone(err):
			continue
		case err != nil:
			return fmt.Errorf("%s: %w", q, err)
		}
		n, _ := res.RowsAffected()
		w.changes.Add(n)
		if strings.HasPrefix(q, "INSERT") {
			id, _ = res.LastInsertId()
			maxID = max(maxID, id)
		}
		if n > 0 && w.mirror.Load() {
			if err := w.toGhost(ctx, strings.HasPrefix(q, "DELETE"), id); err != nil {
				return err
			}
		}
		time.Sleep(time.Duration(rng.IntN(1000)) * time.Microsecond)
	}
}

// toGhost applies one change of t to the ghost table, as gh-ost applies a binlog row event: the
// row as t has it now (REPLACE), or its deletion.
func (w *tWorkload) toGhost(ctx context.Context, deleted bool, id int64) error {
	q := "REPLACE INTO _t_gho (id, a, b, d) SELECT id, a, b, d FROM t WHERE id = ?"
	if deleted {
		q = "DELETE FROM _t_gho WHERE id = ?"
	}
	for {
		_, err := w.db.ExecContext(ctx, q, id)
		switch {
		case err == nil:
			return nil
		case !retryable(err):
			return fmt.Errorf("%s: %w", q, err)
		}
	}
}

// retryable reports whether err is a deadlock or lock wait timeout, which the tools' copies and
// cut-overs cause and a client retries.
func retryable(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205)
}

// tableGone reports whether err says a table does not exist: pt-online-schema-change's triggers
// on t write _t_new, and a statement that fires one just as the tables are swapped fails so
// (and changes nothing), which a client retries.
func tableGone(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1146
}

// runPTOSC runs pt-online-schema-change on the source's t with alter.
func (e *env) runPTOSC(alter string) {
	e.t.Helper()
	if _, err := exec.LookPath("pt-online-schema-change"); err != nil {
		msg := "no pt-online-schema-change on PATH: install Debian's percona-toolkit package (scripts/ensure-percona-toolkit.sh)"
		if os.Getenv(mysqltest.EnvRequire) == "1" {
			e.t.Fatalf("%s; %s=1 requires it", msg, mysqltest.EnvRequire)
		}
		e.t.Skipf("%s (set %s=1 to fail instead)", msg, mysqltest.EnvRequire)
	}
	dsn := fmt.Sprintf("h=127.0.0.1,P=%d,u=root,D=%s,t=t", e.source.Port(), e.db)
	start := time.Now()
	cmd := exec.Command("pt-online-schema-change", "--alter", alter, "--execute",
		"--recursion-method=none", "--chunk-size=1000", "--sleep=0.05", dsn)
	out, err := cmd.CombinedOutput()
	if err != nil {
		e.t.Fatalf("pt-online-schema-change: %v\n%s", err, out)
	}
	e.t.Logf("pt-online-schema-change --alter %q took %v", alter, time.Since(start).Round(time.Millisecond))
}

// ghost plays gh-ost's table protocol on the source's t. gh-ost v1.1.6 stops at once against
// MariaDB 10.11 (it reads transaction_isolation, which MariaDB calls tx_isolation before 11.1),
// so the test does what it would: the changelog table _t_ghc and its rows, the ghost table _t_gho
// created LIKE t and altered, the rows copied in chunks with INSERT IGNORE ... SELECT while the
// workload's changes are applied to it (w.mirror), the cut-over sentry _t_del, the atomic
// RENAME TABLE t TO _t_del, _t_gho TO t, and the DROP of _t_del and _t_ghc. afterAlter, when
// set, runs once the ghost table is altered, before the copy.
func (e *env) ghost(w *tWorkload, alter string, afterAlter func()) {
	e.t.Helper()
	changelog := func(hint, value string) {
		e.execOn(e.src, fmt.Sprintf("insert /* gh-ost */ into `%s`.`_t_ghc` (id, hint, value) values (NULLIF(%d, 0), '%s', '%s') on duplicate key update last_update=NOW(), value=VALUES(value)",
			e.db, map[string]int{"heartbeat": 1, "state": 2}[hint], hint, value))
	}
	e.execOn(e.src,
		fmt.Sprintf("create /* gh-ost */ table `%s`.`_t_ghc` (id bigint unsigned auto_increment, last_update timestamp not null DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, hint varchar(64) charset ascii not null, value varchar(4096) charset ascii not null, primary key(id), unique key hint_uidx(hint)) auto_increment=256", e.db),
		fmt.Sprintf("create /* gh-ost */ table `%s`.`_t_gho` like `%s`.`t`", e.db, e.db),
		fmt.Sprintf("alter /* gh-ost */ table `%s`.`_t_gho` %s", e.db, alter),
	)
	changelog("state", "GhostTableMigrated")
	if afterAlter != nil {
		afterAlter()
	}
	w.mirror.Store(true) // from here on, t's changes reach the ghost table as well
	var maxID int64
	if err := e.src.QueryRowContext(e.ctx(), "SELECT MAX(id) FROM t").Scan(&maxID); err != nil {
		e.t.Fatal(err)
	}
	const chunk = 1000
	for lo := int64(1); lo <= maxID; lo += chunk {
		q := fmt.Sprintf("insert /* gh-ost */ ignore into `%s`.`_t_gho` (id, a, b, d) (select id, a, b, d from `%s`.`t` force index (`PRIMARY`) where id between %d and %d lock in share mode)",
			e.db, e.db, lo, lo+chunk-1)
		for {
			_, err := e.src.ExecContext(e.ctx(), q)
			if err == nil {
				break
			}
			if !retryable(err) {
				e.t.Fatalf("%s: %v", q, err)
			}
		}
		changelog("heartbeat", time.Now().Format(time.RFC3339Nano))
	}
	changelog("state", "AllEventsUpToLockProcessed")
	// The cut-over: gh-ost locks t, applies the changes still to come from the binlog, and
	// renames. Here the workload stops, so that every change it made is on the ghost table.
	if err := w.stop(); err != nil {
		e.t.Fatal(err)
	}
	e.execOn(e.src,
		fmt.Sprintf("create /* gh-ost */ table `%s`.`_t_del` (id int auto_increment primary key) engine=InnoDB comment='ghost-cut-over-sentry'", e.db),
		fmt.Sprintf("drop /* gh-ost */ table if exists `%s`.`_t_del`", e.db),
		fmt.Sprintf("rename /* gh-ost */ table `%s`.`t` to `%s`.`_t_del`, `%s`.`_t_gho` to `%s`.`t`", e.db, e.db, e.db, e.db),
		fmt.Sprintf("drop /* gh-ost */ table if exists `%s`.`_t_del`", e.db),
		fmt.Sprintf("drop /* gh-ost */ table if exists `%s`.`_t_ghc`", e.db),
	)
}

// checkNoToolTables fails when the target has any of the tools' tables.
func (e *env) checkNoToolTables() {
	e.t.Helper()
	for _, name := range onlineTools {
		if cols := e.columnList(e.dstPool, e.db, name); cols != "" {
			e.t.Errorf("target has the tool's table %s (%s)", name, cols)
		}
	}
}

// checkCopiedOnce checks that the stream's attempts applied no more row changes than the
// workload made on t (changes): the tool's copy of the table never reached the target.
func (e *env) checkCopiedOnce(a *attempts, changes int64) {
	e.t.Helper()
	_, _, applied := a.totals()
	var skipped int64
	a.mu.Lock()
	for _, at := range a.all {
		skipped += at.Reader.Stats().SkippedOnlineDDLRows.Load()
	}
	a.mu.Unlock()
	e.t.Logf("row changes: %d made on t, %d applied to the target; rows events of the tool's tables passed over: %d", changes, applied, skipped)
	if applied > changes {
		e.t.Errorf("the applier applied %d row changes, more than the %d the workload made: the tool's copy reached the target", applied, changes)
	}
	if skipped == 0 {
		e.t.Errorf("the reader passed over no rows event of the tool's tables")
	}
}

// compareShared compares the columns id, a, b, d of t on both sides, through a view of them on
// each (the target's t lacks the source's new column).
func (e *env) compareShared() {
	e.t.Helper()
	for _, db := range []*sql.DB{e.src, e.dst} {
		e.execOn(db, "CREATE VIEW t_shared AS SELECT id, a, b, d FROM t")
	}
	e.assertEqual([]string{"t_shared"})
}

// finishWorkload lets the workload write the new column for a while, then stops it.
func (e *env) finishWorkload(w *tWorkload) {
	e.t.Helper()
	w.withC.Store(true)
	time.Sleep(time.Second)
	if err := w.stop(); err != nil {
		e.t.Fatal(err)
	}
}

// TestOnlineDDL_ptOSC: pt-online-schema-change adds a column to a table of 20k rows under a
// workload. Under --on-ddl exec the target's table gets the column by the ALTER the tool ran on
// _t_new, at the cut-over, and never the tool's tables or the copy's rows; under ignore the
// stream goes on past the cut-over, with the target's table as the operator leaves it: not
// altered (the shared columns equal), or altered by the operator first, while the stream runs.
func TestOnlineDDL_ptOSC(t *testing.T) {
	const alter = "ADD COLUMN c INT NULL DEFAULT 7"
	for _, tt := range []struct {
		name        string
		onDDL       string
		targetFirst bool
	}{
		{name: "exec", onDDL: applier.OnDDLExec},
		{name: "ignore", onDDL: applier.OnDDLIgnore},
		{name: "ignore_target_first", onDDL: applier.OnDDLIgnore, targetFirst: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.createOnlineTable()
			cfg := e.streamConfig()
			cfg.OnDDL = tt.onDDL
			var at attempts
			cfg.OnStart = at.add
			stop := e.runStream(cfg)
			e.waitRunning(30 * time.Second)
			began := time.Now()
			applied := e.record().Pos
			w := e.startTWorkload()
			if tt.targetFirst {
				e.waitApplied(applied, 30*time.Second) // the applier has read t's definition
				e.execOn(e.dst, "ALTER TABLE t "+alter)
			}
			e.runPTOSC(alter)
			e.finishWorkload(w)
			e.waitCaughtUp(time.Minute)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d rows, %s: source changed and target caught up in %v", onlineRows, tt.name, time.Since(began).Round(time.Millisecond))
			e.checkNoToolTables()
			e.checkCopiedOnce(&at, w.changes.Load())
			want := "id,a,b,d,c"
			if tt.onDDL == applier.OnDDLIgnore && !tt.targetFirst {
				want = "id,a,b,d"
			}
			if got := e.columnList(e.dstPool, e.db, "t"); got != want {
				t.Errorf("target columns = %s, want %s", got, want)
			}
			if want == "id,a,b,d" {
				e.compareShared()
			} else {
				e.assertEqual([]string{"t"})
			}
			if r := e.record(); r.State != "Running" && r.State != "Stopped" || r.Message != "" {
				t.Errorf("record: state %q, message %q; want no message", r.State, r.Message)
			}
		})
	}
}

// TestOnlineDDL_ghost: gh-ost's table protocol (driven by the test: see ghost) under a workload.
// Under exec the stream restarts between the ghost table's ALTER and the cut-over, and still
// turns the cut-over into the ALTER: the record keeps it. Under ignore the operator added the
// column to the target first.
func TestOnlineDDL_ghost(t *testing.T) {
	const alter = "add column c int null default 7"
	for _, tt := range []struct {
		name  string
		onDDL string
	}{
		{name: "exec_restart", onDDL: applier.OnDDLExec},
		{name: "ignore_target_first", onDDL: applier.OnDDLIgnore},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.createOnlineTable()
			if tt.onDDL == applier.OnDDLIgnore {
				e.execOn(e.dst, "ALTER TABLE t "+alter)
			}
			cfg := e.streamConfig()
			cfg.OnDDL = tt.onDDL
			var at attempts
			cfg.OnStart = at.add
			stop := e.runStream(cfg)
			e.waitRunning(30 * time.Second)
			began := time.Now()
			w := e.startTWorkload()
			restart := func() {
				if tt.onDDL != applier.OnDDLExec {
					return
				}
				// The position passes the ghost table's ALTER; then a new stream, which knows
				// the ALTER only from the record.
				e.waitCaughtUp(time.Minute)
				if err := stop(); err != nil {
					t.Fatal(err)
				}
				if r := e.record(); !strings.Contains(r.Pos, "MariaDB/") {
					t.Fatalf("record position %q", r.Pos)
				}
				stop = e.runStream(cfg)
				e.waitRunning(30 * time.Second)
			}
			e.ghost(w, alter, restart)
			changes := w.changes.Load()
			w = e.startTWorkload()
			e.finishWorkload(w)
			changes += w.changes.Load()
			e.waitCaughtUp(time.Minute)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d rows, %s: source changed and target caught up in %v", onlineRows, tt.name, time.Since(began).Round(time.Millisecond))
			e.checkNoToolTables()
			e.checkCopiedOnce(&at, changes)
			if got, want := e.columnList(e.dstPool, e.db, "t"), "id,a,b,d,c"; got != want {
				t.Errorf("target columns = %s, want %s", got, want)
			}
			e.assertEqual([]string{"t"})
		})
	}
}

// TestOnlineDDL_stop: under --on-ddl stop the real binary stops at gh-ost's cut-over, its
// message naming the ALTER the tool ran on the ghost table, pointed at the table.
func TestOnlineDDL_stop(t *testing.T) {
	e := newEnv(t)
	e.createOnlineTable()
	p := e.startVplayer("--on-ddl", "stop")
	e.waitRunning(30 * time.Second)
	w := e.startTWorkload()
	e.ghost(w, "add column c int null default 7", nil)
	if code := p.wait(time.Minute); code != 0 {
		t.Fatalf("vplayer exited with %d at the cut-over with --on-ddl stop, want 0; output:\n%s", code, p.out.String())
	}
	want := fmt.Sprintf("Stopped at DDL ALTER TABLE `%s`.`t` add column c int null default 7", e.db)
	if r := e.record(); r.State != "Stopped" || r.Message != want {
		t.Errorf("record: state %q message %q; want Stopped, %q", r.State, r.Message, want)
	}
	if got := e.columnList(e.dstPool, e.db, "t"); got != "id,a,b,d" {
		t.Errorf("target columns = %s, want id,a,b,d: nothing ran", got)
	}
	e.checkNoToolTables()
}

// TestOnlineDDL_unknownAlter: a workflow that starts after the ghost table's ALTER cannot know
// what the cut-over changes: under exec it stops there with a terminal error saying so, rather
// than run the RENAME or pass over it.
func TestOnlineDDL_unknownAlter(t *testing.T) {
	e := newEnv(t)
	e.createOnlineTable()
	w := e.startTWorkload()
	var p *proc
	e.ghost(w, "add column c int null default 7", func() {
		p = e.startVplayer("--on-ddl", "exec")
		e.waitRunning(30 * time.Second)
	})
	if code := p.wait(time.Minute); code != 1 {
		t.Fatalf("vplayer exited with %d at a cut-over it cannot apply, want 1; output:\n%s", code, p.out.String())
	}
	r := e.record()
	if r.State != "Error" || !strings.Contains(r.Message, "did not see every DDL run on that shadow table") {
		t.Errorf("record: state %q message %q; want Error naming the cut-over", r.State, r.Message)
	}
	if got := e.columnList(e.dstPool, e.db, "t"); got != "id,a,b,d" {
		t.Errorf("target columns = %s, want id,a,b,d", got)
	}
}
