package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// backlog is a kind of backlog to catch up.
type backlog struct {
	mode string
	// describe says what one transaction is, for the table's header.
	describe string
	// source returns the generator of the backlog's transactions.
	source func(ctx context.Context, c *cluster) (txnSource, error)
}

var oltpBacklog = backlog{
	mode:     ModeCatchup,
	describe: "oltp_write_only mix: update k by key, update c by key, delete + re-insert of a key, tables chosen at random",
	source: func(context.Context, *cluster) (txnSource, error) {
		return func(g *rowGen, _ int64) []string { return g.oltpWrite() }, nil
	},
}

var insertBacklog = backlog{
	mode:     ModeInsert,
	describe: "inserts only: sysbench oltp_insert, one single-row INSERT per transaction, the table chosen at random",
	source: func(ctx context.Context, c *cluster) (txnSource, error) {
		next := map[string]*atomic.Int64{}
		for _, t := range tables {
			var top int64
			if err := c.src.QueryRowContext(ctx, "SELECT COALESCE(MAX(id), 0) FROM "+qualified(t)).Scan(&top); err != nil {
				return nil, err
			}
			next[t] = &atomic.Int64{}
			next[t].Store(top)
		}
		return func(g *rowGen, _ int64) []string { return g.insert(next) }, nil
	},
}

var hotrowBacklog = backlog{
	mode:     ModeHotrow,
	describe: fmt.Sprintf("hot rows: sysbench oltp_update_non_index, one UPDATE of c by key per transaction, the key one of ids 1..%d of %s", hotRows, tables[0]),
	source: func(context.Context, *cluster) (txnSource, error) {
		return func(g *rowGen, _ int64) []string { return g.hotRow() }, nil
	},
}

// catchup builds one backlog on the source while every applier is stopped, then times each
// applier's catch-up of it, one at a time, and compares every target with the source.
func (c *cluster) catchup(ctx context.Context, b backlog) (*Result, error) {
	n := c.o.transactionsOf(b.mode)
	c.say("\n== %s: a backlog of %d transactions (%s)", b.mode, n, b.describe)
	st, want, err := c.buildBacklog(ctx, b, n)
	if err != nil {
		return nil, err
	}
	r := c.newResult(b.mode)
	r.Workload = Workload{
		Description:  b.describe,
		Generator:    fmt.Sprintf("built-in, %d sessions (sysbench is not used)", generatorWorkers),
		Tables:       len(tables),
		RowsPerTable: c.o.RowsPerTable,
		Transactions: st.Transactions,
		RowChanges:   st.Rows,
	}
	if err := c.timeVplayers(ctx, r, b.mode, want, st); err != nil {
		return r, err
	}
	if err := c.timeNatives(ctx, r, want, st); err != nil {
		return r, err
	}
	r.ratios()
	c.say("  comparing each target with the source...")
	equal, err := c.verify(ctx)
	r.setEqual(equal)
	return r, err
}

// buildBacklog writes n transactions of backlog b on the source, in a binary log file of their
// own, and returns what it wrote and the source's position after them.
func (c *cluster) buildBacklog(ctx context.Context, b backlog, n int) (genStats, string, error) {
	next, err := b.source(ctx, c)
	if err != nil {
		return genStats{}, "", err
	}
	// The backlog starts a binary log file of its own: a dump from a GTID position reads the
	// source's file from its head up to the position (MariaDB 10.11 keeps no GTID index), so
	// without the rotation each applier's catch-up would also time the source reading the
	// backlogs of the modes before this one (0.4 s of the source's CPU for the OLTP backlog
	// before the inserts), and a mode's figures would depend on which modes ran before it.
	if _, err := c.src.ExecContext(ctx, "FLUSH BINARY LOGS"); err != nil {
		return genStats{}, "", fmt.Errorf("rotate the source's binary log: %w", err)
	}
	st, err := generate(ctx, c.src, generatorWorkers, int64(n), c.o.RowsPerTable, seedFor(b.mode), nil, next)
	if err != nil {
		return genStats{}, "", err
	}
	want, err := c.sourcePos(ctx)
	if err != nil {
		return genStats{}, "", err
	}
	c.say("  wrote %d transactions, %d row changes on the source in %.1fs (%.0f/s); source at %s; every applier stopped",
		st.Transactions, st.Rows, st.Elapsed.Seconds(), float64(st.Transactions)/st.Elapsed.Seconds(), want)
	return st, want, nil
}

