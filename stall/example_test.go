package stall_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/vplayer/vplayer/stall"
)

// The applier has held a transaction since 11:59:50 and has been in one
// UPDATE since 11:59:58; the reader has been blocked on the full relay log
// since 12:00. The applier's clock runs out first, at 12:04:50, and since the
// reader is blocked the stall carries the relay-log text.
func ExampleCheck() {
	cfg := stall.Config{ProgressDeadline: 5 * time.Minute, HeartbeatInterval: time.Second}
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	s := stall.Snapshot{
		RelayBlockedSince: t0,
		ProgressSince:     t0.Add(-10 * time.Second),
		Statement:         "UPDATE `shop`.`orders`",
		StatementSince:    t0.Add(-2 * time.Second),
	}

	next, err := stall.Check(cfg, s, t0.Add(time.Minute))
	fmt.Println(err, next.Format(time.TimeOnly))

	_, err = stall.Check(cfg, s, next)
	fmt.Println(err)
	var e *stall.Error
	if errors.As(err, &e) {
		fmt.Println(e.Detector, e.For, errors.Is(err, stall.ErrStalled))
	}
	// Output:
	// <nil> 12:04:50
	// relay log I/O stalled: progress stalled; vplayer was unable to replicate the transaction in a timely manner; examine the target mysqld instance health and the replicated queries' EXPLAIN output to see why queries are taking unusually long; applier busy for 4m52s in UPDATE `shop`.`orders`
	// relay_log 4m50s true
}
