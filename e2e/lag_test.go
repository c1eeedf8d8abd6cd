package e2e

import (
	"context"
	"database/sql"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/metrics"
	"github.com/vplayer/vplayer/workflow"
)

// receiveWithin is how long the sampler gives the reader to receive what the source committed
// before it reads lag: lag counts only what vplayer received (SPEC 9), and a transaction the
// source committed an instant before the reading may still be on its way.
const receiveWithin = 50 * time.Millisecond

// lagSample is one reading of the stream's lag, and whether a transaction the source had
// committed before the reading (receiveWithin before it) was still not committed on the target
// after it.
type lagSample struct {
	at      time.Time
	lag     time.Duration
	pending bool
	hold    string // the kind of the hold in force at the reading, "" when none
}

// lagRun is a stream under a steady load of about 100 transactions a second, each an insert and
// an update of one row of kv, and a sampler of its lag.
type lagRun struct {
	e       *env
	col     *metrics.Collector
	store   *workflow.Store
	samples []lagSample

	cancelLoad context.CancelFunc
	wg         sync.WaitGroup
	loadErr    error
	committed  int
	stop       func() error
}

func newLagRun(t *testing.T) *lagRun {
	e := newEnv(t)
	for _, db := range []*sql.DB{e.src, e.dst} {
		for _, q := range []string{
			"CREATE TABLE kv (id int NOT NULL PRIMARY KEY, v bigint NOT NULL)",
			"CREATE TABLE events (id bigint NOT NULL AUTO_INCREMENT PRIMARY KEY, at datetime(6) NOT NULL)",
			"INSERT INTO kv VALUES (1, 0)",
		} {
			if _, err := db.ExecContext(e.ctx(), q); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg := e.streamConfig()
	r := &lagRun{e: e, store: workflow.New(e.dstPool, "_vt")}
	r.col = metrics.New(metrics.Options{Workflow: e.workflow, RelayLogMaxBytes: cfg.RelayLogMaxBytes, RelayLogMaxItems: cfg.RelayLogMaxItems})
	cfg.OnStart, cfg.OnError, cfg.OnState = r.col.OnStart, r.col.OnError, r.col.OnState
	r.stop = e.runStream(cfg)
	e.waitRunning(30 * time.Second)

	ctx, cancel := context.WithCancel(e.ctx())
	r.cancelLoad = cancel
	r.wg.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			tx, err := e.src.BeginTx(ctx, nil)
			if err == nil {
				_, err = tx.ExecContext(ctx, "INSERT INTO events (at) VALUES (NOW(6))")
				if err == nil {
					_, err = tx.ExecContext(ctx, "UPDATE kv SET v = v + 1 WHERE id = 1")
				}
				if err == nil {
					err = tx.Commit()
				} else {
					tx.Rollback()
				}
			}
			if err != nil {
				if ctx.Err() == nil {
					r.loadErr = err
				}
				return
			}
			r.committed++
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
	})
	return r
}

// endLoad stops the load and fails the test if it failed.
func (r *lagRun) endLoad(t *testing.T) {
	r.cancelLoad()
	r.wg.Wait()
	if r.loadErr != nil {
		t.Fatal(r.loadErr)
	}
}

// sample reads the source's position, receiveWithin later the lag and the hold, then the
// target's recorded position.
func (r *lagRun) sample(t *testing.T) lagSample {
	t.Helper()
	src := r.e.sourcePos()
	time.Sleep(receiveWithin)
	at := time.Now()
	snap := r.col.Snapshot()
	rec, err := r.store.Get(r.e.ctx(), r.e.workflow)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := binlog.ParsePosition(rec.Pos, "mariadb")
	if err != nil {
		t.Fatal(err)
	}
	s := lagSample{at: at, lag: snap.Lag, pending: !dst.Contains(src), hold: snap.Hold}
	r.samples = append(r.samples, s)
	return s
}

