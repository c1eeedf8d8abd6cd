package mysqld

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeDolt writes an executable dolt in dir that reports version v.
func fakeDolt(t *testing.T, dir, v string) string {
	t.Helper()
	p := filepath.Join(dir, "dolt")
	script := "#!/bin/sh\n[ \"$1\" = version ] && echo 'dolt version " + v + "'\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFindDolt: the pinned version is found on PATH and in the cache, another version is passed
// over with a message saying so, and VPLAYER_DOLT must be the pinned version.
func TestFindDolt(t *testing.T) {
	isolate := func(t *testing.T) (path, cache string) {
		path, home := t.TempDir(), t.TempDir()
		t.Setenv("PATH", path)
		t.Setenv("HOME", home)
		t.Setenv("XDG_CACHE_HOME", filepath.Join(home, "cache"))
		t.Setenv("GOPATH", filepath.Join(home, "go"))
		t.Setenv("GOBIN", "")
		t.Setenv(EnvDolt, "")
		cache, err := DoltCacheDir()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(cache, 0o755); err != nil {
			t.Fatal(err)
		}
		return path, cache
	}
	t.Run("on PATH", func(t *testing.T) {
		path, _ := isolate(t)
		want := fakeDolt(t, path, DoltVersion)
		if got, err := FindDolt(t.Context()); err != nil || got != want {
			t.Errorf("FindDolt() = %q, %v; want %q", got, err, want)
		}
	})
	t.Run("wrong version on PATH, pinned one in the cache", func(t *testing.T) {
		path, cache := isolate(t)
		fakeDolt(t, path, "1.0.0")
		want := fakeDolt(t, cache, DoltVersion)
		if got, err := FindDolt(t.Context()); err != nil || got != want {
			t.Errorf("FindDolt() = %q, %v; want the cached %q", got, err, want)
		}
	})
	t.Run("only a wrong version", func(t *testing.T) {
		path, _ := isolate(t)
		fakeDolt(t, path, "1.0.0")
		_, err := FindDolt(t.Context())
		if !errors.Is(err, ErrDoltNotFound) || !strings.Contains(err.Error(), `is "1.0.0"`) || !strings.Contains(err.Error(), "scripts/ensure-dolt.sh") {
			t.Errorf("FindDolt() error = %v, want ErrDoltNotFound naming the version seen and the script", err)
		}
	})
	t.Run("VPLAYER_DOLT of another version", func(t *testing.T) {
		path, _ := isolate(t)
		fakeDolt(t, path, DoltVersion)
		other := fakeDolt(t, t.TempDir(), "1.0.0")
		t.Setenv(EnvDolt, other)
		_, err := FindDolt(t.Context())
		if err == nil || errors.Is(err, ErrDoltNotFound) || !strings.Contains(err.Error(), EnvDolt) {
			t.Errorf("FindDolt() error = %v, want an error naming %s (not a skip)", err, EnvDolt)
		}
	})
}

// TestStartDolt: a started Dolt is a MySQL-flavour binlog primary with the server id asked;
// Restart brings it back on the same port with its data and GTIDs; Stop removes its directory.
func TestStartDolt(t *testing.T) {
	binary, err := FindDolt(t.Context())
	if errors.Is(err, ErrDoltNotFound) && os.Getenv("VPLAYER_REQUIRE_MYSQL") != "1" {
		t.Skipf("%v (set VPLAYER_REQUIRE_MYSQL=1 to fail instead)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	s, err := StartDolt(t.Context(), binary, DoltOptions{Name: "dolt", ServerID: 42})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if got, want := s.Flavor(), FlavorMySQL; got != want {
		t.Errorf("Flavor() = %q, want %q", got, want)
	}
	db, err := s.DB("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var logBin, gtidMode, enforce string
	var serverID int
	if err := db.QueryRowContext(t.Context(), "SELECT @@GLOBAL.log_bin, @@GLOBAL.gtid_mode, @@GLOBAL.enforce_gtid_consistency, @@GLOBAL.server_id").Scan(&logBin, &gtidMode, &enforce, &serverID); err != nil {
		t.Fatal(err)
	}
	if logBin != "1" || gtidMode != "ON" || enforce != "ON" || serverID != 42 {
		t.Errorf("log_bin=%s gtid_mode=%s enforce_gtid_consistency=%s server_id=%d, want 1, ON, ON, 42", logBin, gtidMode, enforce, serverID)
	}
	for _, q := range []string{"CREATE DATABASE d", "CREATE TABLE d.t (id int PRIMARY KEY)", "INSERT INTO d.t VALUES (1)"} {
		if _, err := db.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	gtids := func() string {
		var g string
		if err := db.QueryRowContext(t.Context(), "SELECT @@GLOBAL.gtid_executed").Scan(&g); err != nil {
			t.Fatal(err)
		}
		return g
	}
	before, port := gtids(), s.Port()
	if before == "" {
		t.Fatal("gtid_executed empty after three statements")
	}
	if err := s.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := s.Port(); got != port {
		t.Errorf("port after Restart = %d, want %d", got, port)
	}
	if got := gtids(); got != before {
		t.Errorf("gtid_executed after Restart = %q, want %q", got, before)
	}
	var n int
	if err := db.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM d.t").Scan(&n); err != nil || n != 1 {
		t.Errorf("rows after Restart = %d, %v; want 1", n, err)
	}
	root := s.dir.root
	if err := s.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("directory %s after Stop: %v, want it removed", root, err)
	}
	if err := s.Restart(t.Context()); err == nil {
		t.Errorf("Restart after Stop succeeded, want an error")
	}
}
