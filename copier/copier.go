// Package copier copies a workflow's tables from the source to the target before it replicates
// (SPEC 7a), online and resumable, in rounds:
//
//  1. open a consistent snapshot on the source and read the binlog position P it corresponds to
//     (package snapshot: no lock on MariaDB);
//  2. have the stream apply the binlog up to P and hold there (CatchUp): the target is then at P;
//  3. for each table not done, copy one chunk from the snapshot in one target transaction:
//     delete the target's rows above the table's last copied key, insert the next rows in key
//     order (bounded in rows and bytes, multi-row INSERTs up to the statement limit), and record
//     the new last key, the position P and the counts in the copy state, in that same transaction;
//  4. close the snapshot: no read view outlives its round.
//
// Why it is exact. During the copy the stream applies every change of the binlog, idempotently
// (the after image is written; a delete of an absent row is skipped). At every committed instant
// the target is then, for the workflow's position P, exactly the source's rows at P up to each
// table's last copied key, and above it a subset of the source's rows at P (rows the binlog wrote
// since the copy began, with their values at P). A subset of a consistent state breaks no unique
// key, so the idempotent writes never meet a conflict the source did not have; and the chunk's
// DELETE removes that subset above the last key before the chunk inserts the source's rows at P.
// When every table is done, the target equals the source at P, the stream's position: replication
// goes on from P with nothing missing and nothing applied twice. A crash at any instant leaves a
// committed state of that kind: the next attempt resumes from the record's position and the copy
// state's last keys, and no committed chunk is copied again.
//
// A table without a usable key is copied in one scan of one snapshot, in several target
// transactions while the stream holds; its copy starts again from the first row after a crash.
//
// Foreign keys order the tables (parents first) and decide which changes the stream applies with
// the source's foreign_key_checks; tables that cannot be half copied while their changes apply
// (a cycle of references, a cascade within a table or into its key) are copied whole in one
// round: see fk.go.
package copier

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/tabledef"
	"github.com/vplayer/vplayer/workflow"
)

// Defaults of Config's bounds. A chunk's rows stream through the copier (64 KiB of LOAD DATA
// text, or one statement, at a time), so its bounds do not set the copy's memory: they bound one
// target transaction, and so how long a round holds the stream and keeps its snapshots open
// (some seconds for 128 MiB of rows). Each round costs its snapshots and a wait for its slowest
// chunk: a table of up to a million rows is copied in one.
const (
	DefaultChunkRows  = 1_000_000
	DefaultChunkBytes = 128 << 20
	// DefaultStatementBytes bounds one INSERT; the target's max_allowed_packet bounds it too.
	DefaultStatementBytes = 1 << 20
	// DefaultWriters is how many tables' chunks are written at once.
	DefaultWriters = 4
)

// packetOverhead is what a packet holds besides the statement's text.
const packetOverhead = 1024

// sessionSetup is the target session of the copy: bytes pass through untouched, TIMESTAMPs are
// UTC, strict (a value the target cannot hold is an error, never a truncation) but accepting
// invalid and zero dates, and foreign keys unchecked (a chunk's rows are the source's, which it
// checked; a child may be copied after its parent's rows changed).
var sessionSetup = []string{
	"SET NAMES binary",
	"SET SESSION time_zone = '+00:00'",
	"SET SESSION sql_mode = '" + sqlModeStrict + "'",
	"SET SESSION foreign_key_checks = 0",
	"SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ",
}

const (
	sqlModeStrict  = "STRICT_ALL_TABLES,NO_AUTO_VALUE_ON_ZERO,ALLOW_INVALID_DATES,NO_ENGINE_SUBSTITUTION"
	sqlModeLenient = "NO_AUTO_VALUE_ON_ZERO,ALLOW_INVALID_DATES,NO_ENGINE_SUBSTITUTION"
)

// Config configures a Copier.
type Config struct {
	// Source and Target are pools to the two servers; Target must allow multi statements.
	Source, Target     *sql.DB
	SourceDB, TargetDB string
	// Store is the target's record store, ID the workflow's record id.
	Store *workflow.Store
	ID    int64
	// Lease fences each chunk's commit: a chunk of a process that lost the workflow fails.
	Lease *workflow.Lease
	// Flavor is the flavor of the workflow's positions (binlog.FlavorMariaDB, FlavorMySQL or
	// FlavorFilePos); MySQLSource says the source is MySQL (its JSON is not a string).
	Flavor      string
	MySQLSource bool
	// ChunkRows and ChunkBytes bound one chunk: its rows, and the bytes of its INSERTs.
	ChunkRows, ChunkBytes int
	// StatementBytes bounds one INSERT statement (and so one round trip).
	StatementBytes int
	// Writers is how many target sessions write chunks, of different tables, at once (default
	// DefaultWriters).
	Writers int
	// KeepKeys keeps every key of the tables the copy creates from the start, instead of building
	// their secondary keys after their rows: for a workflow that runs the source's DDL (which may
	// drop a key or a column those keys name while the copy runs).
	KeepKeys bool
	// Hold, when set, is called before each round of chunks and returns once the copy may go
	// on: a throttle holds the copy between chunks, never inside one (SPEC 4.5).
	Hold   func(context.Context) error
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

func (c Config) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.Default()
	}
	return c.Logger
}

