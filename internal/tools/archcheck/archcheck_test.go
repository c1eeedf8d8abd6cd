package main

import (
	"slices"
	"strings"
	"testing"
)

// TestModule checks this module's ARCHITECTURE.md against its imports, as `make vet` does.
func TestModule(t *testing.T) {
	problems, err := checkModule("../../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

func TestParseTable(t *testing.T) {
	md := "# A\n\ntext | not a table\n\n" + tableHeader + "\n|---|---|---|\n" +
		"| `a` | owns a \\| b | `b`, go-sql-driver |\n" +
		"| `b/c` | owns | standard library only |\n" +
		"\n| `d` | after the table | `a` |\n"
	rows, err := parseTable([]byte(md))
	if err != nil {
		t.Fatal(err)
	}
	want := []row{{7, "a", "`b`, go-sql-driver"}, {8, "b/c", "standard library only"}}
	if !slices.Equal(rows, want) {
		t.Errorf("parseTable() = %+v, want %+v", rows, want)
	}

	for _, bad := range []string{
		"no table\n",
		tableHeader + "\n|---|---|---|\n",
		tableHeader + "\n|---|---|---|\n| `a` | two cells |\n",
		tableHeader + "\n|---|---|---|\n| a | no backticks | x |\n",
		tableHeader + "\n|---|---|---|\n| a` | one backtick | x |\n",
	} {
		if rows, err := parseTable([]byte(bad)); err == nil {
			t.Errorf("parseTable(%q) = %+v, want an error", bad, rows)
		}
	}
}

func TestParsePackages(t *testing.T) {
	listed := "m/a fmt m/b golang.org/x/sync/errgroup\nm/b\nother/c m/a\n"
	got := parsePackages("m", listed)
	if len(got) != 2 {
		t.Fatalf("parsePackages() = %+v, want m/a and m/b", got)
	}
	if a := got["a"]; !slices.Equal(a.own, []string{"b"}) || !slices.Equal(a.other, []string{"fmt", "golang.org/x/sync/errgroup"}) {
		t.Errorf("a = %+v, want own [b], other [fmt golang.org/x/sync/errgroup]", a)
	}
}

func TestCheck(t *testing.T) {
	std := map[string]bool{"fmt": true, "database/sql": true}
	pkgs := map[string]pkg{
		"cli":      {own: []string{"stream", "workflow"}, other: []string{"fmt", "github.com/spf13/pflag"}},
		"stream":   {own: []string{"workflow"}},
		"workflow": {other: []string{"database/sql"}},
		"e2e":      {},
		"gate":     {own: []string{"workflow"}, other: []string{"fmt", "golang.org/x/sync/errgroup"}},
		"leaf":     {},
	}
	rows := []row{
		{10, "cli", "`stream`, `workflow`, pflag"},
		{11, "stream", "`workflow` (positions), `relaylog`, `golang.org/x/sync`"},
		{12, "workflow", "standard library, `database/sql`"},
		{13, "e2e", "everything"},
		{14, "gone", "`workflow`"},
		{15, "stream", "`workflow`"},
		{16, "leaf", "`stream`"},
	}
	got := check(rows, pkgs, std)
	want := []string{
		"ARCHITECTURE.md:11: row `stream`: its may-import column names `relaylog`, which is no package of the module: remove or correct it",
		"ARCHITECTURE.md:14: row `gone`: no such package in the module: remove the row or correct its name",
		"ARCHITECTURE.md:15: row `stream`: a second row for the package (the first is line 11): keep one line per package",
		"ARCHITECTURE.md:16: row `leaf`: its may-import column lists `stream`, which leaf does not import: remove `stream` from it",
		"ARCHITECTURE.md: no row for package `gate`: add this line to the table, with what the package owns: | `gate` | ... | `workflow`, golang.org/x/sync/errgroup |",
	}
	if !slices.Equal(got, want) {
		t.Errorf("check() =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A package that imports one the row leaves out.
	pkgs["leaf"] = pkg{own: []string{"stream", "workflow"}}
	got = check([]row{{3, "leaf", "`stream`"}}, map[string]pkg{"leaf": pkgs["leaf"], "stream": {}, "workflow": {}}, std)
	want = []string{
		"ARCHITECTURE.md:3: row `leaf`: leaf imports `workflow`, which its may-import column does not list: add `workflow` to it",
		"ARCHITECTURE.md: no row for package `stream`: add this line to the table, with what the package owns: | `stream` | ... | standard library only |",
		"ARCHITECTURE.md: no row for package `workflow`: add this line to the table, with what the package owns: | `workflow` | ... | standard library only |",
	}
	if !slices.Equal(got, want) {
		t.Errorf("check() =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
