package mysqld

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

func TestServerArgs(t *testing.T) {
	l := newLayout("/tmp/x")
	tests := []struct {
		name    string
		flavor  string
		opts    Options
		want    []string
		notWant []string
	}{
		{
			name:   "mariadb source",
			flavor: FlavorMariaDB,
			opts:   Options{Binlog: true},
			want: []string{"--server-id=1", "--log-bin=binlog", "--binlog-format=ROW",
				"--binlog-row-image=FULL", "--binlog-row-metadata=FULL", "--log-slave-updates",
				"--innodb-flush-log-at-trx-commit=2", "--sync-binlog=0", "--bind-address=127.0.0.1",
				"--port=4000", "--performance-schema=OFF", "--socket=/tmp/x/mysqld.sock"},
		},
		{
			name:    "mariadb target durable",
			flavor:  FlavorMariaDB,
			opts:    Options{ServerID: 2, Durable: true, ExtraArgs: []string{"--max-connections=10"}},
			want:    []string{"--server-id=2", "--innodb-flush-log-at-trx-commit=1", "--sync-binlog=1", "--innodb-log-file-size=48M"},
			notWant: []string{"--log-bin=binlog", "--binlog-format=ROW"},
		},
		{
			name:    "mariadb redo log size",
			flavor:  FlavorMariaDB,
			opts:    Options{LogFileSize: "96M"},
			want:    []string{"--innodb-log-file-size=96M"},
			notWant: []string{"--innodb-log-file-size=48M"},
		},
		{
			name:   "mysql source",
			flavor: FlavorMySQL,
			opts:   Options{Binlog: true},
			want: []string{"--log-bin=binlog", "--gtid-mode=ON", "--enforce-gtid-consistency=ON",
				"--mysqlx=OFF", "--binlog-row-metadata=FULL"},
		},
		{
			name:    "mysql target",
			flavor:  FlavorMySQL,
			opts:    Options{ServerID: 3},
			want:    []string{"--skip-log-bin", "--server-id=3"},
			notWant: []string{"--log-bin=binlog"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := serverArgs(tt.flavor, tt.opts, l, 4000)
			if got, want := args[0], "--no-defaults"; got != want {
				t.Errorf("args[0]=%q, want %q", got, want)
			}
			for _, w := range tt.want {
				if !slices.Contains(args, w) {
					t.Errorf("args lack %q: %v", w, args)
				}
			}
			for _, w := range tt.notWant {
				if slices.Contains(args, w) {
					t.Errorf("args contain %q: %v", w, args)
				}
			}
			if n := len(tt.opts.ExtraArgs); n > 0 {
				if got, want := args[len(args)-n:], tt.opts.ExtraArgs; !slices.Equal(got, want) {
					t.Errorf("args end with %q, want extra args %q", got, want)
				}
			}
		})
	}
}

func TestOptions_validate(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{name: "zero", opts: Options{}},
		{name: "good name", opts: Options{Name: "source-1_a"}},
		{name: "slash in name", opts: Options{Name: "a/b"}, wantErr: "only letters"},
		{name: "long name", opts: Options{Name: strings.Repeat("a", maxNameLen+1)}, wantErr: "longer than"},
		{name: "bare extra arg", opts: Options{ExtraArgs: []string{"skip-log-bin"}}, wantErr: "want --name=value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("validate()=%v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("validate()=%v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestInitArgs(t *testing.T) {
	l := newLayout("/tmp/x")
	prog, args := initArgs(FlavorMariaDB, "/usr/sbin/mariadbd", "/usr/bin/mariadb-install-db", "", Options{}, l)
	if got, want := prog, "/usr/bin/mariadb-install-db"; got != want {
		t.Errorf("mariadb init program=%q, want %q", got, want)
	}
	for _, w := range []string{"--auth-root-authentication-method=normal", "--skip-test-db", "--datadir=/tmp/x/data", "--innodb-log-file-size=48M"} {
		if !slices.Contains(args, w) {
			t.Errorf("mariadb init args lack %q: %v", w, args)
		}
	}
	// The redo log is created at the size the server then runs with.
	_, args = initArgs(FlavorMariaDB, "/usr/sbin/mariadbd", "/usr/bin/mariadb-install-db", "", Options{LogFileSize: "96M"}, l)
	if !slices.Contains(args, "--innodb-log-file-size=96M") {
		t.Errorf("mariadb init args with LogFileSize 96M lack --innodb-log-file-size=96M: %v", args)
	}
	prog, args = initArgs(FlavorMySQL, "/usr/sbin/mysqld", "", "", Options{}, l)
	if got, want := prog, "/usr/sbin/mysqld"; got != want {
		t.Errorf("mysql init program=%q, want %q", got, want)
	}
	if got, want := args[:2], []string{"--no-defaults", "--initialize-insecure"}; !slices.Equal(got, want) {
		t.Errorf("mysql init args start %q, want %q", got, want)
	}
}

func TestFind_env(t *testing.T) {
	t.Setenv(EnvBinary, "/nonexistent/mariadbd")
	if _, err := Find(); err == nil {
		t.Fatal("Find() with a missing VPLAYER_MYSQLD: got nil error")
	}
	exe := t.TempDir() + "/mariadbd"
	writeExecutable(t, exe)
	t.Setenv(EnvBinary, exe)
	got, err := Find()
	if err != nil {
		t.Fatalf("Find()=%v", err)
	}
	if want := exe; got != want {
		t.Errorf("Find()=%q, want %q", got, want)
	}
}

func TestFind_notFound(t *testing.T) {
	saved := sbinDirs
	t.Cleanup(func() { sbinDirs = saved })
	sbinDirs = []string{t.TempDir()}
	t.Setenv(EnvBinary, "")
	t.Setenv("PATH", t.TempDir())
	_, err := Find()
	if err == nil {
		t.Fatal("Find() on an empty PATH: got nil error")
	}
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("Find()=%v, want an error wrapping ErrNotFound", err)
	}
	for _, want := range []string{"apt-get install mariadb-server", EnvBinary} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Find()=%q, want it to mention %q", err, want)
		}
	}
}

func writeExecutable(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}
