package binlog

import (
	"slices"
	"testing"
)

func TestDMLTables(t *testing.T) {
	tests := []struct {
		name, q  string
		verb     string // empty: not a data change
		want     []tableRef
		mustHave []tableRef // for the forms that name a superset
	}{
		{name: "insert", q: "INSERT INTO t VALUES (1)", verb: "INSERT", want: []tableRef{{"d", "t"}}},
		{name: "insert modifiers, no INTO", q: "insert low_priority ignore `o`.`t 1` (a) values (1)", verb: "INSERT", want: []tableRef{{"o", "t 1"}}},
		{name: "insert select reads another table", q: "INSERT INTO other.x SELECT * FROM t", verb: "INSERT", want: []tableRef{{"other", "x"}}},
		{name: "replace", q: "/* app */ REPLACE INTO t SET a = 1", verb: "REPLACE", want: []tableRef{{"d", "t"}}},
		{name: "update", q: "UPDATE t SET x = x + 1 WHERE id < 10", verb: "UPDATE", want: []tableRef{{"d", "t"}}},
		{name: "update other database", q: "UPDATE other.t SET x = 1", verb: "UPDATE", want: []tableRef{{"other", "t"}}},
		{name: "multi-table update", q: "UPDATE a JOIN other.b ON a.id = b.id SET a.x = b.x", verb: "UPDATE", mustHave: []tableRef{{"d", "a"}, {"other", "b"}}},
		{name: "delete", q: "DELETE FROM t WHERE id = 'SET'", verb: "DELETE", want: []tableRef{{"d", "t"}}},
		{name: "delete other database", q: "DELETE QUICK FROM other.t WHERE x IN (SELECT id FROM t)", verb: "DELETE", want: []tableRef{{"other", "t"}}},
		{name: "multi-table delete", q: "DELETE t1, t2 FROM t1 INNER JOIN t2 WHERE t1.id = t2.id", verb: "DELETE", mustHave: []tableRef{{"d", "t1"}, {"d", "t2"}}},
		{name: "load data", q: "LOAD DATA INFILE '/tmp/x' INTO TABLE t FIELDS TERMINATED BY ','", verb: "LOAD DATA", want: []tableRef{{"d", "t"}}},
		{name: "with", q: "WITH c AS (SELECT 1) UPDATE t, c SET t.x = 1", verb: "WITH", mustHave: []tableRef{{"d", "t"}}},
		{name: "ddl", q: "ALTER TABLE t ADD c INT", verb: ""},
		{name: "select", q: "SELECT 1", verb: ""},
		{name: "savepoint", q: "SAVEPOINT s1", verb: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			verb, got, ok := dmlTables(tt.q, "d")
			if ok != (tt.verb != "") || verb != tt.verb {
				t.Fatalf("dmlTables(%q) = %q, %v, want %q", tt.q, verb, ok, tt.verb)
			}
			if tt.want != nil && !slices.Equal(got, tt.want) {
				t.Errorf("dmlTables(%q) tables = %v, want %v", tt.q, got, tt.want)
			}
			for _, w := range tt.mustHave {
				if !slices.Contains(got, w) {
					t.Errorf("dmlTables(%q) tables = %v, want them to include %v", tt.q, got, w)
				}
			}
			for _, g := range got {
				if g.schema == "d" && sqlKeywords[g.name] {
					t.Errorf("dmlTables(%q) names the keyword %s as a table", tt.q, g.name)
				}
			}
		})
	}
}
