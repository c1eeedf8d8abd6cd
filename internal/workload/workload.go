// Package workload writes a realistic, concurrent mix of inserts, updates (some changing the
// primary key) and deletes to a source database. Tests, the demo and the benchmark use it.
package workload

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/vplayer/vplayer/sqlq"
)

// Tables are the tables Schema creates.
var Tables = []string{"customers", "orders", "order_lines"}

// Schema returns the CREATE TABLE statements of the workload's tables, for the source and the
// target alike.
func Schema() []string {
	return []string{
		`CREATE TABLE customers (
  id bigint unsigned NOT NULL,
  name varchar(100) NOT NULL,
  email varchar(200) CHARACTER SET utf8mb4 DEFAULT NULL,
  balance decimal(14,2) NOT NULL DEFAULT 0,
  score double DEFAULT NULL,
  updated_at datetime(6) NOT NULL,
  PRIMARY KEY (id)
) ENGINE=InnoDB`,
		`CREATE TABLE orders (
  id bigint NOT NULL,
  customer_id bigint unsigned NOT NULL,
  status enum('new','paid','shipped','cancelled') NOT NULL DEFAULT 'new',
  amount decimal(12,2) NOT NULL,
  note text,
  payload blob,
  created_at timestamp(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (id),
  KEY customer_id (customer_id)
) ENGINE=InnoDB`,
		`CREATE TABLE order_lines (
  order_id bigint NOT NULL,
  line int NOT NULL,
  sku varchar(32) NOT NULL,
  qty smallint unsigned NOT NULL,
  price decimal(10,2) NOT NULL,
  PRIMARY KEY (order_id, line)
) ENGINE=InnoDB`,
	}
}

// Create creates the workload's tables in db on each of the given servers.
func Create(ctx context.Context, dbName string, servers ...*sql.DB) error {
	for _, s := range servers {
		for _, q := range Schema() {
			q = strings.Replace(q, "CREATE TABLE ", "CREATE TABLE "+sqlq.Ident(dbName)+".", 1)
			if _, err := s.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("create workload table: %w", err)
			}
		}
	}
	return nil
}

// Config shapes a run.
type Config struct {
	// Workers is the number of concurrent writers (default 4).
	Workers int
	// Rate caps transactions per second over all workers; 0 means as fast as possible.
	Rate int
	// Transactions stops the run after this many transactions in all; 0 means until ctx ends.
	Transactions int64
	// Seed makes the choice of operations repeatable per worker.
	Seed uint64
}

// Stats counts what a run did.
type Stats struct {
	Transactions atomic.Int64
	Rows         atomic.Int64
	Retries      atomic.Int64
}

