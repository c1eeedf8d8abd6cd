package applier

import (
	"math/rand/v2"
	"slices"

	"github.com/vplayer/vplayer/event"
)

// propGen draws source transactions from the model's rows, so that every change is one the
// source could have made (no duplicate key, no row that is not there) and its images are those a
// source with the statement's binlog_row_image logs.
type propGen struct {
	r      *rand.Rand
	shapes []*propShape
	state  []*propState
	// gone are, per table, the rows the open transaction deleted or moved to another key: their
	// keys are drawn again, so that a transaction deletes and re-inserts the same key.
	gone [][]propRow
	// full is the percentage of statements logged with full images; the others are MINIMAL
	// or NOBLOB.
	full  int
	image propImage // the open transaction's session's binlog_row_image; "": per statement
}

func newPropGen(r *rand.Rand, shapes []*propShape, full int) *propGen {
	g := &propGen{r: r, shapes: shapes, gone: make([][]propRow, len(shapes)), full: full}
	for _, s := range shapes {
		g.state = append(g.state, &propState{shape: s})
	}
	return g
}

func (g *propGen) coin(percent int) bool { return g.r.IntN(100) < percent }

func (g *propGen) draw(c *propCol) any { return c.domain[g.r.IntN(len(c.domain))] }

// txns draws n transactions.
func (g *propGen) txns(n int) []propTxn {
	out := make([]propTxn, n)
	for i := range out {
		out[i] = g.txn()
	}
	return out
}

// txn draws one transaction of a few statements, most of them on one table.
func (g *propGen) txn() propTxn {
	for i := range g.gone {
		g.gone[i] = g.gone[i][:0]
	}
	focus := g.table()
	g.image = ""
	if g.coin(70) {
		g.image = g.drawImage()
	}
	var tx propTxn
	for range 1 + g.r.IntN(5) {
		ti := focus
		if g.coin(25) {
			ti = g.table()
		}
		if st, ok := g.stmt(ti); ok {
			tx.stmts = append(tx.stmts, st)
		}
	}
	return tx
}

// stmt draws one statement on table ti, applied to the model; false when it changed no row.
func (g *propGen) stmt(ti int) (propStmt, bool) {
	st := propStmt{table: ti, image: g.image}
	if st.image == "" {
		st.image = g.drawImage()
	}
	rows := 1
	if g.coin(25) {
		rows += g.r.IntN(3)
	}
	switch n := g.r.IntN(100); {
	case len(g.state[ti].rows) == 0 || n < 35:
		st.kind = event.Insert
		g.insert(&st, rows)
	case n < 75:
		st.kind = event.Update
		g.update(&st, rows)
	default:
		st.kind = event.Delete
		g.delete(&st, rows)
	}
	if g.coin(3) {
		// Rows with values larger than the model's: a fold or a row group that fills, a
		// transaction large enough to run alone.
		st.size = []int{160 << 10, 600 << 10, 1100 << 10}[g.r.IntN(3)]
	}
	return st, len(st.changes) > 0
}

// table draws a table, the first (which folds) and third (which folds too) more often.
func (g *propGen) table() int {
	weights := []int{3, 1, 2, 1, 1}
	n := g.r.IntN(8)
	for i, w := range weights {
		if n < w {
			return i
		}
		n -= w
	}
	return 0
}

// drawImage draws a binlog_row_image.
func (g *propGen) drawImage() propImage {
	switch {
	case g.coin(g.full):
		return imageFull
	case g.coin(60):
		return imageMinimal
	}
	return imageNoblob
}

// inKey reports whether column i identifies s's rows.
func (s *propShape) inKey(i int) bool { return slices.Contains(s.key, i) }

// reuseKey gives r, on a coin, the key of a row the open transaction deleted or moved away: the
// columns of it that set marks (nil: every one).
func (g *propGen) reuseKey(ti int, r propRow, set []bool, percent int) {
	s := g.shapes[ti]
	if s.key == nil || len(g.gone[ti]) == 0 || !g.coin(percent) {
		return
	}
	old := g.gone[ti][g.r.IntN(len(g.gone[ti]))]
	for _, k := range s.key {
		if set == nil || set[k] {
			r[k] = old[k]
		}
	}
}