// timeVplayers times each vplayer target's catch-up to want, in turn (the comparison build first
// with CompareFirst), and adds them to r's Appliers in a fixed order: the build under test's, in
// worker-count order, first.
func (c *cluster) timeVplayers(ctx context.Context, r *Result, mode, want string, st genStats) error {
	ts := c.vtargets()
	order := make([]int, len(ts))
	for i := range order {
		order[i] = i
	}
	if c.o.CompareFirst {
		// The comparison build is last in ts.
		order = append([]int{len(ts) - 1}, order[:len(ts)-1]...)
	}
	timed := make([]Applier, len(ts))
	for _, i := range order {
		t := ts[i]
		if err := c.quiesce(ctx); err != nil {
			return err
		}
		c.say("  timing %s (a separate process; from its start until its record's pos contains %s)...", t.name, want)
		tm, err := c.timeVplayer(ctx, t, mode, want, st)
		if err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		timed[i] = figures(Applier{Name: t.name, ApplyWorkers: t.workers, PeakRSSBytes: tm.rss}, tm, st)
		c.say("    %s", timed[i].line())
		if tm.work != "" {
			c.say("      target per transaction: %s", tm.work)
		}
	}
	r.Appliers = append(r.Appliers, timed...)
	r.CompareFirst = c.o.CompareFirst && len(ts) > 1
	return nil
}

// timeNatives times each native replica's catch-up to want, in turn, and adds them to r's Appliers.
func (c *cluster) timeNatives(ctx context.Context, r *Result, want string, st genStats) error {
	for _, n := range c.natives() {
		if err := c.quiesce(ctx); err != nil {
			return err
		}
		c.say("  timing %s (from START SLAVE until MASTER_GTID_WAIT('%s') returns)...", n.name, want)
		before, err := readWork(ctx, n.db)
		if err != nil {
			return err
		}
		tm, err := n.catchUp(ctx, want, c.sourcePID)
		if err != nil {
			return err
		}
		r.add(Applier{Name: n.name}, tm, st)
		c.say("    %s", r.Appliers[len(r.Appliers)-1].line())
		if after, err := readWork(ctx, n.db); err == nil {
			c.say("      target per transaction: %s", after.perTxn(before, st.Transactions))
		}
	}
	return nil
}

// timing is one applier's catch-up.
type timing struct {
	took time.Duration
	// CPU seconds used during the catch-up by the vplayer process (0 for a native replica), the
	// target server and the source server.
	applierCPU, targetCPU, sourceCPU float64
	rss                              int64 // vplayer's peak RSS; 0 when not measured
	// work is what the target server did per source transaction (its status counters); empty
	// when not read.
	work string
	// retries is vplayer's count of batches run again (see Applier.ApplyRetries); nil when not
	// read.
	retries *int64
}

// timeVplayer runs t's vplayer until it has caught up with want. With a CPU profile, the build
// under test runs in this process instead (the comparison build still runs as a process).
func (c *cluster) timeVplayer(ctx context.Context, t vtarget, mode, want string, st genStats) (timing, error) {
	if c.o.CPUProfile != "" && t.name == c.main().name {
		return c.profileVplayer(ctx, mode, want, st)
	}
	var tm timing
	before, err := readWork(ctx, t.db)
	if err != nil {
		return tm, err
	}
	cpu := startCPU(t.pid, c.sourcePID)
	p, err := c.startVplayer(ctx, t, "")
	if err != nil {
		return tm, err
	}
	if err := p.waitFor(ctx, t.store, want); err != nil {
		p.stop()
		return tm, err
	}
	tm.took = time.Since(p.started)
	used := cpu.stop()
	tm.targetCPU, tm.sourceCPU = used[0], used[1]
	if after, err := readWork(ctx, t.db); err == nil {
		tm.work = after.perTxn(before, st.Transactions)
	}
	if t, err := cpuTime(p.cmd.Process.Pid); err == nil {
		tm.applierCPU = round(t.Seconds(), 2)
	}
	if n, err := p.applyRetries(ctx); err == nil {
		tm.retries = &n
	} else {
		c.say("      (vplayer's retries not read: %v)", err)
	}
	rss, rerr := p.peakRSS()
	if err := p.stop(); err != nil {
		return tm, err
	}
	if rerr != nil {
		return tm, fmt.Errorf("read vplayer's peak RSS: %w", rerr)
	}
	tm.rss = rss
	return tm, nil
}

// seedFor makes each mode's backlog repeatable.
func seedFor(mode string) uint64 {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(mode); i++ {
		h = (h ^ uint64(mode[i])) * 1099511628211
	}
	return h
}