// Run writes transactions to dbName until ctx ends or cfg.Transactions are done. Deadlocks between
// workers are retried. It returns nil when stopped by ctx or the transaction count.
func Run(ctx context.Context, db *sql.DB, dbName string, cfg Config, st *Stats) error {
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if st == nil {
		st = &Stats{}
	}
	var ids atomic.Int64
	ids.Store(time.Now().UnixNano() % 1_000_000_000 * 1000)
	var wg sync.WaitGroup
	errs := make(chan error, cfg.Workers)
	var interval time.Duration
	if cfg.Rate > 0 {
		interval = time.Duration(int64(time.Second) * int64(cfg.Workers) / int64(cfg.Rate))
	}
	for w := 0; w < cfg.Workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			g := &gen{db: dbName, rng: rand.New(rand.NewPCG(cfg.Seed, uint64(w))), ids: &ids}
			next := time.Now()
			for ctx.Err() == nil {
				if cfg.Transactions > 0 && st.Transactions.Load() >= cfg.Transactions {
					return
				}
				if interval > 0 {
					next = next.Add(interval)
					if d := time.Until(next); d > 0 {
						select {
						case <-ctx.Done():
							return
						case <-time.After(d):
						}
					}
				}
				stmts := g.txn()
				err := exec(ctx, db, stmts)
				if isRetryable(err) {
					st.Retries.Add(1)
					continue
				}
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					errs <- err
					return
				}
				st.Transactions.Add(1)
				st.Rows.Add(int64(len(stmts)))
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func exec(ctx context.Context, db *sql.DB, stmts []string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	for _, q := range stmts {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

func isRetryable(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205)
}

// gen makes statements for one worker. Ids come from a shared counter so that inserts never
// collide; updates and deletes pick ids near the top of the counter, hitting recent rows.
type gen struct {
	db  string
	rng *rand.Rand
	ids *atomic.Int64
}

func (g *gen) recent() int64 {
	top := g.ids.Load()
	return top - g.rng.Int64N(200)
}

func (g *gen) t(name string) string { return sqlq.Ident(g.db) + "." + sqlq.Ident(name) }

var statuses = []string{"new", "paid", "shipped", "cancelled"}

// txn returns the statements of one transaction: one to four changes.
func (g *gen) txn() []string {
	n := 1 + g.rng.IntN(4)
	out := make([]string, 0, n+2)
	for i := 0; i < n; i++ {
		switch p := g.rng.IntN(100); {
		case p < 40:
			id := g.ids.Add(1)
			out = append(out,
				fmt.Sprintf("INSERT INTO %s (id, name, email, balance, score, updated_at) VALUES (%d, %s, %s, %d.%02d, %g, UTC_TIMESTAMP(6))",
					g.t("customers"), id, sqlq.String(fmt.Sprintf("customer %d ü€😀", id)), g.email(id), g.rng.IntN(100000), g.rng.IntN(100), g.rng.Float64()*1000),
				fmt.Sprintf("INSERT INTO %s (id, customer_id, status, amount, note, payload) VALUES (%d, %d, '%s', %d.%02d, %s, %s)",
					g.t("orders"), id, id, statuses[g.rng.IntN(4)], g.rng.IntN(10000), g.rng.IntN(100), sqlq.String(strings.Repeat("n", g.rng.IntN(200))), g.blob()),
				fmt.Sprintf("INSERT INTO %s (order_id, line, sku, qty, price) VALUES (%d, 1, 'SKU-%d', %d, 9.99), (%d, 2, 'SKU-%d', 65534, 0.01)",
					g.t("order_lines"), id, g.rng.IntN(1000), g.rng.IntN(100), id, g.rng.IntN(1000)))
		case p < 70:
			out = append(out, fmt.Sprintf("UPDATE %s SET balance = balance + 1.25, score = %g, updated_at = UTC_TIMESTAMP(6) WHERE id = %d",
				g.t("customers"), g.rng.Float64(), g.recent()))
		case p < 80:
			out = append(out, fmt.Sprintf("UPDATE %s SET status = '%s', note = NULL WHERE id = %d", g.t("orders"), statuses[g.rng.IntN(4)], g.recent()))
		case p < 88:
			// A primary key change: the row moves to a fresh id.
			out = append(out, fmt.Sprintf("UPDATE %s SET id = %d WHERE id = %d", g.t("orders"), g.ids.Add(1)+500_000_000_000, g.recent()))
		case p < 94:
			out = append(out, fmt.Sprintf("UPDATE %s SET qty = qty + 1, line = line + 10 WHERE order_id = %d AND line < 10", g.t("order_lines"), g.recent()))
		default:
			id := g.recent()
			out = append(out,
				fmt.Sprintf("DELETE FROM %s WHERE order_id = %d", g.t("order_lines"), id),
				fmt.Sprintf("DELETE FROM %s WHERE id = %d", g.t("customers"), id))
		}
	}
	return out
}

func (g *gen) email(id int64) string {
	if g.rng.IntN(5) == 0 {
		return "NULL"
	}
	return sqlq.String(fmt.Sprintf("c%d@example.com", id))
}

func (g *gen) blob() string {
	if g.rng.IntN(3) == 0 {
		return "NULL"
	}
	b := make([]byte, g.rng.IntN(64))
	for i := range b {
		b[i] = byte(g.rng.IntN(256))
	}
	return string(sqlq.AppendBytes(nil, b))
}
