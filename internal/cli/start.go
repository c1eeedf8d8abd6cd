package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/workflow"
)

const startUsage = `Usage: vplayer start --target DSN --workflow W

Makes a Stopped workflow runnable again: its state becomes Init, with the message "Started by
vplayer start". A vplayer run --wait-while-stopped that owns the workflow resumes it within a
second; without one, the next vplayer run does (as any run resumes a workflow). A workflow already
Init, Copying or Running is left as it is. One in state Error is refused: fix the cause its
message names, then vplayer run resumes it.

Exit codes: 0 started, or already runnable; 1 in state Error, not found, or the target could not
be read; 2 bad usage.

Flags:
`

// startCmd makes a Stopped workflow runnable: vplayer start --workflow W.
func startCmd(args []string, stdout, stderr io.Writer) error {
	c := newRecordCommand("vplayer start", "workflow to start", stderr)
	c.usage(startUsage, stderr)
	store, done, err := c.parse(args)
	if err != nil {
		return err
	}
	defer done()
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	was, err := store.Start(ctx, *c.workflow)
	if err != nil {
		return err
	}
	if was != workflow.StateStopped {
		fmt.Fprintf(stdout, "workflow %s: already runnable (state %s); nothing changed\n", *c.workflow, was)
		return nil
	}
	fmt.Fprintf(stdout, "workflow %s: state set to Init (was Stopped); %s\n", *c.workflow, resumer(ctx, store, *c.workflow))
	if note := stopPosReached(ctx, store, *c.workflow); note != "" {
		fmt.Fprintf(stdout, "note: %s\n", note)
	}
	return nil
}

// resumer says who resumes a workflow just started: its live owner, or the next vplayer run.
func resumer(ctx context.Context, store *workflow.Store, name string) string {
	rec, err := store.Get(ctx, name)
	if err != nil {
		return "the next vplayer run resumes it"
	}
	details, now, err := store.Details(ctx)
	if d, ok := details[rec.ID]; err == nil && ok && d.HasLease && d.Leased(now) {
		return fmt.Sprintf("its owner %s resumes it within a second (with --wait-while-stopped; a process without it exits on a stop)", d.Owner)
	}
	return "no process owns it now: the next vplayer run resumes it"
}

// stopPosReached says when the workflow's recorded position already contains its recorded stop
// position: the run that set it stops again at once.
func stopPosReached(ctx context.Context, store *workflow.Store, name string) string {
	rec, err := store.Get(ctx, name)
	if err != nil || rec.StopPos == "" {
		return ""
	}
	pos, err1 := binlog.ParsePosition(rec.Pos, "")
	stop, err2 := binlog.ParsePosition(rec.StopPos, "")
	if err1 != nil || err2 != nil || !pos.Contains(stop) {
		return ""
	}
	return fmt.Sprintf("its position %s already reached its stop position %s: a run with that --stop-pos stops again at once; run it without --stop-pos (or a later one) to go on", rec.Pos, rec.StopPos)
}
