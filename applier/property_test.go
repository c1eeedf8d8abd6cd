package applier

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vplayer/vplayer/applier/plan"
	"github.com/vplayer/vplayer/internal/mysqld"
	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
)

// The planner's property test: random source transactions on tables of a few shapes, their row
// images full, MINIMAL or NOBLOB as the source logs them (drawn from the source's whole rows),
// planned in fetches of a few transactions, in strict or idempotent mode, on one session or as
// workers' jobs (writesets, cuts, batches split around the jobs in flight), and run on a real
// MariaDB target, whose tables must then hold exactly the source's rows, every column.

// Environment variables that widen the test: VPLAYER_PROPERTY_SEEDS=n runs seeds 1..n instead
// of propSeeds, VPLAYER_PROPERTY_SEED=s only seed s (to look at one failure again), and
// VPLAYER_PROPERTY_TXNS=n draws n transactions a seed instead of propTxns.
const (
	envPropSeeds = "VPLAYER_PROPERTY_SEEDS"
	envPropSeed  = "VPLAYER_PROPERTY_SEED"
	envPropTxns  = "VPLAYER_PROPERTY_TXNS"
)

// propSeeds and propTxns are what a plain go test runs: seeds, of propTxns transactions each.
const (
	propSeeds = 30
	propTxns  = 40
)

// propHistory is one case: the source's transactions and how they are planned and run. seed
// draws the run's own choices (fetch ends, cuts, the jobs' order).
type propHistory struct {
	seed uint64
	cfg  propConfig
	txns []propTxn
}

// newPropHistory draws the case of seed: its settings and n transactions.
func newPropHistory(seed uint64, n int) propHistory {
	r := rand.New(rand.NewPCG(seed, 1))
	cfg := propConfig{mode: plan.ExecModeStrict, maxBatch: 4 << 20}
	if r.IntN(4) == 0 {
		cfg.mode = plan.ExecModeIdempotent
	}
	if r.IntN(2) == 0 {
		cfg.parallel, cfg.maxBatch = true, parallelMaxBatch
		cfg.late = r.IntN(10) < 7
		cfg.cut = r.IntN(2) == 0
	}
	if r.IntN(10) < 3 {
		cfg.maxBatch = 600 // a batch cut before its commit (one session) or at every commit past it (workers)
	}
	// Partial images make a batch a barrier to the others: the workers' paths need mostly full
	// ones.
	full := 40
	if cfg.parallel && r.IntN(10) < 6 {
		full = 95
	}
	return propHistory{seed: seed, cfg: cfg, txns: newPropGen(r, propShapes(), full).txns(n)}
}

// replay applies h's transactions to a fresh model: the source's rows at their end, or why
// the source could not have made one of the changes.
func (h *propHistory) replay(shapes []*propShape) ([]*propState, error) {
	states := make([]*propState, len(shapes))
	for i, s := range shapes {
		states[i] = &propState{shape: s}
	}
	for n, tx := range h.txns {
		for _, st := range tx.stmts {
			for _, c := range st.changes {
				if err := states[st.table].apply(st.kind, c); err != nil {
					return nil, fmt.Errorf("transaction %d, %s: %w", n+1, shapes[st.table].name, err)
				}
			}
		}
	}
	return states, nil
}

// failure runs h on the target database schema of db, whose tables it creates: what differs
// from the source, or "" when the target ends equal to it; trace is what was planned and run.
func (h *propHistory) failure(ctx context.Context, db *sql.DB, schema string) (failure string, trace []string, err error) {
	shapes := propShapes()
	want, err := h.replay(shapes)
	if err != nil {
		return "", nil, err
	}
	pr, err := newPropRun(ctx, db, schema, h.cfg, shapes, h.seed)
	if err != nil {
		return "", nil, err
	}
	defer pr.close()
	if err := pr.apply(ctx, h.txns); err != nil {
		return fmt.Sprintf("\n  applying: %v", err), pr.trace, nil
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return "", nil, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET NAMES binary"); err != nil {
		return "", nil, err
	}
	var b strings.Builder
	for i, s := range shapes {
		got, err := readRows(ctx, conn, schema, s)
		if err != nil {
			return "", nil, err
		}
		if w := modelRows(want[i]); !slices.Equal(got, w) {
			fmt.Fprintf(&b, "\n  table %s differs from the source:%s", s.name, diffRows(got, w))
		}
	}
	if m := pr.a.stats.Mismatches(); len(m) > 0 {
		fmt.Fprintf(&b, "\n  idempotent mode counted mismatches, the target being the source's: %v", m)
	}
	if pr.retries > 0 {
		pr.logf("%d jobs rolled back after a lock wait", pr.retries)
	}
	return b.String(), pr.trace, nil
}

// propDB returns a pool on a database of the test's own, as vplayer opens its target pools.
func propDB(t *testing.T, target *mysqld.Server) (*sql.DB, string) {
	t.Helper()
	name := mysqltest.DBName(t)
	mysqltest.DB(t, target, name)
	db, err := target.Pool(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, name
}

// checkProperty runs h and, when the target ends different from the source, shrinks h to a
// smaller case that still fails and reports that one.
func checkProperty(t *testing.T, target *mysqld.Server, h propHistory) {
	t.Helper()
	ctx := t.Context()
	db, schema := propDB(t, target)
	failure, _, err := h.failure(ctx, db, schema)
	if err != nil {
		t.Fatal(err)
	}
	if failure == "" {
		return
	}
	small := h.shrink(func(c propHistory) bool {
		f, _, err := c.failure(ctx, db, schema)
		return err == nil && f != ""
	})
	smallFailure, trace, err := small.failure(ctx, db, schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Errorf("seed %d (%s), %d transactions: the target differs from the source:%s\n"+
		"shrunk to %d transactions (%s):%s\n%s\nplanned and run:\n%s",
		h.seed, h.cfg, len(h.txns), failure, len(small.txns), small.cfg, smallFailure, small.goString(), strings.Join(trace, "\n"))
}

// seedsToRun are propSeeds' seeds, or those the environment names.
func seedsToRun(t *testing.T) []uint64 {
	t.Helper()
	if s := os.Getenv(envPropSeed); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", envPropSeed, s, err)
		}
		return []uint64{n}
	}
	n := uint64(propSeeds)
	if s := os.Getenv(envPropSeeds); s != "" {
		var err error
		if n, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", envPropSeeds, s, err)
		}
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	return seeds
}

// TestPlanner_Property: for each seed, the target ends with exactly the source's rows.
func TestPlanner_Property(t *testing.T) {
	_, target := mysqltest.Pair(t)
	txns := propTxns
	if s := os.Getenv(envPropTxns); s != "" {
		var err error
		if txns, err = strconv.Atoi(s); err != nil {
			t.Fatalf("%s=%q: %v", envPropTxns, s, err)
		}
	}
	for _, seed := range seedsToRun(t) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			checkProperty(t, target, newPropHistory(seed, txns))
		})
	}
}
