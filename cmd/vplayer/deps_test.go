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

// TestDeps_eventuallyOnlyInTests checks that no package of the module imports the test helper
// internal/eventually outside its tests (go list's Imports leave test files out).
func TestDeps_eventuallyOnlyInTests(t *testing.T) {
	out := goList(t, "-e", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"...")
	n := 0
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		n++
		if slices.Contains(f[1:], module+"internal/eventually") {
			t.Errorf("%s imports internal/eventually outside its tests: it is a test helper", strings.TrimPrefix(f[0], module))
		}
	}
	if n < 10 {
		t.Fatalf("go list found %d packages in the module, want them all", n)
	}
}

// deps returns every package cmd/vplayer links, each with its imports, from go list.
func deps(t *testing.T) map[string][]string {
	t.Helper()
	out := goList(t, "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, ".")
	imports := map[string][]string{}
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) > 0 {
			imports[f[0]] = f[1:]
		}
	}
	return imports
}

// goList runs go list with args and returns its standard output.
func goList(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		var stderr []byte
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return string(out)
}
