package demo

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vplayer/vplayer/internal/mysqld"
)

// TestRun runs a short demo end to end, so that `make demo` cannot rot.
func TestRun(t *testing.T) {
	if _, err := mysqld.Find(); errors.Is(err, mysqld.ErrNotFound) {
		if os.Getenv("VPLAYER_REQUIRE_MYSQL") == "1" {
			t.Fatalf("VPLAYER_REQUIRE_MYSQL=1 but no server binary: %v", err)
		}
		t.Skipf("no mysqld/mariadbd (install mariadb-server or set VPLAYER_MYSQLD): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	err := Run(ctx, &out, Options{WorkloadFor: 3 * time.Second, ProgressEvery: time.Second, Deadline: 2 * time.Second})
	t.Logf("demo output:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"RESULT: target == source", "applier stalled", "recovered", "Done:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	if got := strings.Count(out.String(), "RESULT: target == source"); got != 2 {
		t.Errorf("demo proved equality %d times, want 2 (after each act)", got)
	}
}
