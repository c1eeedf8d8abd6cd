package stream

import (
	"context"
	"time"

	"github.com/vplayer/vplayer/stream/gate"
	"github.com/vplayer/vplayer/workflow"
)

// pausePollInterval is how often the record is read while a `vplayer diff` pause is in force, so
// that the handshake takes a fraction of a second, not seconds.
const pausePollInterval = 100 * time.Millisecond

// pauseWatch is the stop poller's view of the pause, for logging and acknowledging it.
type pauseWatch struct {
	raw     string // the request last seen
	paused  bool   // the gate was last seen paused
	expired bool   // an expired request was last seen
}

// followPause applies the record's control fields to the stream's pause: it hands the request to
// the gate, acknowledges PauseHold once the gate has paused, and logs each change once.
func (co *controls) followPause(ctx context.Context, c workflow.Control, g *gate.Gate, w *pauseWatch) {
	if c.PauseExpired && !w.expired {
		co.log.Warn("the vplayer diff pause expired: its diff is gone; going on")
	}
	w.expired = c.PauseExpired
	if co.pause.Set(c.Pause, co.flavor) || c.Pause != w.raw {
		if c.Pause == "" && w.raw != "" {
			co.log.Info("vplayer diff pause ended; resuming")
		} else if c.Pause != "" && c.Pause != workflow.PauseHeld {
			co.log.Info("vplayer diff asks to pause", "at", pauseTarget(c.Pause))
		}
		w.raw = c.Pause
	}
	paused, pos := g.Paused()
	if paused && !w.paused {
		co.log.Info("paused for vplayer diff", "pos", pos)
	}
	w.paused = paused
	if paused && c.Pause == workflow.PauseHold && co.own.lease != nil {
		if _, err := co.own.lease.AckPause(ctx); err != nil {
			co.log.Warn("could not acknowledge the vplayer diff pause", "error", err)
		}
	}
}

func pauseTarget(raw string) string {
	if raw == workflow.PauseHold {
		return "next transaction boundary"
	}
	return raw
}
