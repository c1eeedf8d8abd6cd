package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Lag is measured the same way for every applier, from outside it. While the source writes the
// OLTP mix (at a fixed rate in the lag mode, as fast as its sessions can in the lagfull mode), a
// separate connection writes the current time, in microseconds, into the one row of bench_stamp
// every 100ms. Another connection reads that row on the target every 10ms. A stamp's lag is the time at which the target first shows it (or a later stamp: the row
// only moves forward) minus the time it was written: how long a write on the source takes to be
// visible on the target, the source's own commit included. p50 and p99 are taken over every stamp
// of the run; after the source stops, the sampler runs on until the last stamp is seen, so a
// target that falls behind is charged for all of it. The sampling period bounds the error at
// 10ms.

// Periods of the stamp writer and of the sampler.
const (
	stampEvery  = 100 * time.Millisecond
	sampleEvery = 10 * time.Millisecond
	// warmupTransactions are written and caught up before each applier's measurement.
	warmupTransactions = 200
	// drainTimeout bounds the wait for the last stamp once the source has stopped.
	drainTimeout = 5 * time.Minute
)

// liveApplier is an applier run live in the lag modes.
type liveApplier struct {
	name    string
	workers int // vplayer's --apply-workers; 0 for its default and for a native replica
	db      *sql.DB
	// start starts the applier and returns once it has caught up with want (untimed).
	start func(ctx context.Context, want string) error
	// stop stops it and returns its peak RSS, when known.
	stop func() (int64, error)
}

func (c *cluster) liveAppliers() []liveApplier {
	var out []liveApplier
	for _, t := range c.vtargets() {
		var v *vplayerProc
		out = append(out, liveApplier{
			name:    t.name,
			workers: t.workers,
			db:      t.db,
			start: func(ctx context.Context, want string) error {
				var err error
				if v, err = c.startVplayer(ctx, t, ""); err != nil {
					return err
				}
				return v.waitFor(ctx, t.store, want)
			},
			stop: func() (int64, error) {
				if v == nil {
					return 0, nil
				}
				rss, rerr := v.peakRSS()
				return rss, errors.Join(v.stop(), rerr)
			},
		})
	}
	for _, n := range c.natives() {
		out = append(out, liveApplier{
			name: n.name,
			db:   n.db,
			start: func(ctx context.Context, want string) error {
				if err := n.configure(ctx); err != nil {
					return err
				}
				if err := n.start(ctx); err != nil {
					return err
				}
				return n.waitFor(ctx, want)
			},
			stop: func() (int64, error) { return 0, n.stop(context.Background()) },
		})
	}
	return out
}

// lagLoad is how the source writes in a lag mode: at rate transactions/s from
// generatorWorkers sessions (lag), or as fast as clients sessions can (lagfull, rate 0).
type lagLoad struct {
	rate, clients int
	duration      time.Duration
}

func (c *cluster) lagLoadOf(mode string) lagLoad {
	if mode == ModeLagFull {
		return lagLoad{rate: 0, clients: c.o.Clients, duration: c.o.durationOf(mode)}
	}
	return lagLoad{rate: c.o.Rate, clients: generatorWorkers, duration: c.o.durationOf(mode)}
}

// describe is how the source writes, for the progress lines and the table's header.
func (l lagLoad) describe() string {
	if l.rate == 0 {
		return fmt.Sprintf("as fast as %d sessions can (no pacing) for %v", l.clients, l.duration)
	}
	return fmt.Sprintf("%d transactions/s from %d sessions for %v", l.rate, l.clients, l.duration)
}

