package e2e

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vplayer/vplayer/applier"
)

// versionedPlainChanges are the changes a system-versioned source table vp logs with its
// history: an UPDATE logs the update of the current row and the insert of the history row it
// replaced (both of key 1), a DELETE an update that ends the row, DELETE HISTORY the deletes of
// the history rows (keys 1 and 2).
var versionedPlainChanges = []string{
	"UPDATE vp SET v = 'x0', n = n + 1 WHERE id = 1",
	"UPDATE vp SET v = 'x1', n = n + 1 WHERE id = 1",
	"UPDATE vp SET v = 'x2', n = n + 1 WHERE id = 1",
	"DELETE FROM vp WHERE id = 2",
	"DELETE HISTORY FROM vp",
}

// TestVersioned_plainTarget: a table system-versioned on the source (hidden row_start and row_end)
// and plain on the target cannot be applied exactly: written as they are, the history rows
// overwrite the current rows of their keys, a deleted row stays and DELETE HISTORY deletes
// current rows. In strict and in idempotent mode, a table that becomes versioned on the source
// while the stream runs (--on-ddl ignore) stops the stream at its first change with a terminal
// error naming the table, the source transaction, the position, the cause and the fix; the
// target keeps the rows it had, equal to the source's before the change.
func TestVersioned_plainTarget(t *testing.T) {
	for _, mode := range []string{applier.ExecModeStrict, applier.ExecModeIdempotent} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t)
			e.execBoth("CREATE TABLE vp (id INT NOT NULL PRIMARY KEY, v VARCHAR(20), n INT)")
			cfg := e.streamConfig()
			cfg.ExecMode = mode
			stop := e.runStream(cfg)
			e.waitRunning(30 * time.Second)
			e.execOn(e.src, "INSERT INTO vp VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3)")
			e.waitCaughtUp(30 * time.Second)
			e.assertEqual([]string{"vp"})
			before := e.checksums(e.dst, "vp")

			e.execOn(e.src, "ALTER TABLE vp ADD SYSTEM VERSIONING")
			e.execOn(e.src, versionedPlainChanges[0])
			gtid := strings.TrimPrefix(e.sourcePos().String(), "MariaDB/")
			e.execOn(e.src, versionedPlainChanges[1:]...)
			r := e.waitState("Error", 30*time.Second)
			err := stop()
			if !applier.IsTerminal(err) || !errors.Is(err, applier.ErrInexact) {
				t.Errorf("stream ended with %v, want a terminal change that cannot be applied exactly", err)
			}
			t.Logf("message: %s", r.Message)
			for _, w := range []string{"terminal error: change cannot be applied exactly: ", "system-versioned (WITH SYSTEM VERSIONING) on the source but not on the target",
				fmt.Sprintf("table `%s`.`vp`", e.db), "source transaction " + gtid, "after position MariaDB/",
				"make the target table system-versioned like the source's", "leave the table out of the workflow (--tables)"} {
				if !strings.Contains(r.Message, w) {
					t.Errorf("record message lacks %q:\n%s", w, r.Message)
				}
			}
			if after := e.checksums(e.dst, "vp"); after != before {
				t.Errorf("target vp changed by the refused changes: checksum %s, before %s", after, before)
			}
		})
	}
}

