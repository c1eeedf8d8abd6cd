// Command archcheck checks the layer table of ARCHITECTURE.md (`| package | owns | may import |`)
// against the imports of the module's packages: every package has exactly one row, every row
// names a package, and the packages of the module a row's "may import" column names in backticks
// are exactly those its package's non-test files import ("everything" there checks nothing). Only
// the module's own packages are compared: standard and third-party ones are prose. Each failure
// names the row to add or change. `make vet` runs it from the module's root, and its test runs it
// on the module:
//
//	go run ./internal/tools/archcheck
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	fl := flag.NewFlagSet("archcheck", flag.ContinueOnError)
	fl.SetOutput(stderr)
	root := fl.String("root", ".", "the module's root directory")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	problems, err := checkModule(*root)
	if err != nil {
		fmt.Fprintf(stderr, "archcheck: %v\n", err)
		return 1
	}
	for _, p := range problems {
		fmt.Fprintf(stderr, "archcheck: %s\n", p)
	}
	if len(problems) > 0 {
		fmt.Fprintf(stderr, "archcheck: ARCHITECTURE.md's table differs from the imports in %d places\n", len(problems))
		return 1
	}
	return 0
}

// checkModule reads root's ARCHITECTURE.md and lists root's packages with go list, and returns
// what differs.
func checkModule(root string) ([]string, error) {
	md, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		return nil, err
	}
	rows, err := parseTable(md)
	if err != nil {
		return nil, fmt.Errorf("ARCHITECTURE.md: %w", err)
	}
	module, err := goList(root, "-m")
	if err != nil {
		return nil, err
	}
	listed, err := goList(root, "-e", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...")
	if err != nil {
		return nil, err
	}
	std, err := goList(root, "std")
	if err != nil {
		return nil, err
	}
	stdSet := map[string]bool{}
	for _, p := range strings.Fields(std) {
		stdSet[p] = true
	}
	return check(rows, parsePackages(strings.TrimSpace(module), listed), stdSet), nil
}

// goList runs go list with args in dir and returns its output.
func goList(dir string, args ...string) (string, error) {
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list %s: %w\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	if len(out) == 0 {
		return "", errors.New("go list " + strings.Join(args, " ") + ": no output")
	}
	return string(out), nil
}
