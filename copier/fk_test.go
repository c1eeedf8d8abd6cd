package copier

import (
	"slices"
	"testing"
)

// TestFKOrder: which tables wait for which, which are copied whole, and when a table's changes
// go in with the source's checks, for the shapes foreign keys take.
func TestFKOrder(t *testing.T) {
	tables := []string{"child", "emp", "grandchild", "note", "parent", "a", "b", "cat", "loner", "x", "y", "keyed"}
	o := newFKOrder(tables, []fkEdge{
		{table: "child", parent: "parent", cascades: true},
		{table: "grandchild", parent: "child", cascades: true},
		{table: "note", parent: "parent"},
		{table: "note", parent: "parent"},                    // a second key to the same parent
		{table: "emp", parent: "emp"},                        // a self-reference that only restricts
		{table: "cat", parent: "cat", cascades: true},        // a tree whose subtrees cascade
		{table: "a", parent: "b"}, {table: "b", parent: "a"}, // a cycle
		{table: "a", parent: "x"}, {table: "b", parent: "y"}, // whose members reference other tables
		{table: "keyed", parent: "parent", cascades: true, movesKey: true}, // a key update cascades into its key
		{table: "loner", parent: "elsewhere", cascades: true},              // a table the copy does not hold
		{table: "elsewhere", parent: "parent", cascades: true},
	})
	for table, want := range map[string][]string{
		"child": {"parent"}, "grandchild": {"child"}, "note": {"parent"},
		"emp": nil, "cat": nil, "a": {"x", "y"}, "b": {"x", "y"}, "loner": nil, "parent": nil, "keyed": {"parent"},
	} {
		if got := o.after[table]; !slices.Equal(got, want) {
			t.Errorf("%s starts after %v, want %v", table, got, want)
		}
	}
	if got := o.refs["a"]; !slices.Equal(got, []string{"b", "x"}) {
		t.Errorf("a references %v, want [b x]", got)
	}
	for table, want := range map[string]bool{"cat": true, "a": true, "b": true, "keyed": true, "emp": false, "child": false, "parent": false} {
		if got := o.whole(table); got != want {
			t.Errorf("whole(%s) = %v, want %v", table, got, want)
		}
	}
	if g := o.group["a"]; len(g) != 2 || !slices.Contains(g, "b") {
		t.Errorf("a's group %v, want a and b", g)
	}

	done := map[string]bool{"parent": true, "child": true, "a": true, "x": true}
	isDone := func(t string) bool { return done[t] }
	for table, want := range map[string]bool{"child": true, "grandchild": true, "note": true, "a": false, "b": false, "cat": true} {
		if got := o.ready(table, isDone); got != want {
			t.Errorf("ready(%s) = %v, want %v", table, got, want)
		}
	}
	if o.ready("grandchild", func(t string) bool { return t == "parent" }) {
		t.Error("grandchild ready before child is done")
	}
	for table, want := range map[string]bool{
		"parent": true, "child": true, // done, and every table it references
		"grandchild": false, // not done
		"a":          false, // done, but b, which it references, is not
	} {
		if got := o.settled(table, isDone); got != want {
			t.Errorf("settled(%s) = %v, want %v", table, got, want)
		}
	}
}
