package e2e

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/metrics"
	"github.com/vplayer/vplayer/workflow"
)

// lagSample is one reading of the stream's lag, and whether a transaction the source had
// committed before the reading was still not committed on the target after it.
type lagSample struct {
	at      time.Time
	lag     time.Duration
	pending bool
}

// TestLag: under a steady load, the target blocked for 5s by a row lock makes lag rise to at least
// 5s, growing all along the block; after the release it falls under 1s; and no reading taken while
// a transaction was pending is zero.
func TestLag(t *testing.T) {
	const block = 5*time.Second + 300*time.Millisecond // the first blocked transaction commits a moment after the lock
	e := newEnv(t)
	for _, db := range []*sql.DB{e.src, e.dst} {
		if _, err := db.ExecContext(e.ctx(), "CREATE TABLE kv (id int NOT NULL PRIMARY KEY, v bigint NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(e.ctx(), "CREATE TABLE events (id bigint NOT NULL AUTO_INCREMENT PRIMARY KEY, at datetime(6) NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(e.ctx(), "INSERT INTO kv VALUES (1, 0)"); err != nil {
			t.Fatal(err)
		}
	}
	cfg := e.streamConfig()
	col := metrics.New(metrics.Options{Workflow: e.workflow, RelayLogMaxBytes: cfg.RelayLogMaxBytes, RelayLogMaxItems: cfg.RelayLogMaxItems})
	cfg.OnStart, cfg.OnError, cfg.OnState = col.OnStart, col.OnError, col.OnState
	stop := e.runStream(cfg)
	e.waitRunning(30 * time.Second)

	// The load: about 100 transactions a second, each an insert and an update of the locked row.
	ctx, cancelLoad := context.WithCancel(e.ctx())
	var wg sync.WaitGroup
	var loadErr error
	var committed int
	wg.Go(func() {
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
					loadErr = err
				}
				return
			}
			committed++
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
	})

	// The sampler: every 100ms, the source's position, then lag, then the target's recorded
	// position; a sample is pending when the target had not committed what the source had.
	store := workflow.New(e.dstPool, "_vt")
	var samples []lagSample
	sample := func() lagSample {
		t.Helper()
		src := e.sourcePos()
		at := time.Now()
		lag := col.Snapshot().Lag
		rec, err := store.Get(e.ctx(), e.workflow)
		if err != nil {
			t.Fatal(err)
		}
		dst, err := binlog.ParsePosition(rec.Pos, "mariadb")
		if err != nil {
			t.Fatal(err)
		}
		s := lagSample{at: at, lag: lag, pending: !dst.Contains(src)}
		samples = append(samples, s)
		return s
	}
	every := func(d time.Duration, f func(lagSample) bool) {
		t.Helper()
		end := time.Now().Add(d)
		for time.Now().Before(end) {
			if f(sample()) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	every(time.Second, func(lagSample) bool { return false }) // warm up
	release := e.lockRow("SELECT * FROM " + e.db + ".kv WHERE id = 1 FOR UPDATE")
	locked := time.Now()
	var maxLag time.Duration
	during := func(s lagSample) bool {
		maxLag = max(maxLag, s.lag)
		// Lag grows with the block: the oldest pending transaction is at most a few
		// milliseconds younger than the lock, and its commit time is rounded down.
		if since := s.at.Sub(locked); since > 500*time.Millisecond && s.lag < since-300*time.Millisecond {
			t.Errorf("%v into the block lag read %v, want it to grow with the block", since.Round(time.Millisecond), s.lag)
		}
		return false
	}
	every(block, during)
	// The loop's last sample may start up to one sampling round before the block is over; this one
	// is taken with the lock held for at least the whole block.
	during(sample())
	released := time.Now()
	release()
	var fell time.Duration
	every(15*time.Second, func(s lagSample) bool {
		if s.lag < time.Second {
			fell = s.at.Sub(released)
			return true
		}
		return false
	})
	every(time.Second, func(lagSample) bool { return false }) // caught up, under load
	cancelLoad()
	wg.Wait()
	if loadErr != nil {
		t.Fatal(loadErr)
	}

	t.Logf("%d transactions; %d samples; lag peaked at %v during the %v block; fell under 1s %v after the release",
		committed, len(samples), maxLag.Round(time.Millisecond), block, fell.Round(time.Millisecond))
	if maxLag < 5*time.Second {
		t.Errorf("lag peaked at %v with the target blocked %v, want at least 5s", maxLag, block)
	}
	if fell == 0 {
		t.Errorf("lag did not fall under 1s within 15s of the release")
	}
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
	if pending < 30 {
		t.Errorf("only %d samples had a transaction pending, want most of the 5s block at least", pending)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
