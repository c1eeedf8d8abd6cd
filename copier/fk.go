package copier

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
)

// Foreign keys during the copy. The binlog has none of the rows a cascade changed: the target
// must run the cascade itself, so a change of a table with dependants is applied with the
// source session's foreign_key_checks, as in replication. But while a parent is copied, the
// target misses some of its rows, and a change to a child that references one of them would fail
// its check. The copy therefore keeps an order and a rule:
//
//   - a table starts only once every table it references is done (fkOrder.ready), so that a
//     child whose rows below its last key are exact has every parent complete, and each change of
//     those parents, applied with the source's checks, cascades into it as on the source;
//   - the changes of a table that is not settled (done, and every table it references done) go
//     in with the checks off (Copier.Unsettled): its rows above the last key are replaced by its
//     next chunk anyway, and it has no started dependant a cascade from it could miss;
//   - tables that reference each other in a cycle, and a table that references itself with a
//     cascading action (a tree whose subtrees go with their root), cannot be partly copied while
//     their changes apply: such a group is copied whole, in one round, while the stream holds, and
//     starts again from its first rows if the copy is interrupted in the middle of it.
//
// The references are the target's: its definitions are what the changes are checked and
// cascaded by.

// fkEdge is one foreign key: table references parent, cascading (CASCADE, SET NULL or SET
// DEFAULT on delete or update) or not.
type fkEdge struct {
	table, parent string
	cascades      bool
}

// fkOrder is what the foreign keys among a copy's tables ask of its order.
type fkOrder struct {
	after map[string][]string // table → the copied tables outside its group it references
	refs  map[string][]string // table → every other copied table it references
	group map[string][]string // table → the tables copied whole with it, itself included; only for tables copied whole
}

// ready reports whether table may start: every table outside its group that it references is
// done.
func (o *fkOrder) ready(table string, done func(string) bool) bool {
	for _, p := range o.after[table] {
		if !done(p) {
			return false
		}
	}
	return true
}

// settled reports whether table's changes may go in with the source's foreign_key_checks: it
// is done, and so is every table it references.
func (o *fkOrder) settled(table string, done func(string) bool) bool {
	if !done(table) {
		return false
	}
	for _, p := range o.refs[table] {
		if !done(p) {
			return false
		}
	}
	return true
}

// whole reports whether table is copied whole in one round.
func (o *fkOrder) whole(table string) bool { return len(o.group[table]) > 0 }

// newFKOrder builds the order of tables from the foreign keys among them; keys from or to other
// tables are left out.
func newFKOrder(tables []string, edges []fkEdge) *fkOrder {
	o := &fkOrder{after: map[string][]string{}, refs: map[string][]string{}, group: map[string][]string{}}
	in := map[string]bool{}
	for _, t := range tables {
		in[t] = true
	}
	out := map[string][]string{}
	selfCascade := map[string]bool{}
	for _, e := range edges {
		if !in[e.table] || !in[e.parent] {
			continue
		}
		if e.table == e.parent {
			selfCascade[e.table] = selfCascade[e.table] || e.cascades
			continue
		}
		if !slices.Contains(out[e.table], e.parent) {
			out[e.table] = append(out[e.table], e.parent)
		}
	}
	comp := components(tables, out)
	for _, t := range tables {
		for _, p := range out[t] {
			o.refs[t] = append(o.refs[t], p)
			if comp[p] != comp[t] {
				o.after[t] = append(o.after[t], p)
			}
		}
	}
	members := map[int][]string{}
	for _, t := range tables {
		members[comp[t]] = append(members[comp[t]], t)
	}
	for _, t := range tables {
		if g := members[comp[t]]; len(g) > 1 || selfCascade[t] {
			o.group[t] = g
		}
	}
	return o
}

// components numbers the strongly connected components of the graph out over nodes (Tarjan's
// algorithm): tables in one cycle of references share a number.
func components(nodes []string, out map[string][]string) map[string]int {
	index, low := map[string]int{}, map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	comp := map[string]int{}
	next, ncomp := 0, 0
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range out[v] {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp[w] = ncomp
				if w == v {
					break
				}
			}
			ncomp++
		}
	}
	for _, v := range nodes {
		if _, seen := index[v]; !seen {
			visit(v)
		}
	}
	return comp
}

// loadFKOrder reads the foreign keys among tables of schema on the target.
func loadFKOrder(ctx context.Context, db *sql.DB, schema string, tables []string) (*fkOrder, error) {
	rows, err := db.QueryContext(ctx, `SELECT TABLE_NAME, REFERENCED_TABLE_NAME, UPDATE_RULE, DELETE_RULE
FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = ? AND UNIQUE_CONSTRAINT_SCHEMA = ?`, schema, schema)
	if err != nil {
		return nil, fmt.Errorf("target: read the foreign keys of %s: %w", schema, err)
	}
	defer rows.Close()
	var edges []fkEdge
	for rows.Next() {
		var e fkEdge
		var onUpdate, onDelete string
		if err := rows.Scan(&e.table, &e.parent, &onUpdate, &onDelete); err != nil {
			return nil, fmt.Errorf("target: read the foreign keys of %s: %w", schema, err)
		}
		e.cascades = cascading(onUpdate) || cascading(onDelete)
		edges = append(edges, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("target: read the foreign keys of %s: %w", schema, err)
	}
	return newFKOrder(tables, edges), nil
}

// cascading reports whether a referential action changes the referencing rows.
func cascading(rule string) bool {
	return rule == "CASCADE" || rule == "SET NULL" || rule == "SET DEFAULT"
}
