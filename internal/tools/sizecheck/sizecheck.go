package main

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"slices"
	"strconv"
	"strings"
)

// The limits: a non-test Go file over maxFileLines lines, or a function (from its func keyword to
// its closing brace) over maxFuncLines lines, is an offender.
const (
	maxFileLines = 400
	maxFuncLines = 80
)

// key names an offender: a file by its slash-separated path from the module's root, a function
// by its file and its name ("F", "T.M" or "(*T).M").
type key struct {
	path string
	fn   string // empty for the file itself
}

func (k key) String() string {
	if k.fn == "" {
		return k.path
	}
	return k.path + ": func " + k.fn
}

// size is a file's or a function's size in lines.
type size struct {
	key
	lines int
}

func (s size) limit() int {
	if s.fn == "" {
		return maxFileLines
	}
	return maxFuncLines
}

func (s size) over() bool { return s.lines > s.limit() }

// measure returns the sizes of one Go source file and of each function declared in it with a
// body. A generated file has none.
func measure(path string, src []byte) ([]size, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	if ast.IsGenerated(f) {
		return nil, nil
	}
	out := []size{{key{path: path}, countLines(src)}}
	seen := map[string]int{}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		name := funcName(fd)
		if seen[name]++; seen[name] > 1 { // init, or _: one entry each
			name += "#" + strconv.Itoa(seen[name])
		}
		n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
		out = append(out, size{key{path: path, fn: name}, n})
	}
	return out, nil
}

// countLines counts src's lines, a last line without its newline included.
func countLines(src []byte) int {
	n := bytes.Count(src, []byte("\n"))
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	return n
}

// funcName is fd's name as the allowlist spells it: "F", "T.M" or "(*T).M", type parameters left
// out.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	star := false
	if s, ok := t.(*ast.StarExpr); ok {
		star, t = true, s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	recv := "?"
	if id, ok := t.(*ast.Ident); ok {
		recv = id.Name
	}
	if star {
		return "(*" + recv + ")." + fd.Name.Name
	}
	return recv + "." + fd.Name.Name
}

// parseAllowlist reads the allowlist: one offender a line, "<lines> <path>" for a file and
// "<lines> <path> <func>" for a function; blank lines and lines starting with # are skipped.
func parseAllowlist(r io.Reader) (map[key]int, error) {
	allowed := map[key]int{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 && len(f) != 3 {
			return nil, fmt.Errorf("line %d: %q: want <lines> <path> [<func>]", n, line)
		}
		lines, err := strconv.Atoi(f[0])
		if err != nil || lines <= 0 {
			return nil, fmt.Errorf("line %d: %q is not a line count", n, f[0])
		}
		k := key{path: f[1]}
		if len(f) == 3 {
			k.fn = f[2]
		}
		if _, dup := allowed[k]; dup {
			return nil, fmt.Errorf("line %d: %s listed twice", n, k)
		}
		allowed[k] = lines
	}
	return allowed, sc.Err()
}

// allowlistHeader heads the allowlist that -update writes.
const allowlistHeader = `# The allowlist of internal/tools/sizecheck (run by make vet): the offenders it lets pass, non-test
# Go files over 400 lines and functions over 80, one "<lines> <path> [<func>]" a line, at their
# size when listed. The check fails on an offender not listed and on a listed one that grew. It
# has been empty since 2026-12-05: split an offender along its seams rather than list it.
`

// formatAllowlist writes the offenders among sizes as the allowlist, sorted by path, the file
// before its functions.
func formatAllowlist(sizes []size) []byte {
	sorted := slices.Clone(sizes)
	sortSizes(sorted)
	var b bytes.Buffer
	b.WriteString(allowlistHeader)
	for _, o := range sorted {
		if !o.over() {
			continue
		}
		if o.fn == "" {
			fmt.Fprintf(&b, "%d %s\n", o.lines, o.path)
		} else {
			fmt.Fprintf(&b, "%d %s %s\n", o.lines, o.path, o.fn)
		}
	}
	return b.Bytes()
}

func sortSizes(sizes []size) {
	slices.SortFunc(sizes, func(a, b size) int {
		if c := strings.Compare(a.path, b.path); c != 0 {
			return c
		}
		return strings.Compare(a.fn, b.fn)
	})
}

// report is the check's verdict: listed, one line per offender; failures, the offenders not in
// the allowlist and the listed ones that grew; notes, the listed ones that shrank, fell within
// their limit or are gone.
type report struct {
	listed, failures, notes []string
	files, funcs            int // offenders
}

// check compares the sizes measured with the allowlist.
func check(sizes []size, allowed map[key]int) report {
	sizes = slices.Clone(sizes)
	sortSizes(sizes)
	var r report
	seen := map[key]bool{}
	for _, o := range sizes {
		seen[o.key] = true
		was, ok := allowed[o.key]
		if !o.over() {
			if ok {
				r.notes = append(r.notes, fmt.Sprintf("%s: %d lines, no longer over %d: remove its allowlist entry", o.key, o.lines, o.limit()))
			}
			continue
		}
		if o.fn == "" {
			r.files++
		} else {
			r.funcs++
		}
		switch {
		case !ok:
			r.failures = append(r.failures, fmt.Sprintf("%s: %d lines, over %d, and not in the allowlist: split it", o.key, o.lines, o.limit()))
		case o.lines > was:
			r.failures = append(r.failures, fmt.Sprintf("%s: %d lines, grew from the allowlist's %d: shrink it to %d lines or fewer", o.key, o.lines, was, was))
		case o.lines < was:
			r.notes = append(r.notes, fmt.Sprintf("%s: %d lines, shrank from %d: lower its allowlist entry", o.key, o.lines, was))
		}
		r.listed = append(r.listed, fmt.Sprintf("%s: %d lines", o.key, o.lines))
	}
	var gone []key
	for k := range allowed {
		if !seen[k] {
			gone = append(gone, k)
		}
	}
	slices.SortFunc(gone, func(a, b key) int { return strings.Compare(a.String(), b.String()) })
	for _, k := range gone {
		r.notes = append(r.notes, fmt.Sprintf("%s: gone: remove its allowlist entry", k))
	}
	return r
}
