package cli

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vplayer/vplayer/metrics"
	"github.com/vplayer/vplayer/workflow"
)

// fakeSnapshots returns the snapshot the test sets.
type fakeSnapshots struct {
	mu sync.Mutex
	s  metrics.Snapshot
}

func (f *fakeSnapshots) Snapshot() metrics.Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.s
}

func (f *fakeSnapshots) set(fn func(*metrics.Snapshot)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(&f.s)
}

var _ snapshotter = (*fakeSnapshots)(nil)

// syncBuf is a bytes.Buffer safe for concurrent use.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestLogProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out syncBuf
		log := slog.New(slog.NewTextHandler(&out, nil))
		src := &fakeSnapshots{s: metrics.Snapshot{State: workflow.StateInit, RelayMaxItems: 5000, RelayMaxBytes: 250000}}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			logProgress(ctx, log, src, progressInterval)
		}()

		time.Sleep(progressInterval + time.Millisecond)
		synctest.Wait()
		if got := out.String(); got != "" {
			t.Errorf("logged %q while Init, want nothing", got)
		}
		src.set(func(s *metrics.Snapshot) {
			s.State = workflow.StateRunning
			s.Transactions, s.Rows, s.Commits = 250, 700, 10
			s.Lag = 1234 * time.Millisecond
			s.RelayItems, s.RelayBytes = 12, 3400
		})
		time.Sleep(progressInterval - 2*time.Millisecond)
		synctest.Wait()
		if got := out.String(); got != "" {
			t.Errorf("logged %q before the interval, want nothing", got)
		}
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		got := out.String()
		for _, want := range []string{"msg=progress", "transactions=250", "rows=700", "commits=10", "transactions_per_second=25",
			"lag_seconds=1.2", "relay_log_items=12/5000", "relay_log_bytes=3400/250000", "heartbeats_pending=0"} {
			if !strings.Contains(got, want) {
				t.Errorf("progress line %q lacks %q", got, want)
			}
		}
		src.set(func(s *metrics.Snapshot) { s.State = workflow.StateStopped })
		time.Sleep(progressInterval)
		synctest.Wait()
		if n := strings.Count(out.String(), "msg=progress"); n != 1 {
			t.Errorf("%d progress lines after the stream stopped, want still 1", n)
		}
		cancel()
		<-done
	})
}
