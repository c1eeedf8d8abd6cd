package binlog

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
)

// TestPace: the read timeout follows the heartbeat period the source really uses.
func TestPace(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }

	t.Run("a source that honours the period keeps the asked timeout", func(t *testing.T) {
		p := newPace(time.Second, t0)
		for i := 1; i <= 5; i++ {
			if p.received(at(time.Duration(i)*time.Second), true) {
				t.Errorf("heartbeat %d adapted the period; the source sends it every second as asked", i)
			}
			p.wait(at(time.Duration(i) * time.Second))
		}
		if got, want := p.timeout(), 4*time.Second; got != want {
			t.Errorf("timeout = %v, want %v", got, want)
		}
		if err := p.expired(at(9 * time.Second)); err != nil {
			t.Errorf("expired 4s after the last heartbeat: %v; want not yet", err)
		}
		err := p.expired(at(9*time.Second + time.Millisecond))
		if !errors.Is(err, ErrSourceSilent) {
			t.Fatalf("expired just past 4s = %v, want ErrSourceSilent", err)
		}
		for _, want := range []string{"--source-heartbeat-period", "every 1s", "heartbeats seen every 1s"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
	})

	t.Run("a source that sends every 30s gets three of its periods, adapted once", func(t *testing.T) {
		p := newPace(time.Second, t0)
		// Before the first heartbeat the period is unknown: the longest wait applies.
		if err := p.expired(at(3*MaxHeartbeatPeriod + time.Second)); err != nil {
			t.Errorf("expired before the first heartbeat within the longest wait: %v", err)
		}
		if !p.received(at(30*time.Second), true) {
			t.Errorf("a heartbeat 30s after asking for one a second did not adapt the period")
		}
		p.wait(at(30 * time.Second))
		if got, want := p.timeout(), 91*time.Second; got != want {
			t.Errorf("timeout = %v, want %v", got, want)
		}
		if p.received(at(60*time.Second), true) {
			t.Errorf("the second 30s heartbeat reported a first adaptation again")
		}
		p.wait(at(60 * time.Second))
		if err := p.expired(at(60*time.Second + 91*time.Second)); err != nil {
			t.Errorf("expired within 91s of a heartbeat: %v", err)
		}
		if err := p.expired(at(60*time.Second + 92*time.Second)); !errors.Is(err, ErrSourceSilent) || !strings.Contains(err.Error(), "heartbeats seen every 30s") {
			t.Errorf("expired 92s after a heartbeat = %v, want ErrSourceSilent naming the 30s seen", err)
		}
	})

	t.Run("the adapted period is bounded", func(t *testing.T) {
		p := newPace(time.Second, t0)
		p.received(at(10*time.Minute), true)
		if got, want := p.period, MaxHeartbeatPeriod; got != want {
			t.Errorf("period after a 10m gap = %v, want the bound %v", got, want)
		}
	})

	t.Run("events reset the wait; a heartbeat after a busy stretch measures only the idle gap", func(t *testing.T) {
		p := newPace(time.Second, t0)
		p.received(at(time.Second), true)
		p.wait(at(time.Second))
		for i := 2; i < 20; i++ {
			p.received(at(time.Duration(i)*time.Second), false)
			p.wait(at(time.Duration(i) * time.Second))
		}
		if p.received(at(20*time.Second), true) {
			t.Errorf("a heartbeat 1s after the last event adapted the period")
		}
	})

	t.Run("time blocked in the sink is not silence", func(t *testing.T) {
		p := newPace(time.Second, t0)
		p.received(at(time.Second), true)
		p.received(at(2*time.Second), false) // then the sink blocks for a minute
		if err := p.expired(at(62 * time.Second)); err != nil {
			t.Errorf("expired while the reader was blocked in its sink: %v", err)
		}
		p.wait(at(62 * time.Second))
		if err := p.expired(at(67 * time.Second)); !errors.Is(err, ErrSourceSilent) {
			t.Errorf("expired 5s after the sink took the event = %v, want ErrSourceSilent", err)
		}
	})

	t.Run("an asked period above the bound is kept", func(t *testing.T) {
		p := newPace(2*time.Minute, t0)
		p.received(at(2*time.Minute), true)
		if got, want := p.timeout(), readTimeout(2*time.Minute); got != want {
			t.Errorf("timeout = %v, want %v", got, want)
		}
	})
}

// TestPaceWatch: the watch cancels the reads with the pace's error once the source is silent past
// the timeout, and not before.
func TestPaceWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newPaceWatch(time.Second, slog.New(slog.DiscardHandler))
		rctx, stop := w.start(t.Context())
		defer stop()
		hb := &replication.BinlogEvent{Header: &replication.EventHeader{}, Event: &replication.HeartbeatEvent{}}
		time.Sleep(time.Second)
		w.received(hb)
		w.wait()
		// 4s (three periods and a second) after the heartbeat, checked every second.
		time.Sleep(4*time.Second - time.Millisecond)
		synctest.Wait()
		if err := context.Cause(rctx); err != nil {
			t.Fatalf("reads cancelled before the timeout: %v", err)
		}
		time.Sleep(time.Second + 2*time.Millisecond)
		synctest.Wait()
		if err := context.Cause(rctx); !errors.Is(err, ErrSourceSilent) {
			t.Fatalf("cause after the timeout = %v, want ErrSourceSilent", err)
		}
	})
}

// TestPaceWatch_sink: the time the loop spends handing an event to its sink is not silence,
// however long; the wait for the source counts again from the loop's return to it.
func TestPaceWatch_sink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newPaceWatch(time.Second, slog.New(slog.DiscardHandler))
		rctx, stop := w.start(t.Context())
		defer stop()
		hb := &replication.BinlogEvent{Header: &replication.EventHeader{}, Event: &replication.HeartbeatEvent{}}
		rows := &replication.BinlogEvent{Header: &replication.EventHeader{}, Event: &replication.RowsEvent{}}
		time.Sleep(time.Second)
		w.received(hb) // the period is known from here: 4s of silence is the timeout
		w.wait()
		time.Sleep(time.Second)
		w.received(rows)
		time.Sleep(10 * time.Second) // the sink is full
		synctest.Wait()
		if err := context.Cause(rctx); err != nil {
			t.Fatalf("reads cancelled while the loop was in its sink: %v", err)
		}
		w.wait()
		time.Sleep(4*time.Second - time.Millisecond)
		synctest.Wait()
		if err := context.Cause(rctx); err != nil {
			t.Fatalf("reads cancelled within the timeout of the loop's return to the source: %v", err)
		}
		time.Sleep(time.Second + 2*time.Millisecond)
		synctest.Wait()
		if err := context.Cause(rctx); !errors.Is(err, ErrSourceSilent) {
			t.Fatalf("cause after the timeout = %v, want ErrSourceSilent", err)
		}
	})
}
