package main

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/vplayer/vplayer/"

// TestDeps_noBenchmark checks that the product binary links neither the benchmark
// (internal/bench, which is cmd/vplayer-bench's) nor, through anything but `vplayer demo`, the
// server launcher internal/mysqld, which starts servers and builds dolt with go install.
// internal/demo is the one importer left: it starts the demo's two servers.
func TestDeps_noBenchmark(t *testing.T) {
	imports := deps(t)
	if _, ok := imports[module+"internal/bench"]; ok {
		t.Errorf("cmd/vplayer links internal/bench: the benchmark belongs to cmd/vplayer-bench")
	}
	for pkg, imps := range imports {
		if slices.Contains(imps, module+"internal/mysqld") && pkg != module+"internal/demo" {
			t.Errorf("%s imports internal/mysqld, which cmd/vplayer links only for vplayer demo", strings.TrimPrefix(pkg, module))
		}
	}
	if _, ok := imports[module+"internal/cli"]; !ok {
		t.Fatalf("go list found no internal/cli among cmd/vplayer's dependencies: %d packages", len(imports))
	}
}

// deps returns every package cmd/vplayer links, each with its imports, from go list.
func deps(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, ".")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -deps: %v\n%s", err, stderr)
	}
	imports := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) > 0 {
			imports[f[0]] = f[1:]
		}
	}
	return imports
}
