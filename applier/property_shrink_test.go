package applier

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vplayer/vplayer/applier/plan"
	"github.com/vplayer/vplayer/event"
)

// shrink returns a smaller history that still fails: simpler settings, fewer transactions,
// statements and rows, full images for partial ones, as long as fails says it still fails.
// Candidates the source could not have run are skipped. Bounded in time.
func (h propHistory) shrink(fails func(propHistory) bool) propHistory {
	deadline := time.Now().Add(60 * time.Second)
	try := func(c propHistory) bool {
		if time.Now().After(deadline) {
			return false
		}
		if _, err := c.replay(propShapes()); err != nil {
			return false
		}
		return fails(c)
	}
	for changed := true; changed && time.Now().Before(deadline); {
		changed = false
		for _, simpler := range []func(*propConfig){
			func(c *propConfig) { c.parallel, c.late, c.cut, c.maxBatch = false, false, false, 4<<20 },
			func(c *propConfig) { c.late = false },
			func(c *propConfig) { c.cut = false },
			func(c *propConfig) { c.maxBatch = max(c.maxBatch, parallelMaxBatch) },
			func(c *propConfig) { c.mode = plan.ExecModeStrict },
		} {
			c := h
			simpler(&c.cfg)
			if c.cfg != h.cfg && try(c) {
				h, changed = c, true
			}
		}
		// Runs of transactions, halving: a row's insert and delete go together.
		for size := max(len(h.txns)/2, 1); size >= 1; size /= 2 {
			for i := len(h.txns) - size; i >= 0; i = min(i-1, len(h.txns)-size) {
				c := h
				c.txns = slices.Delete(slices.Clone(h.txns), i, i+size)
				if try(c) {
					h, changed = c, true
				}
			}
		}
		for i := len(h.txns) - 1; i >= 0; i-- {
			for j := len(h.txns[i].stmts) - 1; j >= 0; j-- {
				for _, edit := range []func(*propStmt) bool{
					nil, // drop the statement
					func(st *propStmt) bool { // full images
						if st.image == imageFull {
							return false
						}
						st.image, st.beforeCols, st.afterCols = imageFull, nil, nil
						return true
					},
				} {
					c := h.withStmt(i, j, edit)
					if c != nil && try(*c) {
						h, changed = *c, true
						break
					}
				}
				if j >= len(h.txns[i].stmts) {
					continue
				}
				for k := len(h.txns[i].stmts[j].changes) - 1; k >= 0 && len(h.txns[i].stmts[j].changes) > 1; k-- {
					c := h.withStmt(i, j, func(st *propStmt) bool {
						st.changes = slices.Delete(slices.Clone(st.changes), k, k+1)
						return true
					})
					if c != nil && try(*c) {
						h, changed = *c, true
					}
				}
			}
		}
	}
	return h
}

// withStmt returns h with statement j of transaction i edited (dropped when edit is nil), or nil
// when edit changes nothing.
func (h propHistory) withStmt(i, j int, edit func(*propStmt) bool) *propHistory {
	if i >= len(h.txns) || j >= len(h.txns[i].stmts) {
		return nil
	}
	c := h
	c.txns = slices.Clone(h.txns)
	stmts := slices.Clone(h.txns[i].stmts)
	if edit == nil {
		stmts = slices.Delete(stmts, j, j+1)
	} else if !edit(&stmts[j]) {
		return nil
	}
	c.txns[i] = propTxn{stmts: stmts}
	return &c
}

// goString renders h as Go, to keep a failing case among propRegressions.
func (h propHistory) goString() string {
	var b strings.Builder
	fmt.Fprintf(&b, "propHistory{seed: %d, cfg: %#v, txns: []propTxn{\n", h.seed, h.cfg)
	shapes := propShapes()
	for _, tx := range h.txns {
		b.WriteString("\t{stmts: []propStmt{\n")
		for _, st := range tx.stmts {
			fmt.Fprintf(&b, "\t\t{table: %d, kind: event.%s, image: %q, beforeCols: %s, afterCols: %s, size: %d, changes: []propChange{\n",
				st.table, kindName(st.kind), st.image, goBools(st.beforeCols), goBools(st.afterCols), st.size)
			for _, c := range st.changes {
				fmt.Fprintf(&b, "\t\t\t{before: %s, after: %s},\n", goRow(c.before), goRow(c.after))
			}
			fmt.Fprintf(&b, "\t\t}}, // %s\n", st.describe(shapes[st.table]))
		}
		b.WriteString("\t}},\n")
	}
	b.WriteString("}}")
	return b.String()
}

func kindName(k event.RowKind) string {
	return map[event.RowKind]string{event.Insert: "Insert", event.Update: "Update", event.Delete: "Delete"}[k]
}

func goBools(v []bool) string {
	if v == nil {
		return "nil"
	}
	s := strings.ReplaceAll(fmt.Sprint(v), " ", ", ")
	return "[]bool{" + s[1:len(s)-1] + "}"
}

func goRow(r propRow) string {
	if r == nil {
		return "nil"
	}
	parts := make([]string, len(r))
	for i, v := range r {
		switch x := v.(type) {
		case nil:
			parts[i] = "nil"
		case int64:
			parts[i] = "int64(" + strconv.FormatInt(x, 10) + ")"
		case string:
			parts[i] = strconv.Quote(x)
		}
	}
	return "propRow{" + strings.Join(parts, ", ") + "}"
}
