package cli_test

import (
	"strings"
	"testing"

	"github.com/vplayer/vplayer/internal/cli"
	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
)

func TestCheck(t *testing.T) {
	source, target := mysqltest.Pair(t)
	name := mysqltest.DBName(t)
	src, dst := mysqltest.DB(t, source, name), mysqltest.DB(t, target, name)
	for _, q := range []string{"CREATE TABLE a (id int PRIMARY KEY)", "CREATE TABLE b (id int PRIMARY KEY, v int)"} {
		if _, err := src.ExecContext(t.Context(), q); err != nil {
			t.Fatal(err)
		}
		if _, err := dst.ExecContext(t.Context(), q); err != nil {
			t.Fatal(err)
		}
	}
	check := func(extra ...string) result {
		return runMain(t, append([]string{"check", "--workflow", "w", "--source", source.DSN(name), "--target", target.DSN(name),
			"--sidecar-db", name + "_vt", "--start-pos", "current"}, extra...)...)
	}
	if r := check(); r.code != cli.ExitOK || !strings.Contains(r.stdout, "every check passed") {
		t.Errorf("check of a ready pair: %v, want exit 0", r)
	}
	if _, err := dst.ExecContext(t.Context(), "DROP TABLE b"); err != nil {
		t.Fatal(err)
	}
	r := check()
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != cli.ExitError || len(lines) != 2 || !strings.Contains(lines[0], "table "+name+".b does not exist") {
		t.Errorf("check with a table missing on the target: %v, want exit 1, one finding and the summary", r)
	}
	// Without --start-pos the workflow would copy first, which creates the missing table.
	if r := runMain(t, "check", "--workflow", "w", "--source", source.DSN(name), "--target", target.DSN(name), "--sidecar-db", name+"_vt"); r.code != cli.ExitOK {
		t.Errorf("check of a workflow that copies first: %v, want exit 0", r)
	}
}

func TestCheck_usage(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr []string
	}{
		{"check --help", []string{"check", "--help"}, cli.ExitOK, []string{"writes nothing", "Exit codes: 0 every check passed; 1 a finding; 2 bad usage", "--wait-while-stopped"}},
		{"check without --workflow", []string{"check", "--source", badSource, "--target", badTarget}, cli.ExitUsage, []string{"--workflow"}},
		{"check with an argument", []string{"check", "--workflow", "w", "--source", badSource, "--target", badTarget, "x"}, cli.ExitUsage, []string{"unexpected"}},
		{"check unreachable", []string{"check", "--workflow", "w", "--source", badSource, "--target", badTarget}, cli.ExitError, []string{"check failed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runMain(t, tt.args...)
			if r.code != tt.wantCode {
				t.Errorf("Main(%q): exit %d, want %d (%v)", tt.args, r.code, tt.wantCode, r)
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("Main(%q): stderr %q, want it to contain %q", tt.args, r.stderr, w)
				}
			}
			assertNoSecrets(t, r, dsnPassword, envPassword)
		})
	}
}
