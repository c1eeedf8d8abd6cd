package stream

import (
	"errors"
	"fmt"
	"strings"

	"github.com/vplayer/vplayer/applier"
	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/stream/preflight"
)

// isTerminal reports whether err is one that no retry can fix, whatever the time spent
// retrying: see SPEC 4.4.
func isTerminal(err error) bool {
	return errors.Is(err, ErrTerminal) || applier.IsTerminal(err) || binlog.IsTerminal(err) ||
		errors.Is(err, binlog.ErrNotInHistory) || errors.Is(err, preflight.ErrTargetTriggers)
}

// terminalText is the message of a terminal error: "terminal error: " and what went wrong, once,
// whether err wraps ErrTerminal (its text then begins with it) or is one by its kind.
func terminalText(err error) string {
	prefix := ErrTerminal.Error() + ": "
	return prefix + strings.TrimPrefix(err.Error(), prefix)
}

// explainSource names the cause and the fix of a source error that no retry can fix, the
// server's refusal to serve the binlog after start (1236); other errors are returned as they
// are.
func explainSource(err error, start binlog.Position) error {
	if !binlog.IsTerminal(err) {
		return err
	}
	return fmt.Errorf("the source cannot serve its binary log after %s (purged from it, or never in it): %w: %s", start, err, preflight.PositionFix)
}
