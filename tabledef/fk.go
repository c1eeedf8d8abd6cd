package tabledef

import (
	"context"
	"fmt"
)

// ForeignKey is one foreign key between two tables of a schema.
type ForeignKey struct {
	Name          string // the constraint's name
	Table, Parent string // the referencing table and the referenced one
	// Columns are the referencing columns, in the key's order.
	Columns []string
	// OnUpdate and OnDelete are the referential actions (UPDATE_RULE, DELETE_RULE): CASCADE,
	// SET NULL, SET DEFAULT, RESTRICT or NO ACTION.
	OnUpdate, OnDelete string
}

// Cascades reports whether a change of the parent changes the referencing rows: a cascading
// action (CASCADE, SET NULL or SET DEFAULT) on delete or on update.
func (fk ForeignKey) Cascades() bool { return cascading(fk.OnUpdate) || cascading(fk.OnDelete) }

// UpdateCascades reports whether an update of the parent's key changes the referencing columns.
func (fk ForeignKey) UpdateCascades() bool { return cascading(fk.OnUpdate) }

func cascading(rule string) bool {
	return rule == "CASCADE" || rule == "SET NULL" || rule == "SET DEFAULT"
}

// ForeignKeys reads the foreign keys among the tables of schema (a key that references a table
// of another schema is left out), by table and name. Table names are as the server reports them
// (lower_case_table_names may change their case).
func ForeignKeys(ctx context.Context, q Querier, schema string) ([]ForeignKey, error) {
	rows, err := q.QueryContext(ctx, `SELECT rc.CONSTRAINT_NAME, rc.TABLE_NAME, rc.REFERENCED_TABLE_NAME, rc.UPDATE_RULE, rc.DELETE_RULE, k.COLUMN_NAME
FROM information_schema.REFERENTIAL_CONSTRAINTS rc JOIN information_schema.KEY_COLUMN_USAGE k
 ON k.CONSTRAINT_SCHEMA = rc.CONSTRAINT_SCHEMA AND k.TABLE_NAME = rc.TABLE_NAME AND k.CONSTRAINT_NAME = rc.CONSTRAINT_NAME
WHERE rc.CONSTRAINT_SCHEMA = ? AND rc.UNIQUE_CONSTRAINT_SCHEMA = ? AND k.REFERENCED_TABLE_NAME IS NOT NULL
ORDER BY rc.TABLE_NAME, rc.CONSTRAINT_NAME, k.ORDINAL_POSITION`, schema, schema)
	if err != nil {
		return nil, fmt.Errorf("read the foreign keys of %s: %w", schema, err)
	}
	defer rows.Close()
	var out []ForeignKey
	for rows.Next() {
		var fk ForeignKey
		var col string
		if err := rows.Scan(&fk.Name, &fk.Table, &fk.Parent, &fk.OnUpdate, &fk.OnDelete, &col); err != nil {
			return nil, fmt.Errorf("read the foreign keys of %s: %w", schema, err)
		}
		if n := len(out); n > 0 && out[n-1].Table == fk.Table && out[n-1].Name == fk.Name {
			out[n-1].Columns = append(out[n-1].Columns, col)
			continue
		}
		fk.Columns = []string{col}
		out = append(out, fk)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the foreign keys of %s: %w", schema, err)
	}
	return out, nil
}