// every samples about every 100ms for d, until f returns true, and returns the samples taken.
func (r *lagRun) every(t *testing.T, d time.Duration, f func(lagSample) bool) []lagSample {
	t.Helper()
	first := len(r.samples)
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if f(r.sample(t)) {
			break
		}
	}
	return r.samples[first:]
}

// caughtUp checks that samples of a caught-up stream read 0 most of the time (otherwise the
// applier is between a fetch and its commit, a few milliseconds of each 10) and never come near
// the half second to a second that whole-second commit times alone would read, and logs how
// many read 0 and the highest readings.
func caughtUp(t *testing.T, when string, samples []lagSample) {
	t.Helper()
	if len(samples) < 10 {
		t.Fatalf("%s: %d readings, want at least 10", when, len(samples))
	}
	zero := 0
	lags := make([]time.Duration, 0, len(samples))
	for _, s := range samples {
		if s.lag == 0 {
			zero++
		}
		lags = append(lags, s.lag)
	}
	slices.Sort(lags)
	highest := lags[len(lags)-1]
	t.Logf("%s: %d of %d readings 0; p90 %v, max %v", when, zero, len(samples),
		lags[len(lags)*9/10].Round(time.Microsecond), highest.Round(time.Microsecond))
	if zero*2 <= len(samples) {
		t.Errorf("%s: %d of %d readings 0, want most", when, zero, len(samples))
	}
	if highest >= 300*time.Millisecond {
		t.Errorf("%s: lag read up to %v, want under 300ms", when, highest)
	}
}

// noZeroWhilePending checks that no reading taken while a transaction was pending is 0.
func noZeroWhilePending(t *testing.T, samples []lagSample) int {
	t.Helper()
	pending, minPending := 0, time.Duration(-1)
	for _, s := range samples {
		if !s.pending {
			continue
		}
		pending++
		if minPending < 0 || s.lag < minPending {
			minPending = s.lag
		}
		if s.lag <= 0 {
			t.Errorf("lag read %v at %v while a transaction was pending", s.lag, s.at.Format("15:04:05.000"))
		}
	}
	t.Logf("%d samples with a transaction pending, lowest lag among them %v", pending, minPending)
	return pending
}

