package workflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// StartRequestedMessage is the message vplayer start records with state Init.
const StartRequestedMessage = "Started by vplayer start"

// ErrNotStopped means vplayer start found the workflow in a state it does not start from.
var ErrNotStopped = errors.New("workflow is not Stopped")

// Start makes a Stopped workflow runnable again (vplayer start): its state becomes Init, with
// StartRequestedMessage, in one conditional UPDATE; a process waiting with --wait-while-stopped
// resumes it within a second, and any later vplayer run does. It returns the state the record
// had. A workflow already runnable (Init, Copying, Running) is left as it is, without an error;
// one in Error is refused with an error wrapping ErrNotStopped, since a terminal error needs its
// cause fixed and a new vplayer run; a workflow without a record is ErrNotFound.
func (s *Store) Start(ctx context.Context, workflow string) (string, error) {
	for {
		res, err := s.db.ExecContext(ctx, "UPDATE "+s.table("vreplication")+" SET state = ?, message = ?, time_updated = UNIX_TIMESTAMP() WHERE workflow = ? AND state = ?",
			StateInit, StartRequestedMessage, workflow, StateStopped)
		if isNoSuchTable(err) {
			return "", fmt.Errorf("%w: %s (%s has no vreplication table)", ErrNotFound, workflow, s.sidecar)
		}
		if err != nil {
			return "", fmt.Errorf("start workflow %s: %w", workflow, err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return StateStopped, nil
		}
		var state string
		err = s.db.QueryRowContext(ctx, "SELECT state FROM "+s.table("vreplication")+" WHERE workflow = ?", workflow).Scan(&state)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return "", fmt.Errorf("%w: %s", ErrNotFound, workflow)
		case err != nil:
			return "", fmt.Errorf("start workflow %s: %w", workflow, err)
		case state == StateStopped:
			continue // stopped between the two statements: start it
		case state == StateError:
			return state, fmt.Errorf("%w: workflow %s is in state Error: fix the cause its message names (vplayer status), then run vplayer run again, which resumes it", ErrNotStopped, workflow)
		}
		return state, nil
	}
}
