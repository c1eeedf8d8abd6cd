package applier

import (
	"slices"
	"testing"

	"github.com/vplayer/vplayer/applier/plan"
	"github.com/vplayer/vplayer/event"
	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
)

// propStmtOf is a statement on the property test's table named table, its images carrying the
// columns named in before and after (nil: every column): FULL when both carry every column,
// NOBLOB when they carry every column but BLOB and TEXT ones, else MINIMAL.
func propStmtOf(Table string, kind event.RowKind, before, after []string, changes ...propChange) propStmt {
	shapes := propShapes()
	ti := slices.IndexFunc(shapes, func(s *propShape) bool { return s.name == Table })
	s := shapes[ti]
	cols := func(names []string) []bool {
		if names == nil {
			return nil
		}
		out := make([]bool, len(s.cols))
		for i, c := range s.cols {
			out[i] = slices.Contains(names, c.name)
		}
		return out
	}
	st := propStmt{table: ti, kind: kind, image: imageFull, beforeCols: cols(before), afterCols: cols(after), changes: changes}
	noblob := func(present []bool) bool { // every column but BLOB and TEXT ones
		for i, c := range s.cols {
			if present != nil && !present[i] && !c.blob() {
				return false
			}
		}
		return true
	}
	switch {
	case before == nil && after == nil:
	case noblob(st.beforeCols) && noblob(st.afterCols):
		st.image = imageNoblob
	default:
		st.image = imageMinimal
	}
	return st
}

func propIns(r propRow) propChange             { return propChange{after: r} }
func propUpd(before, after propRow) propChange { return propChange{before: before, after: after} }
func propDel(r propRow) propChange             { return propChange{before: r} }

func txnOf(stmts ...propStmt) propTxn { return propTxn{stmts: stmts} }

// propCases are histories the property test's seeds reach only now and then, each planned in one
// fetch and run on one session in strict and idempotent mode and as workers' jobs.
var propCases = []struct {
	name string
	txns []propTxn
}{
	{
		// A key deleted and inserted again in one transaction by a MINIMAL INSERT that leaves
		// DEFAULT columns out, then updated by a MINIMAL and a NOBLOB image: the full images
		// before them fold, the partial ones go after them as the source wrote them.
		name: "key re-inserted with defaults, then partial updates",
		txns: []propTxn{
			txnOf(propStmtOf("pk", event.Insert, nil, nil, propIns(propRow{int64(1), int64(2), int64(5), "t", "\x00", "2026-01-02 03:04:05"}))),
			txnOf(
				propStmtOf("pk", event.Delete, nil, nil, propDel(propRow{int64(1), int64(2), int64(5), "t", "\x00", "2026-01-02 03:04:05"})),
				propStmtOf("pk", event.Insert, nil, []string{"id", "bl", "ts"}, propIns(propRow{int64(1), nil, int64(7), "dflt", "b", "2027-12-31 23:59:59"})),
				propStmtOf("pk", event.Update, []string{"id"}, []string{"a"}, propUpd(
					propRow{int64(1), nil, int64(7), "dflt", "b", "2027-12-31 23:59:59"},
					propRow{int64(1), int64(3), int64(7), "dflt", "b", "2027-12-31 23:59:59"})),
				propStmtOf("pk", event.Update, []string{"id", "a", "d", "ts"}, []string{"id", "a", "d", "ts"}, propUpd(
					propRow{int64(1), int64(3), int64(7), "dflt", "b", "2027-12-31 23:59:59"},
					propRow{int64(1), int64(3), int64(9), "dflt", "b", "2027-12-31 23:59:59"})),
				propStmtOf("pk", event.Insert, nil, nil, propIns(propRow{int64(2), nil, int64(7), "dflt", "", "2026-01-02 03:04:06"})),
			),
		},
	},
	{
		// A composite key whose string changes only in case, then moves: the fold sees two
		// keys where the server sees one row.
		name: "composite key changed in case only",
		txns: []propTxn{
			txnOf(propStmtOf("ck", event.Insert, nil, nil, propIns(propRow{int64(1), "a", int64(1), "x"}))),
			txnOf(
				propStmtOf("ck", event.Update, nil, nil, propUpd(propRow{int64(1), "a", int64(1), "x"}, propRow{int64(1), "A", int64(1), "x"})),
				propStmtOf("ck", event.Insert, nil, nil, propIns(propRow{int64(2), "B ", nil, "X"})),
				propStmtOf("ck", event.Update, []string{"g", "k"}, []string{"g"}, propUpd(propRow{int64(1), "A", int64(1), "x"}, propRow{int64(2), "A", int64(1), "x"})),
			),
			txnOf(
				propStmtOf("ck", event.Delete, nil, nil, propDel(propRow{int64(2), "B ", nil, "X"})),
				propStmtOf("ck", event.Insert, nil, nil, propIns(propRow{int64(1), "a ", int64(0), nil})),
			),
		},
	},
	{
		// A unique value that moves from one row to another in one transaction: the order of
		// the two updates matters.
		name: "unique value moved between rows",
		txns: []propTxn{
			txnOf(propStmtOf("uk", event.Insert, nil, nil,
				propIns(propRow{int64(1), int64(1), int64(3), nil}), propIns(propRow{int64(2), nil, int64(3), "n"}))),
			txnOf(
				propStmtOf("uk", event.Update, []string{"id"}, []string{"u"}, propUpd(propRow{int64(1), int64(1), int64(3), nil}, propRow{int64(1), nil, int64(3), nil})),
				propStmtOf("uk", event.Update, nil, nil, propUpd(propRow{int64(2), nil, int64(3), "n"}, propRow{int64(2), int64(1), int64(3), "n"})),
			),
		},
	},
	{
		// Rows without a key that only a collation tells apart, and duplicates: each change
		// finds a row equal byte for byte.
		name: "keyless rows alike under a collation",
		txns: []propTxn{
			txnOf(propStmtOf("nk", event.Insert, nil, nil,
				propIns(propRow{int64(1), "a", "t", int64(5)}), propIns(propRow{int64(1), "A", "t", int64(5)}),
				propIns(propRow{int64(1), "a ", "T", int64(5)}), propIns(propRow{int64(1), "a", "t", int64(5)}))),
			txnOf(
				propStmtOf("nk", event.Delete, nil, nil, propDel(propRow{int64(1), "A", "t", int64(5)})),
				propStmtOf("nk", event.Update, nil, []string{"s"}, propUpd(propRow{int64(1), "a ", "T", int64(5)}, propRow{int64(1), "A", "T", int64(5)})),
				propStmtOf("nk", event.Update, nil, []string{"tx"}, propUpd(propRow{int64(1), "a", "t", int64(5)}, propRow{int64(1), "a", "T", int64(5)})),
				propStmtOf("nk", event.Insert, nil, []string{"a"}, propIns(propRow{nil, "s", nil, int64(5)})),
			),
		},
	},
}

