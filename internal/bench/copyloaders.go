package bench

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/vplayer/vplayer/internal/mysqld"
	"github.com/vplayer/vplayer/sqlq"
	"github.com/vplayer/vplayer/workflow"
)

// copyLoader is one way to bring the source's tables to an empty target.
type copyLoader struct {
	name   string
	server *mysqld.Server
	db     *sql.DB
	run    func(ctx context.Context, dst *mysqld.Server) (rss int64, err error)
}

// loaders are the loaders to time, each with its own target, in the order of serverNames;
// srcPos is the source's position after the load.
func (cr *copyRun) loaders(ctx context.Context, srcPos string) []copyLoader {
	loaders := []copyLoader{cr.vplayerLoader(1, srcPos), cr.dumpLoader(2)}
	if cr.withMydumper {
		loaders = append(loaders, cr.mydumperLoader(3, nameMydumper, "mydumper"))
		if cr.o.TargetBinlog {
			loaders = append(loaders, cr.mydumperLoader(4, nameMydumperBinlog, "mydumper-binlog", "--enable-binlog"))
		}
	}
	alone := len(cr.servers) - 1
	return append(loaders, copyLoader{name: nameAlone, server: cr.servers[alone], db: cr.dbs[alone],
		run: aloneLoad(ctx, cr.src(), cr.dbs[alone], filepath.Join(cr.tmp, "alone"))})
}

// vplayerLoader is vplayer's copy into target i, until its record is Running at srcPos.
func (cr *copyRun) vplayerLoader(i int, srcPos string) copyLoader {
	db := cr.dbs[i]
	return copyLoader{name: nameVplayerCopy, server: cr.servers[i], db: db, run: func(ctx context.Context, dst *mysqld.Server) (int64, error) {
		if _, err := db.ExecContext(ctx, "CREATE DATABASE "+dbName); err != nil {
			return 0, err
		}
		c := &cluster{w: cr.w, o: cr.o, tmp: cr.tmp, source: cr.servers[0]}
		v, err := c.startVplayer(ctx, vtarget{name: nameVplayer, cmd: cr.o.Vplayer, server: dst}, "")
		if err != nil {
			return 0, err
		}
		store := workflow.New(db, "_vt")
		if err := v.waitFor(ctx, store, srcPos); err != nil {
			v.stop()
			return 0, err
		}
		for {
			r, err := store.Get(ctx, workflowName)
			if err == nil && r.State == workflow.StateRunning {
				break
			}
			select {
			case <-ctx.Done():
				v.stop()
				return 0, ctx.Err()
			case <-time.After(pollInterval):
			}
		}
		rss, rerr := v.peakRSS()
		if err := v.stop(); err != nil {
			return 0, err
		}
		return rss, rerr
	}}
}

// dumpLoader is mariadb-dump piped into mariadb, into target i.
func (cr *copyRun) dumpLoader(i int) copyLoader {
	src := cr.servers[0]
	return copyLoader{name: nameDump, server: cr.servers[i], db: cr.dbs[i], run: func(ctx context.Context, dst *mysqld.Server) (int64, error) {
		dump := exec.CommandContext(ctx, "mariadb-dump", append(dsnArgs(src), "--single-transaction", "--gtid", "--databases", dbName)...)
		load := exec.CommandContext(ctx, "mariadb", dsnArgs(dst)...)
		pipe, err := dump.StdoutPipe()
		if err != nil {
			return 0, err
		}
		load.Stdin = pipe
		var derr, lerr lockedBuffer
		dump.Stderr, load.Stderr = &derr, &lerr
		if err := load.Start(); err != nil {
			return 0, err
		}
		if err := dump.Run(); err != nil {
			load.Wait()
			return 0, fmt.Errorf("mariadb-dump: %w: %s", err, derr.String())
		}
		if err := load.Wait(); err != nil {
			return 0, fmt.Errorf("mariadb: %w: %s", err, lerr.String())
		}
		return 0, nil
	}}
}

