package bench

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/vplayer/vplayer/sqlq"
)

// tables are the benchmark's tables, shaped like sysbench's sbtest tables.
var tables = []string{"sbtest1", "sbtest2", "sbtest3", "sbtest4"}

// stampTable holds the lag mode's timestamp row.
const stampTable = "bench_stamp"

// loadChunk is how many rows one load INSERT (one transaction) writes.
const loadChunk = 1000

// generatorWorkers is how many connections write a backlog: concurrent clients, as an
// application has, whose commits the source groups. Each sends a transaction in one round trip.
const generatorWorkers = 16

func schema() []string {
	var out []string
	for _, t := range tables {
		out = append(out, "CREATE TABLE "+qualified(t)+` (
  id int NOT NULL,
  k int NOT NULL DEFAULT 0,
  c char(120) NOT NULL DEFAULT '',
  pad char(60) NOT NULL DEFAULT '',
  PRIMARY KEY (id),
  KEY k_1 (k)
) ENGINE=InnoDB`)
	}
	return append(out, "CREATE TABLE "+qualified(stampTable)+" (id int NOT NULL PRIMARY KEY, ts bigint NOT NULL) ENGINE=InnoDB")
}

func qualified(t string) string { return sqlq.Ident(dbName) + "." + sqlq.Ident(t) }

// rowGen makes the values of one generator connection.
type rowGen struct {
	rng  *rand.Rand
	rows int // ids 1..rows exist in every table
	buf  []byte
}

func newRowGen(seed, stream uint64, rows int) *rowGen {
	return &rowGen{rng: rand.New(rand.NewPCG(seed, stream)), rows: rows}
}

// digits appends groups of 11 random digits separated by '-', as sysbench fills c and pad.
func (g *rowGen) digits(b []byte, groups int) []byte {
	for i := 0; i < groups; i++ {
		if i > 0 {
			b = append(b, '-')
		}
		for j := 0; j < 11; j++ {
			b = append(b, byte('0'+g.rng.IntN(10)))
		}
	}
	return b
}

func (g *rowGen) table() string { return tables[g.rng.IntN(len(tables))] }
func (g *rowGen) id() int       { return 1 + g.rng.IntN(g.rows) }

// tuple appends "(id,k,'c','pad')".
func (g *rowGen) tuple(b []byte, id int) []byte {
	b = append(b, '(')
	b = strconv.AppendInt(b, int64(id), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(g.rng.IntN(g.rows)+1), 10)
	b = append(b, ",'"...)
	b = g.digits(b, 10)
	b = append(b, "','"...)
	b = g.digits(b, 5)
	return append(b, "')"...)
}

func insertHead(t string) string {
	return "INSERT INTO " + qualified(t) + " (id, k, c, pad) VALUES "
}

// oltpWrite returns the statements of one oltp_write_only transaction: four row changes, each
// statement on a table of its own choosing, the delete and its re-insert on the same key.
func (g *rowGen) oltpWrite() []string {
	out := make([]string, 0, 4)
	out = append(out, "UPDATE "+qualified(g.table())+" SET k = k + 1 WHERE id = "+strconv.Itoa(g.id()))
	b := append(g.buf[:0], "UPDATE "+qualified(g.table())+" SET c = '"...)
	b = g.digits(b, 10)
	b = append(b, "' WHERE id = "...)
	b = strconv.AppendInt(b, int64(g.id()), 10)
	out = append(out, string(b))
	t, id := g.table(), g.id()
	out = append(out, "DELETE FROM "+qualified(t)+" WHERE id = "+strconv.Itoa(id))
	b = g.tuple(append(b[:0], insertHead(t)...), id)
	out = append(out, string(b))
	g.buf = b
	return out
}

// hotRows is how many rows the hotrow backlog updates: ids 1..hotRows of its table.
const hotRows = 10

// hotRow returns one hotrow transaction, the statement of sysbench's oltp_update_non_index: a
// new c for one of the first hotRows rows of the first table, in autocommit.
func (g *rowGen) hotRow() []string {
	b := append(g.buf[:0], "UPDATE "+qualified(tables[0])+" SET c = '"...)
	b = g.digits(b, 10)
	b = append(b, "' WHERE id = "...)
	b = strconv.AppendInt(b, int64(1+g.rng.IntN(min(hotRows, g.rows))), 10)
	g.buf = b
	return []string{string(b)}
}

