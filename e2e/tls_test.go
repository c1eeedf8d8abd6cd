package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vplayer/vplayer/internal/mysqld"
	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
	"github.com/vplayer/vplayer/internal/tlsconfig/certtest"
	"github.com/vplayer/vplayer/stream"
)

// startTLSServer starts a binlog source of its own with the certificates: TLS on, not required
// of root (the harness connects in plaintext), required of the users the test creates.
func startTLSServer(t *testing.T, files certtest.Files) *mysqld.Server {
	t.Helper()
	if _, err := mysqld.Find(); err != nil {
		if errors.Is(err, mysqld.ErrNotFound) && os.Getenv(mysqltest.EnvRequire) != "1" {
			t.Skipf("%v (set %s=1 to fail instead)", err, mysqltest.EnvRequire)
		}
		t.Fatal(err)
	}
	s, err := mysqld.Start(context.Background(), mysqld.Options{
		Name: "tls", ServerID: 21, Binlog: true,
		ExtraArgs: []string{"--ssl-ca=" + files.CA, "--ssl-cert=" + files.ServerCert, "--ssl-key=" + files.ServerKey},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	return s
}

// TestTLS replicates from and to a MariaDB server that requires TLS of vplayer's users, with
// certificates the test makes: each mode that encrypts works (verify-identity with a client
// certificate to a user that requires one), a CA that did not sign the server's certificate fails
// with an error naming the CA file, and disabled is refused by the server.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	files, err := certtest.Write(dir, "db", "127.0.0.1", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	wrong, err := certtest.Write(dir, "wrong", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	s := startTLSServer(t, files)
	var have string
	root, err := s.DB("")
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := root.QueryRowContext(t.Context(), "SELECT @@have_ssl").Scan(&have); err != nil || have != "YES" {
		t.Fatalf("server have_ssl=%q, %v, want YES", have, err)
	}
	for _, q := range []string{
		"CREATE DATABASE src", "CREATE DATABASE dst",
		"CREATE TABLE src.t (id int NOT NULL PRIMARY KEY, v varchar(20) NOT NULL)",
		"CREATE TABLE dst.t (id int NOT NULL PRIMARY KEY, v varchar(20) NOT NULL)",
		"CREATE USER 'tls'@'%' IDENTIFIED BY 'tls-pw' REQUIRE SSL",
		"GRANT ALL ON *.* TO 'tls'@'%'",
		"CREATE USER 'x509'@'%' IDENTIFIED BY 'x509-pw' REQUIRE X509",
		"GRANT ALL ON *.* TO 'x509'@'%'",
	} {
		if _, err := root.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	addr := s.Addr()
	env := []string{"VPLAYER_SOURCE_PASSWORD=tls-pw", "VPLAYER_TARGET_PASSWORD=tls-pw"}
	next := 0
	// write inserts a row on the source and returns the positions before and after it.
	write := func() (before, after string) {
		t.Helper()
		p, err := stream.CurrentPosition(t.Context(), root, "mariadb")
		if err != nil {
			t.Fatal(err)
		}
		next++
		if _, err := root.ExecContext(t.Context(), "INSERT INTO src.t VALUES (?, 'row')", next); err != nil {
			t.Fatal(err)
		}
		q, err := stream.CurrentPosition(t.Context(), root, "mariadb")
		if err != nil {
			t.Fatal(err)
		}
		return p.String(), q.String()
	}
	run := func(workflow string, env []string, targetUser string, flags ...string) (int, string) {
		t.Helper()
		from, to := write()
		args := append([]string{"run", "--workflow", workflow,
			"--source", "tls@tcp(" + addr + ")/src", "--target", targetUser + "@tcp(" + addr + ")/dst",
			"--start-pos", from, "--stop-pos", to}, flags...)
		start := time.Now()
		code, out := runProc(t, env, 60*time.Second, args...)
		t.Logf("%s: exit %d in %v", workflow, code, time.Since(start).Round(time.Millisecond))
		return code, out
	}
	applied := func(id int) bool {
		var n int
		if err := root.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM dst.t WHERE id = ?", id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}

	t.Run("required", func(t *testing.T) {
		code, out := run("tls_required", env, "tls", "--source-tls-mode", "required", "--target-tls-mode", "required")
		if code != 0 || !applied(next) {
			t.Fatalf("exit %d, row applied %v, want 0 and the row:\n%s", code, applied(next), out)
		}
		if !strings.Contains(out, `binlog_tls=true`) {
			t.Errorf("log does not say the binlog connection uses TLS:\n%s", out)
		}
	})
	t.Run("verify-ca and verify-identity with a client certificate", func(t *testing.T) {
		code, out := run("tls_verify", []string{"VPLAYER_SOURCE_PASSWORD=tls-pw", "VPLAYER_TARGET_PASSWORD=x509-pw"}, "x509",
			"--source-tls-mode", "verify-ca", "--source-tls-ca", files.CA,
			"--target-tls-mode", "verify-identity", "--target-tls-ca", files.CA,
			"--target-tls-cert", files.ClientCert, "--target-tls-key", files.ClientKey)
		if code != 0 || !applied(next) {
			t.Fatalf("exit %d, row applied %v, want 0 and the row:\n%s", code, applied(next), out)
		}
	})
	t.Run("preferred by default", func(t *testing.T) {
		code, out := run("tls_preferred", env, "tls")
		if code != 0 || !applied(next) {
			t.Fatalf("exit %d, row applied %v, want 0 and the row:\n%s", code, applied(next), out)
		}
		// The user requires TLS of the binlog connection too: preferred found the server offers it.
		if !strings.Contains(out, "tls_mode=preferred binlog_tls=true") {
			t.Errorf("log does not say the binlog connection uses TLS under preferred:\n%s", out)
		}
	})
	t.Run("wrong CA", func(t *testing.T) {
		code, out := run("tls_wrong_ca", env, "tls", "--source-tls-ca", wrong.CA)
		want := fmt.Sprintf("not trusted by --source-tls-ca %s", wrong.CA)
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("exit %d, want 1 and an error containing %q:\n%s", code, want, out)
		}
	})
	t.Run("disabled", func(t *testing.T) {
		code, out := run("tls_disabled", env, "tls", "--source-tls-mode", "disabled", "--target-tls-mode", "disabled")
		if code != 1 || !strings.Contains(out, "Access denied") {
			t.Errorf("exit %d, want 1 and access denied for a user that requires TLS:\n%s", code, out)
		}
	})
}