// TestVersioned_plainTargetPreflight: with vp system-versioned on the source and plain on the
// target, vplayer check and run's preflight (strict and idempotent) fail before anything is
// written, with one line naming the table and the fix; the other tables pass.
func TestVersioned_plainTargetPreflight(t *testing.T) {
	e := newEnv(t)
	e.execOn(e.src, "CREATE TABLE vp (id INT NOT NULL PRIMARY KEY, v VARCHAR(20), n INT) WITH SYSTEM VERSIONING")
	e.execOn(e.dst, "CREATE TABLE vp (id INT NOT NULL PRIMARY KEY, v VARCHAR(20), n INT)")
	e.execBoth("CREATE TABLE vv (id INT NOT NULL PRIMARY KEY, v INT) WITH SYSTEM VERSIONING", "CREATE TABLE pl (id INT NOT NULL PRIMARY KEY, v INT)")
	sidecar := e.db + "_pf"
	want := fmt.Sprintf("target: table %s.vp is not system-versioned but the source's %s.vp is (WITH SYSTEM VERSIONING)", e.db, e.db)
	for _, cmd := range [][]string{{"check"}, {"run", "--exec-mode", "strict"}, {"run", "--exec-mode", "idempotent"}} {
		args := append(cmd, "--workflow", e.workflow, "--source", e.source.DSN(e.db), "--target", e.target.DSN(e.db),
			"--sidecar-db", sidecar, "--start-pos", "current")
		srcBefore, dstBefore := e.writeCounters(e.srcPool), e.writeCounters(e.dstPool)
		code, out, errOut := runSplit(t, nil, args...)
		all := out + errOut
		t.Logf("vplayer %s: exit %d\n%s", strings.Join(cmd, " "), code, all)
		if code != 1 || strings.Count(all, want) != 1 {
			t.Errorf("vplayer %s: exit %d, want 1 with one line %q:\n%s", strings.Join(cmd, " "), code, want, all)
		}
		for _, w := range []string{"re-create it from SHOW CREATE TABLE " + e.db + ".vp on the source", "leave the table out of --tables"} {
			if !strings.Contains(all, w) {
				t.Errorf("vplayer %s: output lacks %q:\n%s", strings.Join(cmd, " "), w, all)
			}
		}
		if strings.Contains(all, ".vv ") || strings.Contains(all, ".pl ") {
			t.Errorf("vplayer %s: a line names vv or pl, which are the same kind on both sides:\n%s", strings.Join(cmd, " "), all)
		}
		for side, c := range map[string][2]map[string]int64{"source": {srcBefore, e.writeCounters(e.srcPool)}, "target": {dstBefore, e.writeCounters(e.dstPool)}} {
			for name, n := range c[1] {
				if n != c[0][name] {
					t.Errorf("vplayer %s: %s's %s went from %d to %d", strings.Join(cmd, " "), side, name, c[0][name], n)
				}
			}
		}
		if e.schemaExists(sidecar) {
			t.Errorf("vplayer %s created the sidecar database %s", strings.Join(cmd, " "), sidecar)
		}
	}
}

// TestVersioned_deleteHistoryDenied: a target user without the DELETE HISTORY privilege cannot
// apply a system-versioned table's DELETE HISTORY (error 1142): the stream stops at it with a
// terminal error naming the statement, the position and the GRANT to run, exit code 1; the rows
// before it are applied.
func TestVersioned_deleteHistoryDenied(t *testing.T) {
	e := newEnv(t)
	e.execBoth("CREATE TABLE vh (id INT NOT NULL PRIMARY KEY, v INT) WITH SYSTEM VERSIONING")
	user, pw := fmt.Sprintf("nodh%d", time.Now().UnixNano()%1e6), "nodh-pw"
	e.execOn(e.dstPool, fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY '%s'", user, pw), fmt.Sprintf("GRANT ALL PRIVILEGES ON *.* TO '%s'@'%%'", user),
		fmt.Sprintf("REVOKE DELETE HISTORY ON *.* FROM '%s'@'%%'", user))
	t.Cleanup(func() { e.dstPool.Exec(fmt.Sprintf("DROP USER '%s'@'%%'", user)) })
	target := strings.Replace(e.target.DSN(e.db), "root@", user+":"+pw+"@", 1)
	p := e.startVplayerWith(binary, target)
	e.waitRunning(30 * time.Second)
	e.execOn(e.src, "INSERT INTO vh VALUES (1, 1), (2, 2)", "UPDATE vh SET v = 10 WHERE id = 1", "DELETE FROM vh WHERE id = 2")
	e.waitCaughtUp(30 * time.Second)
	e.assertEqual([]string{"vh"})
	e.execOn(e.src, "DELETE HISTORY FROM vh")
	gtid := strings.TrimPrefix(e.sourcePos().String(), "MariaDB/")
	r := e.waitState("Error", 30*time.Second)
	t.Logf("message: %s", r.Message)
	for _, w := range []string{"terminal error: the target user lacks a privilege: DELETE HISTORY FROM `" + e.db + "`.`vh`", "source transaction " + gtid,
		"after position MariaDB/", "Error 1142", fmt.Sprintf("GRANT DELETE HISTORY ON `%s`.* TO '%s'@'%%'", e.db, user)} {
		if !strings.Contains(r.Message, w) {
			t.Errorf("record message lacks %q:\n%s", w, r.Message)
		}
	}
	if code := p.wait(30 * time.Second); code != 1 {
		t.Errorf("vplayer exited %d, want 1", code)
	}
	var hist int
	if err := e.dst.QueryRowContext(e.ctx(), "SELECT COUNT(*) FROM vh FOR SYSTEM_TIME ALL WHERE row_end < NOW(6)").Scan(&hist); err != nil {
		t.Fatal(err)
	}
	if hist != 2 {
		t.Errorf("target vh has %d history rows, want the 2 the refused DELETE HISTORY left", hist)
	}
}