// insert returns one transaction of sysbench's oltp_insert: a single-row INSERT in autocommit,
// its id the next of its table's (sysbench's auto-increment ids), the table chosen at random.
func (g *rowGen) insert(next map[string]*atomic.Int64) []string {
	t := g.table()
	b := g.tuple(append(g.buf[:0], insertHead(t)...), int(next[t].Add(1)))
	g.buf = b
	return []string{string(b)}
}

// loadTables writes ids 1..rows into every table, loadChunk rows per transaction, the tables in
// parallel, and the lag mode's stamp row.
func loadTables(ctx context.Context, db *sql.DB, rows int) error {
	if _, err := db.ExecContext(ctx, "INSERT INTO "+qualified(stampTable)+" (id, ts) VALUES (1, 0)"); err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(tables))
	for i, t := range tables {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := newRowGen(1, uint64(i), rows)
			for first := 1; first <= rows && errs[i] == nil; first += loadChunk {
				b := []byte(insertHead(t))
				for id := first; id < first+loadChunk && id <= rows; id++ {
					if id > first {
						b = append(b, ',')
					}
					b = g.tuple(b, id)
				}
				if _, err := db.ExecContext(ctx, string(b)); err != nil {
					errs[i] = fmt.Errorf("load %s: %w", t, err)
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// txnSource returns the statements of transaction i for a generator connection.
type txnSource func(g *rowGen, i int64) []string

// genStats is what a generator wrote.
type genStats struct {
	Transactions int64
	Rows         int64 // row changes, as the server counted affected rows
	Elapsed      time.Duration
}

// pace, when not nil, stops the generator at start + duration and, with a rate above 0,
// schedules transaction i no earlier than start + i/rate; with rate 0 every connection writes as
// fast as it can.
type pace struct {
	rate     int
	duration time.Duration
}

// generate runs n transactions (n <= 0: until the pace's duration ends) from next on workers
// connections of db. Deadlocks and lock wait timeouts are retried.
func generate(ctx context.Context, db *sql.DB, workers int, n int64, rows int, seed uint64, p *pace, next txnSource) (genStats, error) {
	var claimed, txns, affected atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := newRowGen(seed, uint64(w), rows)
			conn, err := db.Conn(ctx)
			if err != nil {
				errs[w] = err
				return
			}
			defer conn.Close()
			for ctx.Err() == nil {
				i := claimed.Add(1) - 1
				if n > 0 && i >= n {
					return
				}
				if p != nil && p.rate == 0 && time.Since(start) >= p.duration {
					return
				}
				if p != nil && p.rate > 0 {
					at := start.Add(time.Duration(i) * time.Second / time.Duration(p.rate))
					if at.Sub(start) >= p.duration {
						return
					}
					if err := sleepUntil(ctx, at); err != nil {
						return
					}
				}
				stmts := next(g, i)
				for {
					got, err := execTxn(ctx, conn, stmts)
					if retryable(err) {
						continue
					}
					if err != nil {
						if ctx.Err() == nil {
							errs[w] = fmt.Errorf("generate: %w", err)
						}
						return
					}
					txns.Add(1)
					affected.Add(got)
					break
				}
			}
		}()
	}
	wg.Wait()
	st := genStats{Transactions: txns.Load(), Rows: affected.Load(), Elapsed: time.Since(start)}
	if err := errors.Join(errs...); err != nil {
		return st, err
	}
	return st, ctx.Err()
}

func sleepUntil(ctx context.Context, at time.Time) error {
	d := time.Until(at)
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// execTxn runs stmts as one transaction (a single statement in autocommit) in one round trip,
// and returns the rows they affected. On error the transaction is rolled back.
func execTxn(ctx context.Context, conn *sql.Conn, stmts []string) (int64, error) {
	q := stmts[0]
	if len(stmts) > 1 {
		q = "BEGIN;" + strings.Join(stmts, ";") + ";COMMIT"
	}
	var n int64
	err := conn.Raw(func(dc any) error {
		ex, ok := dc.(driver.ExecerContext)
		if !ok {
			return errors.New("the driver cannot execute statements")
		}
		res, err := ex.ExecContext(ctx, q, nil)
		if err != nil {
			return err
		}
		if all, ok := res.(mysql.Result); ok {
			for _, k := range all.AllRowsAffected() {
				n += k
			}
			return nil
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil && len(stmts) > 1 {
		conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
	}
	return n, err
}

// retryable reports a deadlock (1213) or a lock wait timeout (1205): concurrent generator
// transactions may pick the same keys.
func retryable(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205)
}