// insert draws an INSERT of up to n rows naming the same columns: the key, the required ones and
// some others; the rest get their defaults, a function default its value on the source.
func (g *propGen) insert(st *propStmt, n int) {
	s, state := g.shapes[st.table], g.state[st.table]
	named := make([]bool, len(s.cols))
	for i := range s.cols {
		c := &s.cols[i]
		named[i] = c.required || s.inKey(i) || (!c.fnDef && g.coin(50))
	}
	for range n {
		for range 10 {
			r := make(propRow, len(s.cols))
			for i := range s.cols {
				c := &s.cols[i]
				switch {
				case named[i], c.fnDef:
					r[i] = g.draw(c)
				default:
					r[i] = c.def
				}
			}
			g.reuseKey(st.table, r, nil, 60)
			if state.clash(r, -1) {
				continue
			}
			st.changes = append(st.changes, propChange{after: r})
			must(state.apply(event.Insert, propChange{after: r}))
			break
		}
	}
	switch st.image {
	case imageMinimal:
		st.afterCols = make([]bool, len(s.cols))
		for i := range s.cols {
			st.afterCols[i] = named[i] || s.cols[i].fnDef
		}
	case imageNoblob:
		st.afterCols = make([]bool, len(s.cols))
		for i := range s.cols {
			st.afterCols[i] = !s.cols[i].blob() || named[i] || g.coin(30)
		}
	}
}

// update draws an UPDATE of up to n distinct rows setting the same columns, now and then the key
// too; a row it would leave as it was is not logged, as the source logs none.
func (g *propGen) update(st *propStmt, n int) {
	s, state := g.shapes[st.table], g.state[st.table]
	set := make([]bool, len(s.cols))
	some := false
	for i := range s.cols {
		if !s.inKey(i) && g.coin(40) {
			set[i], some = true, true
		}
	}
	if !some {
		var others []int
		for i := range s.cols {
			if !s.inKey(i) {
				others = append(others, i)
			}
		}
		set[others[g.r.IntN(len(others))]] = true
	}
	moveKey := s.key != nil && g.coin(30)
	if moveKey {
		for _, k := range s.key {
			set[k] = g.coin(60)
		}
		set[s.key[g.r.IntN(len(s.key))]] = true
	}
	var written []propRow // rows this statement wrote: the source changes each row once
	for range n {
		i := g.r.IntN(len(state.rows))
		before := state.rows[i]
		if slices.ContainsFunc(written, before.equal) {
			continue
		}
		for range 10 {
			after := slices.Clone(before)
			for c := range s.cols {
				if set[c] {
					after[c] = g.draw(&s.cols[c])
				}
			}
			if moveKey {
				g.reuseKey(st.table, after, set, 50)
			}
			if after.equal(before) || state.clash(after, i) {
				continue
			}
			c := propChange{before: slices.Clone(before), after: after}
			st.changes = append(st.changes, c)
			if !s.sameKey(s.key, before, after) {
				g.gone[st.table] = append(g.gone[st.table], c.before)
			}
			must(state.apply(event.Update, c))
			written = append(written, after)
			break
		}
	}
	switch st.image {
	case imageMinimal:
		st.beforeCols = g.keyImage(s, false)
		st.afterCols = set
	case imageNoblob:
		st.beforeCols = g.keyImage(s, true)
		st.afterCols = make([]bool, len(s.cols))
		for c := range s.cols {
			changed := slices.ContainsFunc(st.changes, func(ch propChange) bool { return ch.before[c] != ch.after[c] })
			st.afterCols[c] = !s.cols[c].blob() || (set[c] && (changed || g.coin(50)))
		}
	}
}

// delete draws a DELETE of up to n rows.
func (g *propGen) delete(st *propStmt, n int) {
	s, state := g.shapes[st.table], g.state[st.table]
	for range n {
		if len(state.rows) == 0 {
			break
		}
		c := propChange{before: slices.Clone(state.rows[g.r.IntN(len(state.rows))])}
		st.changes = append(st.changes, c)
		g.gone[st.table] = append(g.gone[st.table], c.before)
		must(state.apply(event.Delete, c))
	}
	switch st.image {
	case imageMinimal:
		st.beforeCols = g.keyImage(s, false)
	case imageNoblob:
		st.beforeCols = g.keyImage(s, true)
	}
}

// keyImage is the columns of a partial before image: the key's (every column for a table
// without one, which the source needs to find the row); with noblob, every column but BLOB and
// TEXT ones, some of which the statement may have read all the same.
func (g *propGen) keyImage(s *propShape, noblob bool) []bool {
	if s.key == nil {
		return nil
	}
	out := make([]bool, len(s.cols))
	for i := range s.cols {
		out[i] = s.inKey(i) || (noblob && (!s.cols[i].blob() || g.coin(30)))
	}
	return out
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}
