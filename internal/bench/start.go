package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/vplayer/vplayer/internal/mysqld"
	"github.com/vplayer/vplayer/workflow"
)

// startCluster starts the servers in parallel, with identical settings, creates the schema and
// points the native replicas at the source.
func startCluster(ctx context.Context, w io.Writer, o Options) (_ *cluster, err error) {
	c := &cluster{w: w, o: o}
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	if c.tmp, err = os.MkdirTemp("", "vplayer-bench-"); err != nil {
		return nil, err
	}
	if err := c.startServers(ctx); err != nil {
		return nil, err
	}
	if c.source.Flavor() != mysqld.FlavorMariaDB {
		return nil, fmt.Errorf("the benchmark's native replicas need MariaDB; %s is %s", c.source.Version(), c.source.Flavor())
	}
	if err := c.openPools(ctx); err != nil {
		return nil, err
	}
	if err := c.prepare(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// serverSpec is a server to start: its options, and where the cluster keeps it.
type serverSpec struct {
	s    **mysqld.Server
	opts mysqld.Options
}

// serverSpecs lays the cluster's servers out: it fills in its vplayer targets (but their
// servers) and returns every server to start, the source first, with the vplayer targets' names.
func (c *cluster) serverSpecs() (specs []serverSpec, names []string) {
	o := c.o
	specs = []serverSpec{{&c.source, sourceOptions("bench-source", sourceID, o.BufferPool)}}
	c.vts = make([]vtarget, len(o.workerCounts()))
	for i, n := range o.workerCounts() {
		c.vts[i] = vtarget{name: vplayerName(n), cmd: o.Vplayer, workers: n}
		specs = append(specs, serverSpec{&c.vts[i].server, targetOptions(vplayerServerName(n), vplayerServerID(i), o.BufferPool)})
		names = append(names, c.vts[i].name+" target")
	}
	specs = append(specs,
		serverSpec{&c.single, targetOptions("bench-native1", single1ID, o.BufferPool)},
		serverSpec{&c.parallel, targetOptions("bench-native4", parallelID, o.BufferPool)})
	if len(o.CompareVplayer) > 0 {
		c.cmp = &vtarget{name: compareName(o.CompareVplayer), cmd: o.CompareVplayer}
		specs = append(specs, serverSpec{&c.cmp.server, targetOptions("bench-compare", compareID, o.BufferPool)})
		names = append(names, "comparison vplayer target")
	}
	return specs, names
}

// startServers starts every server of the cluster (serverSpecs) at once and waits for them all.
func (c *cluster) startServers(ctx context.Context) error {
	bin, err := mysqld.Find()
	if err != nil {
		return err
	}
	specs, names := c.serverSpecs()
	c.say("Starting %d servers from %s: source, %s, 2 native replicas; every target with the same settings", len(specs), bin, strings.Join(names, ", "))
	var wg sync.WaitGroup
	errs := make([]error, len(specs))
	for i, sp := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			*sp.s, errs[i] = mysqld.Start(ctx, sp.opts)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("start servers: %w", err)
	}
	c.say("  source %s (%s), native replicas %s and %s", c.source.Addr(), c.source.Version(), c.single.Addr(), c.parallel.Addr())
	for _, t := range c.vtargets() {
		c.say("  %s's target %s", t.name, t.server.Addr())
	}
	return nil
}

// openPools opens every server's pool and reads its process id, and gives each vplayer target
// its workflow store.
func (c *cluster) openPools(ctx context.Context) error {
	var err error
	for _, p := range []struct {
		db  **sql.DB
		pid *int
		s   *mysqld.Server
	}{{&c.src, &c.sourcePID, c.source}, {&c.sdst, &c.singlePID, c.single}, {&c.pdst, &c.parallelPID, c.parallel}} {
		if *p.db, *p.pid, err = openServer(ctx, p.s); err != nil {
			return err
		}
	}
	vts := make([]*vtarget, 0, len(c.vts)+1)
	for i := range c.vts {
		vts = append(vts, &c.vts[i])
	}
	if c.cmp != nil {
		vts = append(vts, c.cmp)
	}
	for _, t := range vts {
		if t.db, t.pid, err = openServer(ctx, t.server); err != nil {
			return err
		}
		t.store = workflow.New(t.db, "_vt")
	}
	return nil
}

// prepare reads the servers' settings, points the native replicas at the source, creates the
// schema and records the source's position after it, where vplayer starts.
func (c *cluster) prepare(ctx context.Context) error {
	targets := map[string]*sql.DB{nameSingle: c.sdst, nameParallel: c.pdst}
	for _, t := range c.vtargets() {
		targets[t.name] = t.db
	}
	var err error
	if c.settings, err = settingsOf(ctx, c.src, targets); err != nil {
		return err
	}
	c.say("  %s", c.settings.line())
	for _, n := range c.natives() {
		if err := n.server.ReplicateFrom(ctx, c.source, ""); err != nil {
			return err
		}
	}
	// The natives will replicate the schema from the source's binlog; vplayer's targets get it
	// directly (vplayer ignores DDL by default), and vplayer starts after it.
	for _, t := range append([]*sql.DB{c.src}, dbs(c.vtargets())...) {
		if err := createSchema(ctx, t); err != nil {
			return err
		}
	}
	if c.startPos, err = c.source.GTIDPos(ctx); err != nil {
		return err
	}
	return nil
}

// openServer opens s's pool (open) and reads its process id.
func openServer(ctx context.Context, s *mysqld.Server) (*sql.DB, int, error) {
	db, err := open(s)
	if err != nil {
		return nil, 0, err
	}
	pid, err := serverPID(ctx, db)
	if err != nil {
		db.Close()
		return nil, 0, fmt.Errorf("read a server's process id: %w", err)
	}
	return db, pid, nil
}

// The servers' settings are what an operator who tuned nothing runs: MariaDB's defaults (the
// redo log flushed at every commit among them) but for what replication and durability need,
// and a buffer pool that holds the working set. Every target, vplayer's and the native
// replicas', runs with targetOptions, and so without a binary log: a stock replica has none, and
// neither applier needs one. The source has its binary log, in the row format vplayer reads, and
// synced at every commit (sync_binlog=1) so that a crash of the source loses nothing its
// replicas have.

// sourceOptions are the source's settings: targetOptions with the binary log.
func sourceOptions(name string, id uint32, bufferPool string) mysqld.Options {
	o := targetOptions(name, id, bufferPool)
	o.Binlog = true // log_bin, binlog_format=ROW, binlog_row_metadata=FULL (and log_slave_updates)
	return o
}

// targetOptions are every target's settings, the same for all but the name and id.
func targetOptions(name string, id uint32, bufferPool string) mysqld.Options {
	return mysqld.Options{
		Name:        name,
		ServerID:    id,
		Durable:     true, // innodb_flush_log_at_trx_commit=1, MariaDB's default (sync_binlog=1 is inert here)
		LogFileSize: stockLogFileSize,
		ExtraArgs: []string{
			"--innodb-buffer-pool-size=" + bufferPool,
			"--max-connections=500",
		},
	}
}

// copyTargetOptions are the copy mode's targets: targetOptions, with binlog a binary log synced
// at every commit (and log_slave_updates), as on a target with replicas of its own.
func copyTargetOptions(name string, id uint32, bufferPool string, binlog bool) mysqld.Options {
	o := targetOptions(name, id, bufferPool)
	o.Binlog = binlog
	return o
}
