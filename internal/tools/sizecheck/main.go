// Command sizecheck lists every non-test Go file of the module over 400 lines and every function
// over 80, and fails on any not in its allowlist or grown past its entry: a ratchet, so that the
// offenders of today can only shrink. `make vet` runs it from the module's root:
//
//	go run ./internal/tools/sizecheck
//
// -update rewrites the allowlist with the offenders found (to trim it once some shrank).
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("sizecheck", flag.ContinueOnError)
	fl.SetOutput(stderr)
	root := fl.String("root", ".", "the module's root directory")
	allowPath := fl.String("allowlist", "internal/tools/sizecheck/allowlist.txt", "the allowlist, relative to -root")
	update := fl.Bool("update", false, "rewrite the allowlist with the offenders found, and exit")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	sizes, err := measureTree(*root)
	if err != nil {
		fmt.Fprintf(stderr, "sizecheck: %v\n", err)
		return 1
	}
	path := filepath.Join(*root, *allowPath)
	if *update {
		if err := os.WriteFile(path, formatAllowlist(sizes), 0o644); err != nil {
			fmt.Fprintf(stderr, "sizecheck: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "sizecheck: wrote %s\n", path)
		return 0
	}
	b, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(stderr, "sizecheck: %v\n", err)
		return 1
	}
	allowed, err := parseAllowlist(bytes.NewReader(b))
	if err != nil {
		fmt.Fprintf(stderr, "sizecheck: %s: %v\n", path, err)
		return 1
	}
	r := check(sizes, allowed)
	fmt.Fprintf(stdout, "sizecheck: %d files over %d lines, %d functions over %d (allowlist %s):\n", r.files, maxFileLines, r.funcs, maxFuncLines, *allowPath)
	for _, l := range r.listed {
		fmt.Fprintf(stdout, "  %s\n", l)
	}
	for _, n := range r.notes {
		fmt.Fprintf(stdout, "sizecheck: note: %s\n", n)
	}
	for _, f := range r.failures {
		fmt.Fprintf(stderr, "sizecheck: %s\n", f)
	}
	if len(r.failures) > 0 {
		fmt.Fprintf(stderr, "sizecheck: %d new or grown offenders\n", len(r.failures))
		return 1
	}
	return 0
}

// measureTree measures every non-test Go file under root, leaving out testdata, vendor and
// directories whose names start with . or _, as the go command does; paths are slash-separated
// and relative to root.
func measureTree(root string) ([]size, error) {
	var sizes []size
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		s, err := measure(filepath.ToSlash(rel), src)
		if err != nil {
			return err
		}
		sizes = append(sizes, s...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(sizes) == 0 {
		return nil, errors.New("no Go files under " + root)
	}
	return sizes, nil
}