// lag measures each applier's lag in turn while the source writes as mode says (lag: at the
// configured rate; lagfull: unpaced), then lets every applier catch up and compares the targets
// with the source.
func (c *cluster) lag(ctx context.Context, mode string) (*Result, error) {
	load := c.lagLoadOf(mode)
	c.say("\n== %s: the source writes the oltp_write_only mix %s while each applier runs, one at a time", mode, load.describe())
	r := c.newResult(mode)
	r.Workload = Workload{
		Description:  oltpBacklog.describe,
		Generator:    fmt.Sprintf("built-in, %d sessions (sysbench is not used)", load.clients),
		Tables:       len(tables),
		RowsPerTable: c.o.RowsPerTable,
		Rate:         load.rate,
		Clients:      load.clients,
		Seconds:      load.duration.Seconds(),
	}
	for i, a := range c.liveAppliers() {
		res, st, err := c.lagPhase(ctx, a, load, seedFor(mode)+uint64(i))
		if err != nil {
			return r, fmt.Errorf("lag of %s: %w", a.name, err)
		}
		r.Appliers = append(r.Appliers, res)
		r.Workload.Transactions += st.Transactions
		r.Workload.RowChanges += st.Rows
		c.say("    %s", res.line())
	}
	c.say("  letting every applier catch up, then comparing each target with the source...")
	if err := c.catchUpAll(ctx, ""); err != nil {
		return r, err
	}
	equal, err := c.verify(ctx)
	r.setEqual(equal)
	return r, err
}

// lagPhase runs one applier live under the workload and measures its stamps' lag.
func (c *cluster) lagPhase(ctx context.Context, a liveApplier, load lagLoad, seed uint64) (Applier, genStats, error) {
	res := Applier{Name: a.name, ApplyWorkers: a.workers}
	oltp := func(g *rowGen, _ int64) []string { return g.oltpWrite() }
	// Warm up: transactions on every table, caught up before the clock starts, so that no
	// applier pays for opening tables or loading their definitions while it is measured.
	if _, err := generate(ctx, c.src, generatorWorkers, warmupTransactions, c.o.RowsPerTable, seed^1, nil, oltp); err != nil {
		return res, genStats{}, err
	}
	want, err := c.sourcePos(ctx)
	if err != nil {
		return res, genStats{}, err
	}
	c.say("  %s: catching up first (untimed, with %d warm-up transactions), then the source writes %s...", a.name, warmupTransactions, load.describe())
	if err := a.start(ctx, want); err != nil {
		a.stop()
		return res, genStats{}, err
	}
	// Each applier caught up what the source wrote while the ones before it were measured (a
	// minute's worth for the third); measured at once, it would share the disk with its target's
	// write-back of that, and the source's commits with it.
	if err := c.quiesce(ctx); err != nil {
		a.stop()
		return res, genStats{}, err
	}
	sctx, stopSampler := context.WithCancel(ctx)
	smp := &sampler{}
	sampled := make(chan error, 1)
	go func() { sampled <- smp.run(sctx, a.db) }()

	// What the target did per source transaction while the source wrote: with an applier that
	// commits several source transactions at once, Com_commit says how many per commit.
	before, werr := readWork(ctx, a.db)
	wctx, stopStamps := context.WithCancel(ctx)
	stamped := make(chan stampResult, 1)
	go func() { stamped <- writeStamps(wctx, c.src) }()
	st, genErr := generate(ctx, c.src, load.clients, 0, c.o.RowsPerTable, seed, &pace{rate: load.rate, duration: load.duration}, oltp)
	stopStamps()
	sr := <-stamped
	err = errors.Join(genErr, sr.err)
	if err == nil && len(sr.stamps) == 0 {
		err = errors.New("no stamp was written")
	}
	if err == nil {
		err = smp.waitFor(ctx, sr.stamps[len(sr.stamps)-1], max(drainTimeout, 5*load.duration))
	}
	stopSampler()
	if serr := <-sampled; err == nil {
		err = serr
	}
	if err == nil && werr == nil {
		if after, werr := readWork(ctx, a.db); werr == nil {
			c.say("    %s: target per transaction: %s", a.name, after.perTxn(before, st.Transactions+int64(len(sr.stamps))))
		}
	}
	rss, stopErr := a.stop()
	if err == nil {
		err = stopErr
	}
	if err != nil {
		return res, st, err
	}
	delays := stampDelays(sr.stamps, smp.snapshot())
	slices.Sort(delays)
	res.Stamps = len(delays)
	res.LagP50Ms = ms(percentile(delays, 50))
	res.LagP99Ms = ms(percentile(delays, 99))
	res.LagMaxMs = ms(percentile(delays, 100))
	res.SourceRate = round(float64(st.Transactions)/st.Elapsed.Seconds(), 0)
	slices.Sort(sr.commits)
	res.SourceCommitP99Ms = ms(percentile(sr.commits, 99))
	res.PeakRSSBytes = rss
	return res, st, nil
}