// CatchUp applies the binlog up to and including pos and returns once all of it is committed on
// the target and the stream holds there, applying nothing more until the next CatchUp or the end
// of the copy.
type CatchUp func(ctx context.Context, pos binlog.Position) error

// Copier copies the tables of one workflow.
type Copier struct {
	cfg Config

	rows      atomic.Int64 // rows this copier committed, for metrics
	remaining atomic.Int64 // tables not done, as last committed
	beganAt   atomic.Int64 // unix nanos when Run began; 0 before
	endedAt   atomic.Int64 // unix nanos when Run returned; 0 before

	progressSince  atomic.Int64
	statement      atomic.Pointer[string]
	statementSince atomic.Int64

	mu    sync.Mutex
	state []workflow.TableCopy // the copy state, as committed

	writers atomic.Pointer[[]*writer] // set by Run, read by Work
	noLoad  bool                      // the target refuses LOAD DATA LOCAL: every chunk takes INSERTs
	pending atomic.Int64              // rows of the round's chunks queued, not yet known committed

	fk      *fkOrder                        // the foreign keys among the tables (see fk.go); set by Run
	redo    map[string]bool                 // tables of groups copied whole that were interrupted: copied again from their first row
	settled atomic.Pointer[map[string]bool] // tables whose changes go in with the source's foreign_key_checks
}

// New returns a copier; nothing is connected until Run.
func New(cfg Config) *Copier {
	if cfg.ChunkRows <= 0 {
		cfg.ChunkRows = DefaultChunkRows
	}
	if cfg.ChunkBytes <= 0 {
		cfg.ChunkBytes = DefaultChunkBytes
	}
	if cfg.StatementBytes <= 0 {
		cfg.StatementBytes = DefaultStatementBytes
	}
	if cfg.Writers <= 0 {
		cfg.Writers = DefaultWriters
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Copier{cfg: cfg}
}

// Run copies every table not done, in rounds (see the package comment), and returns nil once all
// are done. On an error, any open chunk transaction is rolled back by killing its session over
// another connection, so that its locks go at once.
func (c *Copier) Run(ctx context.Context, catchUp CatchUp) (err error) {
	c.beganAt.Store(c.cfg.Now().UnixNano())
	defer func() { c.endedAt.Store(c.cfg.Now().UnixNano()) }()
	state, err := c.cfg.Store.CopyState(ctx, c.cfg.ID)
	if err != nil {
		return err
	}
	c.setState(state)
	if Done(state) {
		return nil
	}
	ws := make([]*writer, 0, c.cfg.Writers)
	var wg sync.WaitGroup
	defer func() {
		for _, w := range ws {
			close(w.jobs)
		}
		wg.Wait()
		for _, w := range ws {
			w.release(err)
		}
		// A copy that ended well clears its writers' recorded sessions (a failure is only logged:
		// the next record replaces them, and a kill of an ended session's id is nothing). One
		// that failed leaves them, so that a takeover still ends a session its KILL missed, and
		// a stop does not wait for the write.
		if err == nil {
			if rerr := c.recordSessions(context.WithoutCancel(ctx), nil); rerr != nil {
				c.cfg.logger().Debug("could not clear the copy's recorded sessions", "error", rerr)
			}
		}
	}()
	for range c.cfg.Writers {
		w, err := c.newWriter(ctx)
		if err != nil {
			return err
		}
		ws = append(ws, w)
		wg.Go(func() { w.run(ctx) })
	}
	c.writers.Store(&ws)
	if err := c.recordSessions(ctx, ws); err != nil {
		return err
	}
	var localInfile int
	if err := ws[0].conn.QueryRowContext(ctx, "SELECT @@local_infile").Scan(&localInfile); err != nil {
		return fmt.Errorf("target: read local_infile: %w", err)
	}
	if c.noLoad = localInfile == 0; c.noLoad {
		c.cfg.logger().Info("the target has local_infile off: the copy writes its rows with INSERTs, which take longer")
	}
	if err := c.orderByForeignKeys(ctx); err != nil {
		return err
	}
	tables := map[string]*table{}
	c.pending.Store(0)
	for !rowsDone(c.State()) || len(c.redo) > 0 {
		if c.cfg.Hold != nil {
			if err := c.cfg.Hold(ctx); err != nil {
				return err
			}
		}
		if err := c.round(ctx, catchUp, tables, ws); err != nil {
			return err
		}
	}
	if err := c.buildKeys(ctx, ws); err != nil {
		return err
	}
	c.cfg.logger().Info("copy done", "rows", c.rows.Load(), "seconds", c.Elapsed(c.cfg.Now()).Seconds())
	return nil
}

// recordSessions records the writers' target sessions as the copy's in the lease, so that a
// process that takes the workflow over from this one kills them and their open chunks' locks go
// at once; with no writers, it clears them.
func (c *Copier) recordSessions(ctx context.Context, ws []*writer) error {
	if c.cfg.Lease == nil {
		return nil
	}
	ids := make([]int64, len(ws))
	for i, w := range ws {
		ids[i] = w.connID
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return c.cfg.Lease.RecordSessionsOf(ctx, workflow.PartCopy, ids...)
}

var _ tabledef.Querier = (*sql.Conn)(nil)
