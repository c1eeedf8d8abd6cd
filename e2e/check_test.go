package e2e

import (
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vplayer/vplayer/workflow"
)

// writeCounters returns a server's global counters of statements that write, to tell that a
// command wrote nothing there.
func (e *env) writeCounters(db *sql.DB) map[string]int64 {
	e.t.Helper()
	rows, err := db.QueryContext(e.ctx(), `SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_insert', 'Com_insert_select', 'Com_update',
'Com_update_multi', 'Com_delete', 'Com_delete_multi', 'Com_replace', 'Com_truncate', 'Com_create_db', 'Com_create_table',
'Com_alter_table', 'Com_drop_table', 'Com_create_trigger', 'Com_drop_db')`)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			e.t.Fatal(err)
		}
		out[name] = n
	}
	return out
}

// schemaExists reports whether the target has the database name.
func (e *env) schemaExists(name string) bool {
	e.t.Helper()
	var n int
	if err := e.dstPool.QueryRowContext(e.ctx(), "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", name).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n > 0
}

// setGlobal sets a global variable on db for the rest of the test, restoring its value after.
func (e *env) setGlobal(db *sql.DB, name, value string) {
	e.t.Helper()
	var old string
	if err := db.QueryRowContext(e.ctx(), "SELECT @@GLOBAL."+name).Scan(&old); err != nil {
		e.t.Fatal(err)
	}
	e.execOn(db, fmt.Sprintf("SET GLOBAL %s = %s", name, value))
	e.t.Cleanup(func() {
		if _, err := db.Exec(fmt.Sprintf("SET GLOBAL %s = %s", name, sqlValue(old))); err != nil {
			e.t.Errorf("restore %s: %v", name, err)
		}
	})
}

// sqlValue is a variable's value as SET takes it: a number bare, anything else quoted.
func sqlValue(v string) string {
	if _, err := strconv.ParseInt(v, 10, 64); err == nil {
		return v
	}
	return "'" + strings.ReplaceAll(v, "'", "''") + "'"
}

