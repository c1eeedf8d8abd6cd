package cli

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/vplayer/vplayer/metrics"
	"github.com/vplayer/vplayer/workflow"
)

// progressInterval is how often a running stream logs a progress line.
const progressInterval = 10 * time.Second

// snapshotter is what the progress line reads: a metrics.Collector.
type snapshotter interface {
	Snapshot() metrics.Snapshot
}

// logProgress logs a progress line every interval while the stream is Running, until ctx ends:
// totals, the rate since the previous line, lag and the relay log's fill; while it is Copying, the
// rows copied, their rate and the tables remaining.
func logProgress(ctx context.Context, log *slog.Logger, src snapshotter, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	prev := src.Snapshot()
	prevAt := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s, at := src.Snapshot(), time.Now()
		if s.State == workflow.StateRunning {
			secs := at.Sub(prevAt).Seconds()
			log.Info("progress",
				"transactions", s.Transactions,
				"rows", s.Rows,
				"commits", s.Commits,
				"transactions_per_second", round1(float64(s.Transactions-prev.Transactions)/secs),
				"lag_seconds", round1(s.Lag.Seconds()),
				"relay_log_items", fmt.Sprintf("%d/%d", s.RelayItems, s.RelayMaxItems),
				"relay_log_bytes", fmt.Sprintf("%d/%d", s.RelayBytes, s.RelayMaxBytes),
				"heartbeats_pending", s.HeartbeatsPending,
			)
		}
		if s.State == workflow.StateCopying {
			secs := at.Sub(prevAt).Seconds()
			log.Info("copy progress",
				"rows_copied", s.CopyRows,
				"rows_per_second", round1(float64(s.CopyRows-prev.CopyRows)/secs),
				"tables_remaining", s.CopyTablesRemaining,
				"copy_seconds", round1(s.CopyTime.Seconds()),
				"lag_seconds", round1(s.Lag.Seconds()),
			)
		}
		prev, prevAt = s, at
	}
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }
