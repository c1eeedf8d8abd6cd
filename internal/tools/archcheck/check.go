package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// tableHeader is the header row of ARCHITECTURE.md's layer table.
const tableHeader = "| package | owns | may import |"

// row is one package's row of the table.
type row struct {
	line      int    // 1-based, in ARCHITECTURE.md
	pkg       string // relative to the module, as in the table's first column
	mayImport string // the third column, as written
}

// pkg is one package of the module: its imports from its non-test files, relative to the module
// when they are the module's, else as imported.
type pkg struct {
	own   []string // the module's packages, sorted
	other []string // the rest, sorted
}

// parseTable returns the rows of the table that follows tableHeader, up to the first line that
// is not a table row.
func parseTable(md []byte) ([]row, error) {
	lines := strings.Split(string(md), "\n")
	start := slices.Index(lines, tableHeader)
	if start < 0 {
		return nil, errors.New("no line " + tableHeader)
	}
	var rows []row
	for i := start + 2; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
		cells := splitRow(lines[i])
		if len(cells) != 3 {
			return nil, fmt.Errorf("line %d: %d cells, want 3: %s", i+1, len(cells), lines[i])
		}
		name, opened := strings.CutPrefix(cells[0], "`")
		name, closed := strings.CutSuffix(name, "`")
		if !opened || !closed || name == "" {
			return nil, fmt.Errorf("line %d: first cell %q, want a package in backticks", i+1, cells[0])
		}
		rows = append(rows, row{line: i + 1, pkg: name, mayImport: cells[2]})
	}
	if len(rows) == 0 {
		return nil, errors.New("no rows under " + tableHeader)
	}
	return rows, nil
}

// splitRow returns a table row's cells, trimmed; `\|` inside a cell is not a separator.
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	var cells []string
	var b strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			b.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(b.String()))
			b.Reset()
		default:
			b.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(b.String()))
}

// backticked returns the texts between backticks in s, in order.
func backticked(s string) []string {
	parts := strings.Split(s, "`")
	var names []string
	for i := 1; i < len(parts); i += 2 {
		names = append(names, parts[i])
	}
	return names
}

// parsePackages reads go list's lines "importpath import...", keeping the module's packages.
func parsePackages(module, listed string) map[string]pkg {
	pkgs := map[string]pkg{}
	for line := range strings.Lines(listed) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		name, ok := relative(module, f[0])
		if !ok {
			continue
		}
		var p pkg
		for _, imp := range f[1:] {
			if rel, ok := relative(module, imp); ok {
				p.own = append(p.own, rel)
			} else {
				p.other = append(p.other, imp)
			}
		}
		slices.Sort(p.own)
		slices.Sort(p.other)
		pkgs[name] = p
	}
	return pkgs
}

// relative returns path relative to module when it is in the module.
func relative(module, path string) (string, bool) {
	return strings.CutPrefix(path, module+"/")
}

// check compares the table's rows with the module's packages and returns each difference as
// what to add, change or remove, in the table's order, then the missing rows in the packages'.
// std holds the standard library's packages: a backticked standard package is prose.
func check(rows []row, pkgs map[string]pkg, std map[string]bool) []string {
	var problems []string
	seen := map[string]int{}
	for _, r := range rows {
		at := fmt.Sprintf("ARCHITECTURE.md:%d: row `%s`", r.line, r.pkg)
		if first, ok := seen[r.pkg]; ok {
			problems = append(problems, fmt.Sprintf("%s: a second row for the package (the first is line %d): keep one line per package", at, first))
			continue
		}
		seen[r.pkg] = r.line
		p, ok := pkgs[r.pkg]
		if !ok {
			problems = append(problems, at+": no such package in the module: remove the row or correct its name")
			continue
		}
		if r.mayImport == "everything" {
			continue
		}
		listed := map[string]bool{}
		for _, name := range backticked(r.mayImport) {
			switch _, own := pkgs[name]; {
			case own:
				listed[name] = true
			case std[name] || isExternal(name):
			default:
				problems = append(problems, fmt.Sprintf("%s: its may-import column names `%s`, which is no package of the module: remove or correct it", at, name))
			}
		}
		for _, imp := range p.own {
			if !listed[imp] {
				problems = append(problems, fmt.Sprintf("%s: %s imports `%s`, which its may-import column does not list: add `%s` to it", at, r.pkg, imp, imp))
			}
		}
		for _, name := range slices.Sorted(maps.Keys(listed)) {
			if !slices.Contains(p.own, name) {
				problems = append(problems, fmt.Sprintf("%s: its may-import column lists `%s`, which %s does not import: remove `%s` from it", at, name, r.pkg, name))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(pkgs)) {
		if _, ok := seen[name]; !ok {
			problems = append(problems, fmt.Sprintf("ARCHITECTURE.md: no row for package `%s`: add this line to the table, with what the package owns: | `%s` | ... | %s |", name, name, suggest(pkgs[name], std)))
		}
	}
	return problems
}

// isExternal reports whether name is a third-party import path: its first element has a dot.
func isExternal(name string) bool {
	first, _, _ := strings.Cut(name, "/")
	return strings.Contains(first, ".")
}

// suggest returns a may-import column for p: its imports of the module's packages in backticks,
// then its third-party imports; "standard library only" when it has neither.
func suggest(p pkg, std map[string]bool) string {
	var names []string
	for _, name := range p.own {
		names = append(names, "`"+name+"`")
	}
	for _, name := range p.other {
		if !std[name] {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return "standard library only"
	}
	return strings.Join(names, ", ")
}