// TestCheck_findsEachFailureAndWritesNothing: vplayer check passes on a ready pair, then finds each
// of run's preflight failures, one line each, with exit code 1; no check writes anything on either
// server, nor creates the sidecar database.
func TestCheck_findsEachFailureAndWritesNothing(t *testing.T) {
	e := newEnv(t)
	e.createWorkload()
	sidecar := e.db + "_chk"
	// check runs vplayer check, failing the test if it wrote anything on either server.
	check := func(env []string, extra ...string) (int, []string, string) {
		t.Helper()
		srcBefore, dstBefore := e.writeCounters(e.srcPool), e.writeCounters(e.dstPool)
		args := append([]string{"check", "--workflow", e.workflow, "--source", e.source.DSN(e.db), "--target", e.target.DSN(e.db),
			"--sidecar-db", sidecar, "--start-pos", "current"}, extra...)
		code, out, errOut := runSplit(t, env, args...)
		for side, c := range map[string][2]map[string]int64{"source": {srcBefore, e.writeCounters(e.srcPool)}, "target": {dstBefore, e.writeCounters(e.dstPool)}} {
			for name, n := range c[1] {
				if n != c[0][name] {
					t.Errorf("vplayer check %v: %s's %s went from %d to %d", extra, side, name, c[0][name], n)
				}
			}
		}
		if e.schemaExists(sidecar) {
			t.Fatalf("vplayer check %v created the sidecar database %s", extra, sidecar)
		}
		return code, strings.Split(strings.TrimRight(out, "\n"), "\n"), out + errOut
	}

	code, lines, all := check(nil)
	if code != 0 || len(lines) != 1 || !strings.Contains(lines[0], "every check passed") {
		t.Fatalf("check of a ready pair: exit %d:\n%s", code, all)
	}

	// Run's preflight failures at once: each is one line.
	e.setGlobal(e.srcPool, "binlog_format", "'STATEMENT'")
	e.setGlobal(e.dstPool, "read_only", "ON")
	e.execOn(e.dst, "DROP TABLE order_lines", "ALTER TABLE orders CHANGE note remark text",
		"CREATE TRIGGER customers_audit AFTER INSERT ON customers FOR EACH ROW SET @x = 1")
	code, lines, all = check(nil)
	want := []string{
		"binlog_format is STATEMENT",
		"read_only is ON",
		"table " + e.db + ".order_lines does not exist",
		"table " + e.db + ".orders does not match",
		"triggers on replicated target tables",
	}
	if code != 1 || len(lines) != len(want)+1 {
		t.Errorf("check with %d failures: exit %d, %d lines, want exit 1, one line each and a summary:\n%s", len(want), code, len(lines), all)
	}
	for _, w := range want {
		n := 0
		for _, l := range lines {
			if strings.Contains(l, w) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("check: %d lines with %q, want 1:\n%s", n, w, all)
		}
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "5 finding(s)") || !strings.Contains(last, "nothing was written") {
		t.Errorf("check's last line %q, want the count of findings and that nothing was written", last)
	}

	// A source user without the binlog privileges; its password stays out of the output.
	user, pw := fmt.Sprintf("chk%d", time.Now().UnixNano()%1e6), "s3cret-chk"
	e.execOn(e.srcPool, fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY '%s'", user, pw), fmt.Sprintf("GRANT SELECT ON *.* TO '%s'@'%%'", user))
	t.Cleanup(func() { e.srcPool.Exec(fmt.Sprintf("DROP USER '%s'@'%%'", user)) })
	dsn := strings.Replace(e.source.DSN(e.db), "root@", user+"@", 1)
	code, _, all = check([]string{"VPLAYER_SOURCE_PASSWORD=" + pw}, "--source", dsn)
	if code != 1 || !strings.Contains(all, "grant the user REPLICATION CLIENT") || strings.Contains(all, pw) {
		t.Errorf("check as a user without binlog privileges: exit %d, want 1 naming the grants, never the password:\n%s", code, all)
	}

	// --tables that match nothing; an unreachable source, reported rather than waited for.
	if code, _, all = check(nil, "--tables", "nosuch"); code != 1 || !strings.Contains(all, "matches --tables nosuch") {
		t.Errorf("check --tables nosuch: exit %d, want 1:\n%s", code, all)
	}
	if code, lines, all = check(nil, "--source", "root@tcp(127.0.0.1:1)/"+e.db); code != 1 || len(lines) != 2 || !strings.Contains(lines[0], "source") {
		t.Errorf("check with an unreachable source: exit %d, want 1 and one finding:\n%s", code, all)
	}
	// Bad usage is exit 2, before any connection.
	if code, _, all = check(nil, "--on-ddl", "drop"); code != 2 || !strings.Contains(all, "--on-ddl") {
		t.Errorf("check --on-ddl drop: exit %d, want 2:\n%s", code, all)
	}
}

// TestCheck_record: a workflow with a record is checked against it as a run would be: a
// --start-pos that differs, a --stop-pos while it copies, a position the source's binary log
// does not have; a new workflow that would copy refuses --stop-pos.
func TestCheck_record(t *testing.T) {
	e := newEnv(t)
	e.createWorkload()
	sidecar := e.db + "_rec"
	check := func(extra ...string) (int, string) {
		t.Helper()
		args := append([]string{"check", "--workflow", e.workflow, "--source", e.source.DSN(e.db), "--target", e.target.DSN(e.db),
			"--sidecar-db", sidecar}, extra...)
		code, out, errOut := runSplit(t, nil, args...)
		return code, out + errOut
	}
	if code, out := check("--stop-pos", "MariaDB/0-1-999999"); code != 1 || !strings.Contains(out, "--stop-pos cannot be used while the new workflow copies") {
		t.Errorf("check of a new workflow that would copy, with --stop-pos: exit %d, want 1:\n%s", code, out)
	}
	store := workflow.New(e.dstPool, sidecar)
	if err := store.Init(e.ctx()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.dstPool.Exec("DROP DATABASE `" + sidecar + "`") })
	pos := e.sourcePos().String()
	if _, _, err := store.Create(e.ctx(), workflow.Record{Workflow: e.workflow, Source: "{}", Pos: pos, DBName: e.db, Options: "{}"}); err != nil {
		t.Fatal(err)
	}
	if code, out := check("--start-pos", "current"); code != 0 {
		t.Errorf("check of a workflow at the source's position: exit %d, want 0:\n%s", code, out)
	}
	if code, out := check("--start-pos", "MariaDB/0-1-1"); code != 1 || !strings.Contains(out, "differs from its recorded position") {
		t.Errorf("check with another --start-pos: exit %d, want 1:\n%s", code, out)
	}
	// A position of a server id the source never logged.
	if _, err := e.dstPool.ExecContext(e.ctx(), "UPDATE `"+sidecar+"`.vreplication SET pos = 'MariaDB/0-999-5' WHERE workflow = ?", e.workflow); err != nil {
		t.Fatal(err)
	}
	if code, out := check(); code != 1 || !strings.Contains(out, "cannot continue from the workflow's recorded position MariaDB/0-999-5") {
		t.Errorf("check of a position the source does not have: exit %d, want 1:\n%s", code, out)
	}
}