// propCaseConfigs are the settings each of propCases runs under.
var propCaseConfigs = []struct {
	name string
	cfg  propConfig
}{
	{"strict", propConfig{mode: plan.ExecModeStrict, maxBatch: 4 << 20}},
	{"idempotent", propConfig{mode: plan.ExecModeIdempotent, maxBatch: 4 << 20}},
	{"strict small batches", propConfig{mode: plan.ExecModeStrict, maxBatch: 100}},
	{"workers", propConfig{mode: plan.ExecModeStrict, parallel: true, late: true, cut: true, maxBatch: parallelMaxBatch}},
	{"workers idempotent", propConfig{mode: plan.ExecModeIdempotent, parallel: true, late: true, cut: true, maxBatch: parallelMaxBatch}},
}

// TestPlanner_PropertyCases: the target ends with the source's rows after each of propCases.
func TestPlanner_PropertyCases(t *testing.T) {
	_, target := mysqltest.Pair(t)
	for _, tc := range propCases {
		for _, c := range propCaseConfigs {
			t.Run(tc.name+"/"+c.name, func(t *testing.T) {
				cfg := c.cfg
				cfg.oneFetch = true // the changes of a case planned together
				h := propHistory{seed: 1, cfg: cfg, txns: tc.txns}
				if _, err := h.replay(propShapes()); err != nil {
					t.Fatalf("the source could not have run the case: %v", err)
				}
				checkProperty(t, target, h)
			})
		}
	}
}

// propRegressions are cases the property test found failing, at their smallest, each run under
// every one of propCaseConfigs.
var propRegressions = []struct {
	name string
	txns []propTxn
}{
	{
		// A MINIMAL INSERT (one session) waits in the row group; the fold fills on the DELETE of
		// the same key (another session's, one large row) and is written first: DELETE, then
		// INSERT.
		name: "fold fills after a partial insert of its key",
		txns: []propTxn{
			txnOf(propStmtOf("pk", event.Insert, nil, []string{"id", "bl", "ts"}, propIns(propRow{int64(1), nil, int64(7), "dflt", "b", "2026-01-02 03:04:05"}))),
			txnOf(sized(2200<<10, propStmtOf("pk", event.Delete, nil, nil, propDel(propRow{int64(1), nil, int64(7), "dflt", "b", "2026-01-02 03:04:05"})))),
		},
	},
	{
		// A MINIMAL DELETE waits in the row group; the fold fills on the INSERT of the same key
		// and is written first: INSERT of a key that is still there, then DELETE.
		name: "fold fills after a partial delete of its key",
		txns: []propTxn{
			txnOf(propStmtOf("pk", event.Insert, nil, nil, propIns(propRow{int64(1), nil, int64(7), "dflt", "b", "2026-01-02 03:04:05"}))),
			txnOf(propStmtOf("pk", event.Delete, []string{"id"}, nil, propDel(propRow{int64(1), nil, int64(7), "dflt", "b", "2026-01-02 03:04:05"}))),
			txnOf(sized(2200<<10, propStmtOf("pk", event.Insert, nil, nil, propIns(propRow{int64(1), int64(2), int64(7), "dflt", "c", "2026-01-02 03:04:05"})))),
		},
	},
}

// sized gives st the size of a large rows event in the binary log.
func sized(size int, st propStmt) propStmt {
	st.size = size
	return st
}

// TestPlanner_PropertyRegressions: the target ends with the source's rows after each of
// propRegressions.
func TestPlanner_PropertyRegressions(t *testing.T) {
	_, target := mysqltest.Pair(t)
	for _, tc := range propRegressions {
		for _, c := range propCaseConfigs {
			t.Run(tc.name+"/"+c.name, func(t *testing.T) {
				cfg := c.cfg
				cfg.oneFetch = true // the row group and the fold of several transactions together
				h := propHistory{seed: 1, cfg: cfg, txns: tc.txns}
				if _, err := h.replay(propShapes()); err != nil {
					t.Fatalf("the source could not have run the case: %v", err)
				}
				checkProperty(t, target, h)
			})
		}
	}
}
