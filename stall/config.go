package stall

import (
	"errors"
	"fmt"
	"time"
)

const (
	// DefaultProgressDeadline is the default of --vplayer-progress-deadline.
	DefaultProgressDeadline = 5 * time.Minute
	// DefaultHeartbeatInterval is the default of --heartbeat-update-interval.
	DefaultHeartbeatInterval = time.Second
	// MaxHeartbeatInterval is the largest accepted --heartbeat-update-interval.
	MaxHeartbeatInterval = 60 * time.Second
)

// Config holds the deadlines of the three detectors. Validate it before use;
// [Check] treats non-positive durations as "detector off".
type Config struct {
	// ProgressDeadline (--vplayer-progress-deadline) is how long the reader
	// may stay blocked on a full relay log, and how long the applier may hold
	// work without committing. 0 disables both detectors; never negative.
	ProgressDeadline time.Duration
	// HeartbeatInterval (--heartbeat-update-interval) is how long one
	// heartbeat write may be in flight; it is also the write's own deadline
	// and the time between heartbeat records. In (0, MaxHeartbeatInterval].
	HeartbeatInterval time.Duration
}

// Validate reports every invalid field in one error, naming its flag.
func (c Config) Validate() error {
	var errs []error
	if c.ProgressDeadline < 0 {
		errs = append(errs, fmt.Errorf("invalid --vplayer-progress-deadline %v: must be 0 (off) or a positive duration", c.ProgressDeadline))
	}
	switch {
	case c.HeartbeatInterval <= 0:
		errs = append(errs, fmt.Errorf("invalid --heartbeat-update-interval %v: must be a positive duration", c.HeartbeatInterval))
	case c.HeartbeatInterval > MaxHeartbeatInterval:
		errs = append(errs, fmt.Errorf("invalid --heartbeat-update-interval %v: must be at most %v", c.HeartbeatInterval, MaxHeartbeatInterval))
	}
	return errors.Join(errs...)
}
