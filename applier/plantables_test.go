package applier

import (
	"testing"

	"github.com/vplayer/vplayer/applier/plan"
	"github.com/vplayer/vplayer/tabledef"
)

// intTable builds the planner's table `s`.name of INT NOT NULL columns cols, its primary key the
// first, and the unique keys keys.
func intTable(t testing.TB, name string, cols ...string) *plan.Table {
	t.Helper()
	return intTableKeys(t, name, cols, tabledef.Index{Name: "PRIMARY", Columns: cols[:1], Primary: true})
}

// intTableKeys is intTable with the unique keys (the primary key first) given.
func intTableKeys(t testing.TB, name string, cols []string, keys ...tabledef.Index) *plan.Table {
	t.Helper()
	d := tabledef.Table{Schema: "s", Name: name, Uniques: keys}
	for _, c := range cols {
		d.Columns = append(d.Columns, tabledef.Column{Name: c, Type: "int", NotNull: true})
	}
	tbl, err := plan.BuildTable(d)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}
