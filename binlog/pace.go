package binlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
)

// MaxHeartbeatPeriod is the longest heartbeat period the reader adapts to when a source sends
// heartbeats less often than asked (Dolt sends one every 30s whatever the replica asks). A
// source silent for three such periods and a second is taken for a dead connection.
const MaxHeartbeatPeriod = time.Minute

// ErrSourceSilent is wrapped by the error of a connection on which nothing, not even a heartbeat,
// arrived within the read timeout.
var ErrSourceSilent = errors.New("source silent")

// readTimeout is how long the reader waits for the next event or heartbeat when the source sends
// a heartbeat every period: three periods and a second.
func readTimeout(period time.Duration) time.Duration { return 3*period + time.Second }

// pace decides, from when events and heartbeats arrive, how long the reader waits for the next
// one. It starts at the period asked of the source; a source whose heartbeats come further apart
// than asked (by more than half a period and half a second of jitter) gets its own period, up to
// max(asked, MaxHeartbeatPeriod). Until the first heartbeat, when the source's period is not yet
// known, the wait is the longest one. Time spent outside the read (the sink full) is not silence.
// It is pure: the caller passes the time and serialises the calls.
type pace struct {
	asked, period, limit time.Duration
	last                 time.Time // when the reader last started waiting for the source
	reading              bool      // the reader waits for the source (not blocked in its sink)
	heartbeats           int64
	adapted              bool // period was raised above asked
}

func newPace(asked time.Duration, now time.Time) *pace {
	return &pace{asked: asked, period: asked, limit: max(asked, MaxHeartbeatPeriod), last: now, reading: true}
}

// received records an event taken from the source at now; the reader then hands it to its sink
// until wait. It reports whether the heartbeat period in force was raised for the first time:
// the caller logs it, once.
func (p *pace) received(now time.Time, heartbeat bool) (adaptedNow bool) {
	gap := now.Sub(p.last)
	p.reading = false
	if !heartbeat {
		return false
	}
	p.heartbeats++
	if gap <= p.period+p.period/2+500*time.Millisecond || p.period >= p.limit {
		return false
	}
	p.period = min(gap.Round(time.Second), p.limit)
	first := !p.adapted
	p.adapted = true
	return first
}

// wait records that the reader waits for the source again from now.
func (p *pace) wait(now time.Time) {
	p.last, p.reading = now, true
}

// timeout returns the read timeout in force.
func (p *pace) timeout() time.Duration {
	if p.heartbeats == 0 {
		return readTimeout(p.limit)
	}
	return readTimeout(p.period)
}

// expired returns a non-nil error, wrapping ErrSourceSilent, when the reader has waited for the
// source longer than the timeout at now.
func (p *pace) expired(now time.Time) error {
	if !p.reading {
		return nil
	}
	waited := now.Sub(p.last)
	if waited <= p.timeout() {
		return nil
	}
	seen := "no heartbeat received yet"
	if p.heartbeats > 0 {
		seen = fmt.Sprintf("heartbeats seen every %v", p.period)
	}
	return fmt.Errorf("%w: no binlog event or heartbeat for %v (--source-heartbeat-period asks for one every %v; %s): "+
		"the connection is broken, or the source sends heartbeats less often than every %v",
		ErrSourceSilent, waited.Round(time.Second), p.asked, seen, p.limit)
}

// paceWatch applies a pace to one Run: the read loop reports what it receives, one goroutine
// checks every second (or every heartbeat period, when shorter) whether the wait has expired
// and then cancels the read with the pace's error.
//
// The loop reports every event, so its reports are cheap: an event other than a heartbeat only
// stores, without a lock, that the loop is in its sink, and the loop's return to the source when
// it did. The checker and a heartbeat bring the pace up to date from them under the lock.
type paceWatch struct {
	mu     sync.Mutex // guards p
	p      *pace
	tick   time.Duration
	logger *slog.Logger
	// base is the origin of waitedAt; inSink and waitedAt are the loop's reports: whether it
	// hands an event to its sink, and when it last started waiting for the source (time since
	// base). The loop stores waitedAt before it clears inSink.
	base     time.Time
	inSink   atomic.Bool
	waitedAt atomic.Int64
}

func newPaceWatch(asked time.Duration, logger *slog.Logger) *paceWatch {
	now := time.Now()
	return &paceWatch{p: newPace(asked, now), tick: min(time.Second, max(asked, 10*time.Millisecond)), logger: logger, base: now}
}

// start starts the checking goroutine and returns the context the reads run under (cancelled
// with the pace's error, or with ctx) and the function that stops the goroutine and waits for it.
func (w *paceWatch) start(ctx context.Context) (context.Context, func()) {
	rctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(w.tick)
		defer t.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case now := <-t.C:
				w.mu.Lock()
				w.sync()
				err := w.p.expired(now)
				w.mu.Unlock()
				if err != nil {
					cancel(err)
					return
				}
			}
		}
	}()
	return rctx, func() { cancel(nil); <-done }
}

// sync brings the pace up to the loop's reports. Called with mu held.
func (w *paceWatch) sync() {
	// inSink first: a wait it reports is no older than the waitedAt read after it.
	reading := !w.inSink.Load()
	w.p.last, w.p.reading = w.base.Add(time.Duration(w.waitedAt.Load())), reading
}

// received records an event taken from the source; a heartbeat period raised for the first time
// is logged.
func (w *paceWatch) received(ev *replication.BinlogEvent) {
	w.inSink.Store(true)
	if _, heartbeat := ev.Event.(*replication.HeartbeatEvent); !heartbeat {
		return
	}
	w.mu.Lock()
	w.sync()
	adapted := w.p.received(time.Now(), true)
	period, timeout, asked := w.p.period, w.p.timeout(), w.p.asked
	w.mu.Unlock()
	if adapted {
		w.logger.Warn("the source sends heartbeats less often than --source-heartbeat-period asks; waiting for three of its periods",
			"asked", asked, "observed", period, "read_timeout", timeout)
	}
}

// wait records that the read loop waits for the source again.
func (w *paceWatch) wait() {
	w.waitedAt.Store(int64(time.Since(w.base)))
	w.inSink.Store(false)
}
