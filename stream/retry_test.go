package stream

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/vplayer/vplayer/stall"
)

// TestErrorKey_stallByDetector: stalls of one detector are one kind of error for
// --max-time-to-retry-on-error whatever their cause or statement, so that a persisting stall
// whose cause reads differently from one attempt to the next still runs out of time.
func TestErrorKey_stallByDetector(t *testing.T) {
	a := errorKey(&stall.Error{Detector: stall.Heartbeat, Cause: errors.New("recording took longer than 2s")})
	b := errorKey(fmt.Errorf("attempt: %w", &stall.Error{Detector: stall.Heartbeat, Cause: context.DeadlineExceeded}))
	c := errorKey(&stall.Error{Detector: stall.Applier, Statement: "UPDATE `s`.`t`", For: time.Minute})
	if a != b {
		t.Errorf("heartbeat stalls with other causes have keys %q and %q, want one", a, b)
	}
	if a == c {
		t.Errorf("a heartbeat stall and an applier stall share the key %q", a)
	}
}
