package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vplayer/vplayer/workflow"
)

// posWidth is the width positions are abbreviated to in the status table; --json has them whole.
const posWidth = 40

// ownerWidth is the width owners are abbreviated to in the status table.
const ownerWidth = 32

// recordLag returns how far a workflow's record says it is behind at now, in whole seconds: now
// minus the later of transaction_timestamp (the source commit time of the last transaction
// applied) and time_heartbeat (recorded only while the stream is caught up and idle). ok is false
// when the record has neither.
func recordLag(r workflow.Record, now time.Time) (secs int64, ok bool) {
	since := max(r.TransactionTimestamp, r.TimeHeartbeat)
	if since == 0 {
		return 0, false
	}
	return max(now.Unix()-since, 0), true
}

// age returns now minus the unix time t in whole seconds, or false when t is zero (never).
func age(t int64, now time.Time) (int64, bool) {
	if t == 0 {
		return 0, false
	}
	return max(now.Unix()-t, 0), true
}

// renderStatusTable prints one line per workflow (workflow, state, lag, backlog, owner, hold,
// the age of the last update and heartbeat, the position abbreviated and the message on one
// line), then each copy in progress table by table, and each workflow's log rows when asked.
func renderStatusTable(w io.Writer, rep *statusReport) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKFLOW\tSTATE\tLAG\tBEHIND\tOWNER\tHOLD\tUPDATED\tHEARTBEAT\tPOS\tMESSAGE")
	for _, ws := range rep.Workflows {
		r := ws.Rec
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Workflow, r.State, lagText(ws, rep.Now), behindShort(ws.Backlog),
			ownerShort(ws, rep.TargetNow), holdShort(ws, rep.TargetNow), ago(r.TimeUpdated, rep.Now), ago(r.TimeHeartbeat, rep.Now),
			abbreviate(r.Pos, posWidth), oneLine(r.Message))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if rep.Source == nil && len(rep.Workflows) > 0 {
		fmt.Fprintln(w, "\nBEHIND: not read, no --source given (the source's position is compared only with --source)")
	}
	for _, ws := range rep.Workflows {
		if ws.Copy != nil && summarizeCopy(*ws.Copy).Phase == copyCopying {
			renderCopyTables(w, ws.Rec.Workflow, ws.Copy.Tables)
		}
	}
	if rep.LogsAsked > 0 {
		for _, ws := range rep.Workflows {
			renderLog(w, ws, rep)
		}
	}
	return nil
}

// renderStatusDetail prints each workflow one field per line, as SHOW REPLICA STATUS\G does, then
// its copy table by table while it copies, and its log rows when asked.
func renderStatusDetail(w io.Writer, rep *statusReport) error {
	for i, ws := range rep.Workflows {
		if i > 0 {
			fmt.Fprintln(w)
		}
		r := ws.Rec
		tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
		field := func(name, format string, args ...any) {
			fmt.Fprintf(tw, "%s:\t"+format+"\n", append([]any{name}, args...)...)
		}
		state := r.State
		if !healthy(r.State) {
			state += " (not healthy)"
		}
		field("workflow", "%s (id %d)", r.Workflow, r.ID)
		field("state", "%s", state)
		field("message", "%s", oneLine(r.Message))
		field("position", "%s", r.Pos)
		field("stop position", "%s", orNone(r.StopPos))
		field("target database", "%s", r.DBName)
		field("source", "%s", sourceText(r.Source))
		field("source position", "%s", sourcePosText(ws.Backlog))
		field("behind", "%s", behindText(ws.Backlog))
		field("lag", "%s", lagText(ws, rep.Now))
		field("updated", "%s", ago(r.TimeUpdated, rep.Now))
		field("heartbeat", "%s", ago(r.TimeHeartbeat, rep.Now))
		field("lease", "%s", leaseText(ws, rep.TargetNow))
		field("throttle", "%s", throttleText(ws, rep.TargetNow))
		field("diff pause", "%s", pauseText(ws, rep.TargetNow))
		field("copy", "%s", copyText(ws))
		if err := tw.Flush(); err != nil {
			return err
		}
		if ws.Copy != nil && summarizeCopy(*ws.Copy).Phase == copyCopying {
			renderCopyTables(w, r.Workflow, ws.Copy.Tables)
		}
		if rep.LogsAsked > 0 {
			renderLog(w, ws, rep)
		}
	}
	return nil
}

// renderLog prints a workflow's last log rows, oldest first.
func renderLog(w io.Writer, ws workflowStatus, rep *statusReport) {
	if ws.LogsReason != "" {
		fmt.Fprintf(w, "\nlog of %s: %s\n", ws.Rec.Workflow, ws.LogsReason)
		return
	}
	fmt.Fprintf(w, "\nlog of %s (last %d rows, oldest first):\n", ws.Rec.Workflow, rep.LogsAsked)
	if len(ws.Logs) == 0 {
		fmt.Fprintln(w, "  (none)")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  ID\tCREATED\tUPDATED\tTYPE\tSTATE\tCOUNT\tMESSAGE")
	for _, l := range ws.Logs {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%d\t%s\n", l.ID, ago(l.CreatedAt, rep.Now), ago(l.UpdatedAt, rep.Now), l.Type, l.State, l.Count, oneLine(l.Message))
	}
	tw.Flush()
}

// ago formats the age of the unix time t: "3s ago", or "never".
func ago(t int64, now time.Time) string {
	s, ok := age(t, now)
	if !ok {
		return "never"
	}
	return formatSeconds(s) + " ago"
}

// formatSeconds formats a duration in seconds with its two largest units: 7s, 5m03s, 2h05m, 3d04h.
func formatSeconds(s int64) string {
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 48*3600:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd%02dh", s/86400, s%86400/3600)
}

// abbreviate cuts s in the middle to at most width bytes, keeping both ends: a position's flavor
// and the end of its last GTID range tell the most.
func abbreviate(s string, width int) string {
	const mark = "..."
	if len(s) <= width {
		return s
	}
	head := (width - len(mark)) / 2
	tail := width - len(mark) - head
	return s[:head] + mark + s[len(s)-tail:]
}

// oneLine puts a message on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// clearScreen moves a terminal's cursor home and clears the screen.
const clearScreen = "\x1b[H\x1b[2J"

// watch shows the status at once and then every interval until ctx ends (nil) or show fails. On
// a terminal each refresh replaces the screen; elsewhere refreshes follow one another, separated
// by a blank line.
func watch(ctx context.Context, w io.Writer, terminal bool, interval time.Duration, show func(context.Context, io.Writer) error) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for first := true; ; first = false {
		var b strings.Builder
		if err := show(ctx, &b); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		switch {
		case terminal:
			io.WriteString(w, clearScreen)
		case !first:
			io.WriteString(w, "\n")
		}
		io.WriteString(w, b.String())
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// isTerminal reports whether w is a character device, such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