// TestLag: under a steady load, a caught-up stream reads lag 0 most of the time; the target
// blocked for 5s by a row lock makes lag rise to at least 5s, growing all along the block; after
// the release it falls back to 0; and no reading taken while a transaction was pending is zero.
func TestLag(t *testing.T) {
	const block = 5*time.Second + 300*time.Millisecond // the first blocked transaction commits a moment after the lock
	r := newLagRun(t)
	e := r.e

	r.every(t, time.Second, func(lagSample) bool { return false }) // warm up
	caughtUp(t, "caught up under load, before the block", r.every(t, 3*time.Second, func(lagSample) bool { return false }))

	release := e.lockRow("SELECT * FROM " + e.db + ".kv WHERE id = 1 FOR UPDATE")
	locked := time.Now()
	var maxLag time.Duration
	during := func(s lagSample) bool {
		maxLag = max(maxLag, s.lag)
		// Lag grows with the block: the oldest pending transaction is at most a few
		// milliseconds younger than the lock.
		if since := s.at.Sub(locked); since > 500*time.Millisecond && s.lag < since-300*time.Millisecond {
			t.Errorf("%v into the block lag read %v, want it to grow with the block", since.Round(time.Millisecond), s.lag)
		}
		return false
	}
	r.every(t, block, during)
	// The loop's last sample may start up to one sampling round before the block is over; this one
	// is taken with the lock held for at least the whole block.
	during(r.sample(t))
	released := time.Now()
	release()
	var fell time.Duration
	r.every(t, 15*time.Second, func(s lagSample) bool {
		if s.lag == 0 {
			fell = s.at.Sub(released)
			return true
		}
		return false
	})
	r.every(t, time.Second, func(lagSample) bool { return false }) // the backlog's last commits
	caughtUp(t, "caught up under load, after the block", r.every(t, 3*time.Second, func(lagSample) bool { return false }))
	r.endLoad(t)

	t.Logf("%d transactions; %d samples; lag peaked at %v during the %v block; read 0 again %v after the release",
		r.committed, len(r.samples), maxLag.Round(time.Millisecond), block, fell.Round(time.Millisecond))
	if maxLag < 5*time.Second {
		t.Errorf("lag peaked at %v with the target blocked %v, want at least 5s", maxLag, block)
	}
	if fell == 0 {
		t.Errorf("lag did not read 0 within 15s of the release")
	}
	if pending := noZeroWhilePending(t, r.samples); pending < 30 {
		t.Errorf("only %d samples had a transaction pending, want most of the 5s block at least", pending)
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
}

// TestLag_throttled: a stream held on purpose (vplayer throttle) under a steady load keeps the
// events it received in its relay log; lag grows all along the hold from the moment it began,
// never reading 0, and falls back to 0 once the throttle ends.
func TestLag_throttled(t *testing.T) {
	const hold = 4 * time.Second
	r := newLagRun(t)
	e := r.e

	r.every(t, time.Second, func(lagSample) bool { return false }) // warm up
	caughtUp(t, "caught up under load, before the throttle", r.every(t, 2*time.Second, func(lagSample) bool { return false }))

	if err := r.store.Throttle(e.ctx(), e.workflow, time.Minute, "e2e lag"); err != nil {
		t.Fatal(err)
	}
	var heldAt time.Time
	r.every(t, 5*time.Second, func(s lagSample) bool {
		if s.hold != "" {
			heldAt = s.at
		}
		return !heldAt.IsZero()
	})
	if heldAt.IsZero() {
		t.Fatal("the stream was not held within 5s of the throttle")
	}
	var maxLag time.Duration
	held := r.every(t, hold, func(s lagSample) bool {
		maxLag = max(maxLag, s.lag)
		since := s.at.Sub(heldAt)
		// The hold began before it was seen (give or take the transaction it let end), at most
		// a second after the last commit time received: lag is at least the time since it was
		// seen, at most a second and a sampling round more.
		if s.lag < since-50*time.Millisecond || s.lag > since+1500*time.Millisecond {
			t.Errorf("%v into the hold lag read %v, want it to grow with the hold (between %v and %v)",
				since.Round(time.Millisecond), s.lag, since.Round(time.Millisecond), (since + 1500*time.Millisecond).Round(time.Millisecond))
		}
		return false
	})
	if err := r.store.Unthrottle(e.ctx(), e.workflow); err != nil {
		t.Fatal(err)
	}
	unthrottled := time.Now()
	var fell time.Duration
	r.every(t, 15*time.Second, func(s lagSample) bool {
		if s.lag == 0 {
			fell = s.at.Sub(unthrottled)
			return true
		}
		return false
	})
	r.every(t, time.Second, func(lagSample) bool { return false }) // the backlog's last commits
	caughtUp(t, "caught up under load, after the throttle", r.every(t, 2*time.Second, func(lagSample) bool { return false }))
	r.endLoad(t)

	t.Logf("%d transactions; held %v; lag peaked at %v; read 0 again %v after vplayer unthrottle",
		r.committed, hold, maxLag.Round(time.Millisecond), fell.Round(time.Millisecond))
	for _, s := range held {
		if s.lag <= 0 || !s.pending || s.hold == "" {
			t.Errorf("held, at %v: lag %v, pending %v, hold %q; want lag above 0 while a transaction waits in the hold", s.at.Format("15:04:05.000"), s.lag, s.pending, s.hold)
		}
	}
	if maxLag < hold {
		t.Errorf("lag peaked at %v over a hold of %v, want at least the hold", maxLag, hold)
	}
	if fell == 0 {
		t.Errorf("lag did not read 0 within 15s of vplayer unthrottle")
	}
	noZeroWhilePending(t, r.samples)
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
}
