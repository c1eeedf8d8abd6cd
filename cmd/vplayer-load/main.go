// Command vplayer-load is the docker compose file's load generator: it creates the workload's
// tables on the source and the target (when missing), then writes a steady mix of inserts,
// updates and deletes to the source until interrupted.
//
//	vplayer-load --source 'app@tcp(source:3306)/shop' --target 'vplayer@tcp(target:3306)/shop' --rate 50
//
// VPLAYER_SOURCE_PASSWORD and VPLAYER_TARGET_PASSWORD override the DSNs' passwords.
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/spf13/pflag"

	"github.com/vplayer/vplayer/internal/workload"
	"github.com/vplayer/vplayer/sqlq"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "vplayer-load:", err)
		os.Exit(1)
	}
}

// options are vplayer-load's flags.
type options struct {
	source, target, waitFor string
	rate, workers           int
	schemaOnly              bool
	wait                    time.Duration
}

func newFlags() (*pflag.FlagSet, *options) {
	o := &options{}
	fs := pflag.NewFlagSet("vplayer-load", pflag.ContinueOnError)
	fs.StringVar(&o.source, "source", "", "source DSN with the database, user:pass@tcp(host:port)/db (required)")
	fs.StringVar(&o.target, "target", "", "target DSN with the database: the tables are created there too (optional)")
	fs.IntVar(&o.rate, "rate", 50, "transactions per second over all workers (0: as fast as possible)")
	fs.IntVar(&o.workers, "workers", 2, "concurrent writers")
	fs.BoolVar(&o.schemaOnly, "schema-only", false, "create the tables and exit")
	fs.StringVar(&o.waitFor, "wait-for", "", "before writing, wait until this URL answers 200 (vplayer's /healthz: the workflow runs)")
	fs.DurationVar(&o.wait, "wait", 2*time.Minute, "how long to wait for the servers, and for --wait-for")
	return fs, o
}

func run(args []string) error {
	fs, o := newFlags()
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.source == "" {
		return errors.New("--source is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))

	src, srcDB, err := open("source", o.source, "VPLAYER_SOURCE_PASSWORD", o.wait)
	if err != nil {
		return err
	}
	defer src.Close()
	servers := []*sql.DB{src}
	if o.target != "" {
		dst, dstDB, err := open("target", o.target, "VPLAYER_TARGET_PASSWORD", o.wait)
		if err != nil {
			return err
		}
		defer dst.Close()
		if dstDB != srcDB {
			return fmt.Errorf("--target names database %q, --source %q: use the same name", dstDB, srcDB)
		}
		servers = append(servers, dst)
	}
	for _, db := range servers {
		if err := createSchema(ctx, db, srcDB); err != nil {
			return err
		}
	}
	log.Info("tables ready", "database", srcDB, "tables", workload.Tables)
	if o.schemaOnly {
		return nil
	}
	if o.waitFor != "" {
		if err := waitFor(ctx, o.waitFor, o.wait); err != nil {
			return err
		}
		log.Info("ready", "url", o.waitFor)
	}
	var st workload.Stats
	done := make(chan error, 1)
	go func() {
		done <- workload.Run(ctx, src, srcDB, workload.Config{Workers: o.workers, Rate: o.rate, Seed: uint64(time.Now().UnixNano())}, &st)
	}()
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		select {
		case err := <-done:
			log.Info("stopped", "transactions", st.Transactions.Load())
			return err
		case <-t.C:
			log.Info("load", "transactions", st.Transactions.Load(), "rows", st.Rows.Load(), "retries", st.Retries.Load())
		}
	}
}

// open connects to dsn, waiting up to wait for the server to accept connections.
func open(flag, dsn, passwordEnv string, wait time.Duration) (*sql.DB, string, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil || cfg.DBName == "" {
		return nil, "", fmt.Errorf("--%s is not a DSN with a database, user:pass@tcp(host:port)/db", flag)
	}
	if p, ok := os.LookupEnv(passwordEnv); ok {
		cfg.Passwd = p
	}
	name := cfg.DBName
	cfg.DBName = ""
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("--%s: %w", flag, err)
	}
	db := sql.OpenDB(conn)
	deadline := time.Now().Add(wait)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = db.PingContext(ctx)
		cancel()
		if err == nil {
			return db, name, nil
		}
		if time.Now().After(deadline) {
			db.Close()
			return nil, "", fmt.Errorf("%s %s not reachable within %v: %w", flag, cfg.Addr, wait, err)
		}
		time.Sleep(time.Second)
	}
}

// waitFor polls url until it answers 200, for at most wait.
func waitFor(ctx context.Context, url string, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	client := http.Client{Timeout: 2 * time.Second}
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("--wait-for %s: no 200 within %v", url, wait)
		case <-time.After(time.Second):
		}
	}
}

// createSchema creates the database and the workload's tables that do not exist yet.
func createSchema(ctx context.Context, db *sql.DB, name string) error {
	if _, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+sqlq.Ident(name)); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	for _, q := range workload.Schema() {
		q = strings.Replace(q, "CREATE TABLE ", "CREATE TABLE IF NOT EXISTS "+sqlq.Ident(name)+".", 1)
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create table in %s: %w", name, err)
		}
	}
	return nil
}
