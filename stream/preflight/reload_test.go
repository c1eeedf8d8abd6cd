package preflight

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
)

// TestHasGlobalPrivilege: RELOAD is found among a user's global privileges as MySQL 8 lists them
// (each named, dynamic ones on a line of their own) and as MariaDB and older MySQL do (ALL
// PRIVILEGES); grants on a database, of a role or of PROXY give no global privilege.
func TestHasGlobalPrivilege(t *testing.T) {
	tests := []struct {
		name   string
		grants []string
		want   bool
	}{
		{"MySQL 8, named", []string{
			"GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO `repl`@`%`",
			"GRANT BACKUP_ADMIN ON *.* TO `repl`@`%`",
		}, true},
		{"MySQL 8, missing", []string{
			"GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO `repl`@`%`",
			"GRANT FLUSH_TABLES, RELOAD_ADMIN ON *.* TO `repl`@`%`",
		}, false},
		{"all privileges", []string{"GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` WITH GRANT OPTION"}, true},
		{"all, lower case", []string{"grant all on *.* to 'root'@'%'"}, true},
		{"usage only", []string{"GRANT USAGE ON *.* TO `repl`@`%`"}, false},
		{"on a database", []string{"GRANT ALL PRIVILEGES ON `shop`.* TO `repl`@`%`", "GRANT RELOAD ON `shop`.* TO `repl`@`%`"}, false},
		{"a role and a proxy", []string{"GRANT `reloader`@`%` TO `repl`@`%`", "GRANT PROXY ON ''@'' TO `repl`@`%` WITH GRANT OPTION"}, false},
		{"a role's privileges, expanded", []string{"GRANT USAGE ON *.* TO `repl`@`%`", "GRANT RELOAD ON *.* TO `repl`@`%`", "GRANT `reloader`@`%` TO `repl`@`%`"}, true},
		{"none", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := hasGlobalPrivilege(tt.grants, "RELOAD"); got != tt.want {
				t.Errorf("hasGlobalPrivilege(%q, RELOAD) = %v, want %v", tt.grants, got, tt.want)
			}
		})
	}
}

func TestAccountSQL(t *testing.T) {
	for _, tt := range []struct{ user, want string }{
		{"repl@%", "'repl'@'%'"},
		{"repl@10.0.%", "'repl'@'10.0.%'"},
		{"o'neil@localhost", "'o''neil'@'localhost'"},
		{"a@b@host", "'a@b'@'host'"},
	} {
		if got := accountSQL(tt.user); got != tt.want {
			t.Errorf("accountSQL(%q) = %s, want %s", tt.user, got, tt.want)
		}
	}
}

// TestReloadProblem reads a real user's grants: without RELOAD, the line names the grant to add;
// with it, nothing.
func TestReloadProblem(t *testing.T) {
	source, _ := mysqltest.Pair(t)
	admin := mysqltest.DB(t, source, mysqltest.DBName(t))
	const user = "vp_reload_check"
	account := "'" + user + "'@'%'"
	conn, err := admin.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	exec := func(stmts ...string) {
		t.Helper()
		for _, q := range stmts {
			if _, err := conn.ExecContext(t.Context(), q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	exec("SET SESSION sql_log_bin = 0", "DROP USER IF EXISTS "+account, "CREATE USER "+account+" IDENTIFIED BY 'pw'",
		"GRANT SELECT, REPLICATION CLIENT ON *.* TO "+account)
	t.Cleanup(func() { conn.ExecContext(t.Context(), "DROP USER IF EXISTS "+account) })

	src, err := sql.Open("mysql", fmt.Sprintf("%s:pw@tcp(%s)/", user, source.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	got := reloadProblem(t.Context(), src)
	t.Log(got)
	if want := "GRANT RELOAD ON *.* TO " + account; !strings.HasPrefix(got, "source: user "+user+"@%") || !strings.HasSuffix(got, want) {
		t.Errorf("without RELOAD: %q, want a line naming the user that ends with %q", got, want)
	}
	exec("GRANT RELOAD ON *.* TO " + account)
	if got := reloadProblem(t.Context(), src); got != "" {
		t.Errorf("with RELOAD: %q, want nothing", got)
	}
}
