package tabledef

import (
	"slices"
	"strings"
	"testing"

	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
)

func TestMain(m *testing.M) { mysqltest.Main(m) }

// TestLoad reads definitions from a real server: columns and their flags, unique keys, periods,
// related tables and foreign keys.
func TestLoad(t *testing.T) {
	_, target := mysqltest.Pair(t)
	schema := mysqltest.DBName(t)
	db := mysqltest.DB(t, target, schema)
	ctx := t.Context()
	for _, stmt := range []string{
		"CREATE TABLE cols (id INT UNSIGNED NOT NULL, name VARCHAR(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, b BINARY(4) NOT NULL," +
			" g INT AS (id + 1) PERSISTENT, hid INT INVISIBLE, PRIMARY KEY (id), UNIQUE KEY by_g (g), UNIQUE KEY by_name (name(3)))",
		"CREATE TABLE gen (a INT NOT NULL, g INT AS (a * 2) PERSISTENT, UNIQUE KEY by_g (g), UNIQUE KEY by_a (a))",
		"CREATE TABLE hidden (id INT PRIMARY KEY, v INT) WITH SYSTEM VERSIONING",
		"CREATE TABLE named (id INT, s TIMESTAMP(6) GENERATED ALWAYS AS ROW START, e TIMESTAMP(6) GENERATED ALWAYS AS ROW END," +
			" PERIOD FOR SYSTEM_TIME(s, e), PRIMARY KEY (id)) WITH SYSTEM VERSIONING",
		"CREATE TABLE parent (id INT PRIMARY KEY, k INT NOT NULL, UNIQUE KEY (k))",
		"CREATE TABLE other (a INT, b INT, PRIMARY KEY (a, b))",
		"CREATE TABLE child (id INT PRIMARY KEY, p INT, q INT, FOREIGN KEY fk_p (p) REFERENCES parent (id) ON DELETE CASCADE," +
			" CONSTRAINT fk_q FOREIGN KEY (q, id) REFERENCES other (a, b))",
		"CREATE TABLE loner (id INT PRIMARY KEY)",
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}

	cols, err := Load(ctx, db, schema, "cols")
	if err != nil {
		t.Fatal(err)
	}
	want := []Column{
		{Name: "id", Type: "int", Unsigned: true, NotNull: true},
		{Name: "name", Type: "varchar", Charset: "utf8mb4", Collation: "utf8mb4_bin", OctetLength: 40},
		{Name: "b", Type: "binary", NotNull: true, OctetLength: 4},
		{Name: "g", Type: "int", Generated: true},
		{Name: "hid", Type: "int", Invisible: true},
	}
	if !slices.Equal(cols.Columns, want) {
		t.Errorf("Load(cols).Columns = %+v, want %+v", cols.Columns, want)
	}
	if got, want := keys(cols.Uniques), "PRIMARY(id);by_g(g);by_name(name)prefix"; got != want {
		t.Errorf("Load(cols).Uniques = %s, want %s", got, want)
	}
	if cols.Period != nil || cols.Related {
		t.Errorf("Load(cols): period %v, related %v; want neither", cols.Period, cols.Related)
	}

	for _, tt := range []struct{ table, identity, columns string }{
		{"gen", "by_a(a)", "a,g"},
		{"hidden", "PRIMARY(id)", "id,v,row_start,row_end"},
		{"named", "PRIMARY(id)", "id,s,e"}, // the row end InnoDB adds to the key is not the row's identity
		{"other", "PRIMARY(a,b)", "a,b"},
	} {
		d, err := Load(ctx, db, schema, tt.table)
		if err != nil {
			t.Fatal(err)
		}
		id := d.Identity(len(d.Columns))
		if got := id.Index + "(" + strings.Join(Names(d.KeyColumns(id)), ",") + ")"; got != tt.identity {
			t.Errorf("Load(%s).Identity() = %s, want %s", tt.table, got, tt.identity)
		}
		if got := strings.Join(Names(d.AllColumns()), ","); got != tt.columns {
			t.Errorf("Load(%s).AllColumns() = %s, want %s", tt.table, got, tt.columns)
		}
		if versioned := strings.HasPrefix(tt.table, "hidden") || tt.table == "named"; (d.Period != nil) != versioned {
			t.Errorf("Load(%s).Period = %+v, want versioned %v", tt.table, d.Period, versioned)
		}
	}

	missing, err := Load(ctx, db, schema, "missing")
	if err != nil || len(missing.Columns) != 0 {
		t.Errorf("Load(missing) = %+v, %v; want no columns, no error", missing, err)
	}

	for table, want := range map[string]bool{"parent": true, "child": true, "other": true, "loner": false, "trig": false} {
		got, err := Related(ctx, db, schema, table)
		if err != nil || got != want {
			t.Errorf("Related(%s) = %v, %v; want %v", table, got, err, want)
		}
	}
	if _, err := db.ExecContext(ctx, "CREATE TRIGGER tr BEFORE INSERT ON loner FOR EACH ROW SET NEW.id = NEW.id"); err != nil {
		t.Fatal(err)
	}
	if got, err := Related(ctx, db, schema, "loner"); err != nil || !got {
		t.Errorf("Related(loner) with a trigger = %v, %v; want true", got, err)
	}

	fks, err := ForeignKeys(ctx, db, schema)
	if err != nil {
		t.Fatal(err)
	}
	wantFKs := []ForeignKey{
		{Name: "fk_p", Table: "child", Parent: "parent", Columns: []string{"p"}, OnUpdate: "RESTRICT", OnDelete: "CASCADE"},
		{Name: "fk_q", Table: "child", Parent: "other", Columns: []string{"q", "id"}, OnUpdate: "RESTRICT", OnDelete: "RESTRICT"},
	}
	if !slices.EqualFunc(fks, wantFKs, func(a, b ForeignKey) bool {
		return a.Name == b.Name && a.Table == b.Table && a.Parent == b.Parent && slices.Equal(a.Columns, b.Columns) && a.OnUpdate == b.OnUpdate && a.OnDelete == b.OnDelete
	}) {
		t.Errorf("ForeignKeys() = %+v, want %+v", fks, wantFKs)
	}
	if !fks[0].Cascades() || fks[0].UpdateCascades() || fks[1].Cascades() {
		t.Errorf("Cascades/UpdateCascades wrong for %+v", fks)
	}

	tables, err := BaseTables(ctx, db, schema, func(name string) bool { return name != "loner" })
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(tables, ","), "child,cols,gen,hidden,named,other,parent"; got != want {
		t.Errorf("BaseTables() = %s, want %s", got, want)
	}
}

func keys(uniques []Index) string {
	var out []string
	for _, ix := range uniques {
		s := ix.Name + "(" + strings.Join(ix.Columns, ",") + ")"
		if ix.Prefix {
			s += "prefix"
		}
		out = append(out, s)
	}
	return strings.Join(out, ";")
}