// mydumperLoader is mydumper into directory dir of the run's files, then myloader with loadArgs
// into target i.
func (cr *copyRun) mydumperLoader(i int, name, dir string, loadArgs ...string) copyLoader {
	src, dir := cr.servers[0], filepath.Join(cr.tmp, dir)
	return copyLoader{name: name, server: cr.servers[i], db: cr.dbs[i], run: func(ctx context.Context, dst *mysqld.Server) (int64, error) {
		if out, err := exec.CommandContext(ctx, "mydumper", append(dsnArgs(src), "-t", "4", "-B", dbName, "-o", dir)...).CombinedOutput(); err != nil {
			return 0, fmt.Errorf("mydumper: %w: %s", err, out)
		}
		if out, err := exec.CommandContext(ctx, "myloader", append(append(dsnArgs(dst), "-t", "4", "-d", dir), loadArgs...)...).CombinedOutput(); err != nil {
			return 0, fmt.Errorf("myloader: %w: %s", err, out)
		}
		return 0, nil
	}}
}

// dsnArgs are the client tools' arguments that connect to s as root.
func dsnArgs(s *mysqld.Server) []string {
	return []string{"-h", "127.0.0.1", "-P", strconv.Itoa(s.Port()), "-u", "root"}
}

// aloneLoad returns the target-alone loader (see nameAlone). It writes each table's rows on the source
// into a file of dir with SELECT ... INTO OUTFILE and reads their definitions, both untimed, now;
// the loader then creates each table on the target as the source defines it and loads its file
// with LOAD DATA INFILE in one transaction, as the copy does, every table in its own session at
// once and with unique_checks off, so that InnoDB loads the empty tables in bulk and sorts
// their keys. The servers are local: the target reads the files the source wrote.
func aloneLoad(ctx context.Context, src, db *sql.DB, dir string) func(context.Context, *mysqld.Server) (int64, error) {
	defs := make([]string, len(tables))
	files := make([]string, len(tables))
	prep := func() error {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for i, t := range tables {
			var name string
			if err := src.QueryRowContext(ctx, "SHOW CREATE TABLE "+sqlq.Ident(dbName)+"."+sqlq.Ident(t)).Scan(&name, &defs[i]); err != nil {
				return fmt.Errorf("read the definition of %s: %w", t, err)
			}
			files[i] = filepath.Join(dir, t+".txt")
			if _, err := src.ExecContext(ctx, "SELECT * FROM "+sqlq.Ident(dbName)+"."+sqlq.Ident(t)+" INTO OUTFILE "+sqlq.String(files[i])); err != nil {
				return fmt.Errorf("write the rows of %s into %s: %w", t, files[i], err)
			}
		}
		return nil
	}
	prepErr := prep()
	return func(ctx context.Context, _ *mysqld.Server) (int64, error) {
		if prepErr != nil {
			return 0, prepErr
		}
		if _, err := db.ExecContext(ctx, "CREATE DATABASE "+sqlq.Ident(dbName)); err != nil {
			return 0, err
		}
		g, gctx := errgroup.WithContext(ctx)
		for i := range tables {
			g.Go(func() error {
				conn, err := db.Conn(gctx)
				if err != nil {
					return err
				}
				defer conn.Close()
				for _, q := range []string{"USE " + sqlq.Ident(dbName), defs[i], "SET SESSION unique_checks = 0, foreign_key_checks = 0", "BEGIN",
					"LOAD DATA INFILE " + sqlq.String(files[i]) + " INTO TABLE " + sqlq.Ident(tables[i]), "COMMIT"} {
					if _, err := conn.ExecContext(gctx, q); err != nil {
						return fmt.Errorf("%s: %w", q, err)
					}
				}
				return nil
			})
		}
		return 0, g.Wait()
	}
}

// lockedBuffer collects a process's stderr.
type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}