func ms(d time.Duration) float64 { return round(float64(d)/float64(time.Millisecond), 1) }

type stampResult struct {
	stamps []int64 // unix microseconds, ascending
	// commits are how long each stamp's write took to commit on the source: part of its lag
	// that no applier can remove.
	commits []time.Duration
	err     error
}

// writeStamps writes the time into the stamp row every stampEvery until ctx ends, and returns
// the values written.
func writeStamps(ctx context.Context, db *sql.DB) stampResult {
	var r stampResult
	conn, err := db.Conn(ctx)
	if err != nil {
		r.err = err
		return r
	}
	defer conn.Close()
	tick := time.NewTicker(stampEvery)
	defer tick.Stop()
	q := "UPDATE " + qualified(stampTable) + " SET ts = ? WHERE id = 1"
	for {
		now := time.Now()
		v := now.UnixMicro()
		if _, err := conn.ExecContext(ctx, q, v); err != nil {
			if ctx.Err() == nil {
				r.err = fmt.Errorf("write stamp: %w", err)
			}
			return r
		}
		r.stamps = append(r.stamps, v)
		r.commits = append(r.commits, time.Since(now))
		select {
		case <-ctx.Done():
			return r
		case <-tick.C:
		}
	}
}

// sample is a value of the stamp row seen on the target, and when (unix microseconds).
type sample struct{ at, seen int64 }

// sampler reads the stamp row of a target every sampleEvery, keeping each change.
type sampler struct {
	mu      sync.Mutex
	samples []sample
	latest  atomic.Int64
}

func (s *sampler) run(ctx context.Context, db *sql.DB) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	q := "SELECT ts FROM " + qualified(stampTable) + " WHERE id = 1"
	for {
		var v int64
		if err := conn.QueryRowContext(ctx, q).Scan(&v); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("read stamp: %w", err)
		}
		at := time.Now().UnixMicro()
		if v > s.latest.Load() {
			s.mu.Lock()
			s.samples = append(s.samples, sample{at: at, seen: v})
			s.mu.Unlock()
			s.latest.Store(v)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// waitFor returns once the target has shown stamp v.
func (s *sampler) waitFor(ctx context.Context, v int64, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	for s.latest.Load() < v {
		select {
		case <-ctx.Done():
			return fmt.Errorf("the target did not show the last stamp within %v: %w", timeout, ctx.Err())
		case <-tick.C:
		}
	}
	return nil
}

func (s *sampler) snapshot() []sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.samples)
}

// stampDelays returns, for each stamp written (ascending), the time from its writing to the
// first sample that shows it or a later stamp. Samples are in time order with ascending values;
// stamps no sample shows are left out.
func stampDelays(stamps []int64, samples []sample) []time.Duration {
	out := make([]time.Duration, 0, len(stamps))
	j := 0
	for _, s := range stamps {
		for j < len(samples) && samples[j].seen < s {
			j++
		}
		if j == len(samples) {
			break
		}
		out = append(out, time.Duration(max(samples[j].at-s, 0))*time.Microsecond)
	}
	return out
}

// percentile returns the nearest-rank p-th percentile (0 < p <= 100) of sorted durations, 0 for
// none.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(float64(len(sorted))*p/100)) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}
