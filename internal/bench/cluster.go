package bench

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vplayer/vplayer/internal/compare"
	"github.com/vplayer/vplayer/internal/mysqld"
	"github.com/vplayer/vplayer/sqlq"
	"github.com/vplayer/vplayer/workflow"
)

// dbName is the benchmark's database on every server; workflowName its vplayer workflow.
const (
	dbName       = "bench"
	workflowName = "bench"
)

// Server ids: distinct for every server and for vplayer's binlog connection (derived from the
// workflow name, far above these).
const (
	sourceID   = 1
	vplayerID  = 2
	single1ID  = 3
	parallelID = 4
	compareID  = 5
)

// Names of the appliers, as the table and the JSON show them.
const (
	nameVplayer  = "vplayer"
	nameSingle   = "native 1 thread"
	nameParallel = "native 4 threads optimistic"
)

// comparePrefix starts the applier name of the comparison build (--compare-vplayer).
const comparePrefix = "vplayer (compare: "

// compareName is the applier name of the comparison build cmd.
func compareName(cmd []string) string {
	return comparePrefix + strings.Join(cmd, " ") + ")"
}

// parallelThreads is the native parallel replica's slave_parallel_threads.
const parallelThreads = 4

// cluster is the run's servers: the source, one vplayer target per worker count, the two native
// replicas, and the comparison build's target with one; and their pools.
type cluster struct {
	w   io.Writer
	o   Options
	tmp string // vplayer logs

	source, single, parallel *mysqld.Server
	// Pools on database bench. src is the generators' pool.
	src, sdst, pdst *sql.DB
	// vts are the build under test's targets, one per Options.workerCounts entry, in its order.
	vts []vtarget
	// cmp is the comparison build's target; nil without Options.CompareVplayer.
	cmp *vtarget
	// startPos is where the vplayer workflow starts: the source position after the schema.
	startPos string
	// settings are what the servers run with, as they report it.
	settings Settings
	// Process ids of the servers, for their CPU time.
	sourcePID, singlePID, parallelPID int
}

// vtarget is a vplayer build and the target it applies to.
type vtarget struct {
	name   string
	cmd    []string // the binary and its leading arguments
	server *mysqld.Server
	db     *sql.DB
	store  *workflow.Store
	pid    int
	// workers is passed as --apply-workers; 0 passes no flag (the binary's default).
	workers int
}

// main is the first target of the build under test (Options.Vplayer).
func (c *cluster) main() vtarget { return c.vts[0] }

// vtargets are the vplayer targets: the build under test's, then the comparison build's if any.
func (c *cluster) vtargets() []vtarget {
	out := slices.Clone(c.vts)
	if c.cmp != nil {
		out = append(out, *c.cmp)
	}
	return out
}

// native is one native replica.
type native struct {
	name    string
	server  *mysqld.Server
	db      *sql.DB
	pid     int
	threads int
}

func (c *cluster) natives() []native {
	return []native{
		{name: nameSingle, server: c.single, db: c.sdst, pid: c.singlePID, threads: 0},
		{name: nameParallel, server: c.parallel, db: c.pdst, pid: c.parallelPID, threads: parallelThreads},
	}
}

func (c *cluster) say(format string, args ...any) {
	fmt.Fprintf(c.w, format+"\n", args...)
}

// open returns a pool on database bench, created on first use, with multi statements allowed.
func open(s *mysqld.Server) (*sql.DB, error) {
	db, err := s.Pool("")
	if err != nil {
		return nil, err
	}
	db.SetMaxIdleConns(32)
	return db, nil
}

// dbs are the targets' pools.
func dbs(ts []vtarget) []*sql.DB {
	var out []*sql.DB
	for _, t := range ts {
		out = append(out, t.db)
	}
	return out
}

func (c *cluster) close() {
	pools := append([]*sql.DB{c.src, c.sdst, c.pdst}, dbs(c.vtargets())...)
	servers := []*mysqld.Server{c.source, c.single, c.parallel}
	for _, t := range c.vtargets() {
		servers = append(servers, t.server)
	}
	for _, db := range pools {
		if db != nil {
			db.Close()
		}
	}
	var wg sync.WaitGroup
	for _, s := range servers {
		if s != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.Stop()
			}()
		}
	}
	wg.Wait()
	if c.tmp != "" {
		os.RemoveAll(c.tmp)
	}
}

// sourcePos returns the source's GTID position ("0-1-1234").
func (c *cluster) sourcePos(ctx context.Context) (string, error) {
	return c.source.GTIDPos(ctx)
}

// load fills the tables on the source and lets every applier replicate them, untimed; every
// applier is stopped when it returns.
func (c *cluster) load(ctx context.Context) error {
	began := time.Now()
	c.say("Loading %d tables of %d rows on the source and replicating them to every target (untimed)...", len(tables), c.o.RowsPerTable)
	if err := loadTables(ctx, c.src, c.o.RowsPerTable); err != nil {
		return err
	}
	if err := c.catchUpAll(ctx, "MariaDB/"+c.startPos); err != nil {
		return err
	}
	c.say("  loaded and replicated in %.1fs", time.Since(began).Seconds())
	return nil
}

// catchUpAll lets every applier, one at a time, catch up with the source, untimed, and stops it.
// startPos is vplayer's --start-pos (empty: resume from the record).
func (c *cluster) catchUpAll(ctx context.Context, startPos string) error {
	want, err := c.sourcePos(ctx)
	if err != nil {
		return err
	}
	for _, t := range c.vtargets() {
		v, err := c.startVplayer(ctx, t, startPos)
		if err != nil {
			return err
		}
		if err := v.waitFor(ctx, t.store, want); err != nil {
			v.stop()
			return fmt.Errorf("%s: %w", t.name, err)
		}
		if err := v.stop(); err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
	}
	for _, n := range c.natives() {
		if _, err := n.catchUp(ctx, want, c.sourcePID); err != nil {
			return err
		}
	}
	return nil
}

// verify compares every target with the source, table by table, printing each difference. All
// appliers must have caught up with the same source position.
func (c *cluster) verify(ctx context.Context) (map[string]bool, error) {
	equal := map[string]bool{}
	var bad []string
	type target struct {
		name string
		db   *sql.DB
	}
	var targets []target
	for _, t := range c.vtargets() {
		targets = append(targets, target{t.name, t.db})
	}
	targets = append(targets, target{nameSingle, c.sdst}, target{nameParallel, c.pdst})
	for _, t := range targets {
		rs, err := compare.Tables(ctx, c.src, t.db, dbName, dbName, append(append([]string{}, tables...), stampTable))
		if err != nil {
			return equal, fmt.Errorf("compare %s's target: %w", t.name, err)
		}
		equal[t.name] = compare.AllEqual(rs)
		if !equal[t.name] {
			bad = append(bad, t.name)
			c.say("  %s's target DIFFERS from the source:", t.name)
			for _, r := range rs {
				c.say("    %s", r)
			}
		}
	}
	if len(bad) > 0 {
		return equal, fmt.Errorf("target of %s does not equal the source", strings.Join(bad, ", "))
	}
	c.say("  every target equals the source (%d tables compared, every value exact)", len(tables)+1)
	return equal, nil
}

// createSchema creates database bench and its tables.
func createSchema(ctx context.Context, db *sql.DB) error {
	stmts := append([]string{"CREATE DATABASE " + sqlq.Ident(dbName)}, schema()...)
	for _, q := range stmts {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create schema: %w", err)
		}
	}
	return nil
}
