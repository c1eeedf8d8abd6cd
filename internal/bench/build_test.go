package bench_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vplayer/vplayer/internal/bench"
)

// TestBuildVplayer builds vplayer from this tree, as vplayer-bench does when no --vplayer is
// given, and runs the binary.
func TestBuildVplayer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds vplayer")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	path, err := bench.BuildVplayer(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, path, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", path, err, out)
	}
	if !strings.Contains(string(out), "vplayer") {
		t.Errorf("%s version printed %q, want vplayer's version", path, out)
	}
}
