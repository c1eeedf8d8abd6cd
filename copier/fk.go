package copier

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/vplayer/vplayer/tabledef"
	"github.com/vplayer/vplayer/workflow"
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
//     starts again from its first rows if the copy is interrupted in the middle of it; its
//     members start together, once every table any of them references outside it is done;
//   - so is a table whose copy key a cascade can change (ON UPDATE CASCADE on a column of its
//     primary key): the parent's key update would move rows the copy has not reached below its
//     last copied key, where no later chunk looks.
//
// The references are the target's: its definitions are what the changes are checked and
// cascaded by.

// fkEdge is one foreign key: table references parent, cascading (CASCADE, SET NULL or SET
// DEFAULT on delete or update) or not; movesKey says an update of the parent's key cascades
// into a column of table's copy key.
type fkEdge struct {
	table, parent string
	cascades      bool
	movesKey      bool
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
	alone := map[string]bool{} // copied whole by itself
	for _, e := range edges {
		if !in[e.table] || !in[e.parent] {
			continue
		}
		alone[e.table] = alone[e.table] || e.movesKey || e.table == e.parent && e.cascades
		if e.table == e.parent {
			continue
		}
		if !slices.Contains(out[e.table], e.parent) {
			out[e.table] = append(out[e.table], e.parent)
		}
	}
	comp := components(tables, out)
	members := map[int][]string{}
	for _, t := range tables {
		members[comp[t]] = append(members[comp[t]], t)
	}
	for _, t := range tables {
		o.refs[t] = out[t]
		// A group's members start together: each waits for what any of them references.
		for _, m := range members[comp[t]] {
			for _, p := range out[m] {
				if comp[p] != comp[t] && !slices.Contains(o.after[t], p) {
					o.after[t] = append(o.after[t], p)
				}
			}
		}
		if g := members[comp[t]]; len(g) > 1 || alone[t] {
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

// loadFKOrder reads the foreign keys among tables of schema on the target, and the copy keys of
// the tables a key update cascades into. A name the server reports in another case than the
// copy's (lower_case_table_names) is the copy's table.
func loadFKOrder(ctx context.Context, db *sql.DB, schema string, tables []string) (*fkOrder, error) {
	fks, err := tabledef.ForeignKeys(ctx, db, schema)
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	name := func(n string) string {
		for _, t := range tables {
			if t == n {
				return t
			}
		}
		for _, t := range tables {
			if strings.EqualFold(t, n) {
				return t
			}
		}
		return n
	}
	edges := make([]fkEdge, len(fks))
	keys := map[string][]tabledef.Column{}
	for i, f := range fks {
		e := fkEdge{table: name(f.Table), parent: name(f.Parent), cascades: f.Cascades()}
		if f.UpdateCascades() && slices.Contains(tables, e.table) && slices.Contains(tables, e.parent) {
			key, ok := keys[e.table]
			if !ok {
				d, err := tabledef.Load(ctx, db, schema, e.table)
				if err != nil {
					return nil, err
				}
				key = d.KeyColumns(d.Identity(len(d.Columns)))
				keys[e.table] = key
			}
			e.movesKey = slices.ContainsFunc(key, func(c tabledef.Column) bool { return slices.Contains(f.Columns, c.Name) })
		}
		edges[i] = e
	}
	return newFKOrder(tables, edges), nil
}

// orderByForeignKeys reads the foreign keys among the copy's tables on the target and settles
// what follows (see above): the tables whose copy an interruption (or a copy state from before
// the order, or a foreign key added since) left out of order start again from their first row,
// and the stream is told which tables' changes go in with the source's foreign_key_checks.
func (c *Copier) orderByForeignKeys(ctx context.Context) error {
	state := c.State()
	names := make([]string, len(state))
	for i, st := range state {
		names[i] = st.Table
	}
	fk, err := loadFKOrder(ctx, c.cfg.Target, c.cfg.TargetDB, names)
	if err != nil {
		return err
	}
	if err := wholeVersioned(ctx, c.cfg.Target, c.cfg.TargetDB, fk, names); err != nil {
		return err
	}
	c.fk, c.redo = fk, map[string]bool{}
	started := func(st workflow.TableCopy) bool { return st.Done || st.LastPK != nil || st.Rows > 0 }
	done := c.done(state)
	reported := map[string]bool{}
	for _, st := range state {
		g := fk.group[st.Table]
		if len(g) == 0 || reported[st.Table] {
			continue
		}
		copied := true
		for _, t := range g {
			reported[t] = true
			copied = copied && done(t)
		}
		if copied {
			continue
		}
		for _, t := range g {
			c.redo[t] = true
		}
		c.cfg.logger().Warn("tables in a cycle of foreign keys, referencing themselves with a cascading action, whose key a cascade updates, or system-versioned are copied whole in one round, which starts again from their first rows if the copy is interrupted",
			"tables", strings.Join(g, ","))
	}
	// A table started before a table it references was done, and every table started after
	// one of those, misses cascades its copied rows needed: it starts again.
	for again := true; again; {
		again = false
		done := c.done(state)
		for _, st := range state {
			if !c.redo[st.Table] && started(st) && !fk.ready(st.Table, done) {
				c.redo[st.Table], again = true, true
			}
		}
	}
	for _, st := range state {
		if c.redo[st.Table] && started(st) {
			c.cfg.logger().Info("the copy of the table starts again from its first row", "table", c.cfg.TargetDB+"."+st.Table)
		}
	}
	c.settle(state)
	return nil
}

// done reports whether the rows of a table are copied, by state and the tables to copy again as
// they are now.
func (c *Copier) done(state []workflow.TableCopy) func(string) bool {
	d := make(map[string]bool, len(state))
	for _, st := range state {
		d[st.Table] = st.Done && !c.redo[st.Table]
	}
	return func(t string) bool { return d[t] }
}

// settle records, from state, the tables whose changes go in with the source's
// foreign_key_checks (see Unsettled).
func (c *Copier) settle(state []workflow.TableCopy) {
	done := c.done(state)
	m := map[string]bool{}
	for _, st := range state {
		if c.fk.settled(st.Table, done) {
			m[st.Table] = true
		}
	}
	c.settled.Store(&m)
}

// Unsettled reports whether the changes the stream applies to table during the copy must go in
// with foreign_key_checks off, whatever the source's: the table is not done, or a table it
// references is not (see above). Safe to call concurrently with Run.
func (c *Copier) Unsettled(table string) bool {
	m := c.settled.Load()
	return m == nil || !(*m)[table]
}
