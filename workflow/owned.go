package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// The sidecar database's tables are vplayer's own: Init creates them with tableMarker as their
// comment, and neither uses nor alters a table of the same name that another program made
// (Vitess's _vt.vreplication, whose schema differs). A table an older vplayer created carries no
// comment: it is recognised by its columns, each one vplayer knows for that table with the type
// vplayer gives it, every column of the first version's table among them.

// tableMarker is the comment of the sidecar tables vplayer creates.
const tableMarker = "vplayer sidecar table"

// ErrForeignTable is wrapped by Init's error when a sidecar table vplayer would use exists with a
// schema vplayer did not create.
var ErrForeignTable = errors.New("sidecar table not created by vplayer")

// sidecarTable is one of the tables Init creates: its name and its CREATE TABLE statement.
type sidecarTable struct {
	name, create string
}

// column is a column's name and its information_schema DATA_TYPE.
type column struct {
	name, dataType string
}

// columnsOf returns the columns a CREATE TABLE statement of Init's defines, in order: every line
// after the first that does not start a key or end the statement.
func columnsOf(create string) []column {
	var cols []column
	lines := strings.Split(create, "\n")
	for _, l := range lines[min(1, len(lines)):] {
		f := strings.Fields(strings.TrimSpace(l))
		if len(f) < 2 || strings.HasPrefix(f[0], ")") {
			continue
		}
		switch strings.ToUpper(f[0]) {
		case "PRIMARY", "UNIQUE", "KEY", "INDEX":
			continue
		}
		cols = append(cols, column{strings.ToLower(f[0]), dataType(f[1])})
	}
	return cols
}

// dataType is the DATA_TYPE information_schema shows for a column type as written in a
// definition: "varbinary(255)" is varbinary, "int unsigned" int.
func dataType(def string) string {
	t, _, _ := strings.Cut(def, "(")
	return strings.ToLower(strings.TrimSuffix(t, ","))
}

// knownColumns returns what vplayer's table t may hold: every column of its definition and of
// addedColumns, by name with its DATA_TYPE, and the columns of the first version's table, which
// every table vplayer created has.
func knownColumns(t sidecarTable) (known map[string]string, first []string) {
	added := map[string]bool{}
	known = map[string]string{}
	for _, c := range addedColumns {
		if c[0] == t.name {
			added[c[1]] = true
			known[c[1]] = dataType(strings.Fields(c[2])[0])
		}
	}
	for _, c := range columnsOf(t.create) {
		known[c.name] = c.dataType
		if !added[c.name] {
			first = append(first, c.name)
		}
	}
	return known, first
}

// notVplayers says why a table without vplayer's comment, holding cols, is not one an older
// vplayer created; "" when it is.
func notVplayers(t sidecarTable, cols []column) string {
	known, first := knownColumns(t)
	has := map[string]bool{}
	for _, c := range cols {
		has[c.name] = true
		want, ok := known[c.name]
		switch {
		case !ok:
			return fmt.Sprintf("it has column %s, which vplayer's has not", c.name)
		case want != c.dataType:
			return fmt.Sprintf("its column %s is %s, vplayer's is %s", c.name, c.dataType, want)
		}
	}
	for _, name := range first {
		if !has[name] {
			return fmt.Sprintf("it has no column %s", name)
		}
	}
	return ""
}

// ownedTables reads which of tables exist in the sidecar database and their columns, and returns
// the columns of each (by table, then by name) once every one that exists is vplayer's: with
// vplayer's comment, or the columns an older vplayer gave it. Otherwise it returns an error
// wrapping ErrForeignTable that names the table and --sidecar-db.
func (s *Store) ownedTables(ctx context.Context, tables []sidecarTable) (map[string]map[string]bool, error) {
	names := make([]string, len(tables))
	args := []any{s.sidecar}
	for i, t := range tables {
		names[i] = "?"
		args = append(args, t.name)
	}
	in := " AND TABLE_NAME IN (" + strings.Join(names, ", ") + ")"
	comments := map[string]string{}
	rows, err := s.db.QueryContext(ctx, "SELECT TABLE_NAME, TABLE_COMMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?"+in, args...)
	if err != nil {
		return nil, fmt.Errorf("read the sidecar tables of %s: %w", s.sidecar, err)
	}
	for rows.Next() {
		var name, comment string
		if err := rows.Scan(&name, &comment); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read the sidecar tables of %s: %w", s.sidecar, err)
		}
		comments[name] = comment
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the sidecar tables of %s: %w", s.sidecar, err)
	}
	cols := map[string][]column{}
	rows, err = s.db.QueryContext(ctx, "SELECT TABLE_NAME, COLUMN_NAME, DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ?"+in+
		" ORDER BY TABLE_NAME, ORDINAL_POSITION", args...)
	if err != nil {
		return nil, fmt.Errorf("read the sidecar tables' columns of %s: %w", s.sidecar, err)
	}
	defer rows.Close()
	for rows.Next() {
		var table, name, typ string
		if err := rows.Scan(&table, &name, &typ); err != nil {
			return nil, fmt.Errorf("read the sidecar tables' columns of %s: %w", s.sidecar, err)
		}
		cols[table] = append(cols[table], column{strings.ToLower(name), strings.ToLower(typ)})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the sidecar tables' columns of %s: %w", s.sidecar, err)
	}
	owned := map[string]map[string]bool{}
	for _, t := range tables {
		comment, exists := comments[t.name]
		if !exists {
			continue
		}
		if comment != tableMarker {
			if why := notVplayers(t, cols[t.name]); why != "" {
				return nil, fmt.Errorf("%w: %s (%s): vplayer neither uses nor alters a table it did not create; "+
					"give --sidecar-db (now %s) a database of vplayer's own", ErrForeignTable, s.table(t.name), why, s.sidecar)
			}
		}
		owned[t.name] = map[string]bool{}
		for _, c := range cols[t.name] {
			owned[t.name][c.name] = true
		}
	}
	return owned, nil
}
