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

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func lagText(ws workflowStatus, now time.Time) string {
	if s, ok := lagOf(ws, now); ok {
		return formatSeconds(s)
	}
	return "-"
}

// sourceText describes the record's source column.
func sourceText(column string) string {
	s, err := workflow.ParseSource(column)
	if err != nil {
		return "unknown: the record's source is not JSON vplayer wrote"
	}
	tables := "all tables"
	if len(s.Tables) > 0 {
		tables = "tables " + strings.Join(s.Tables, ",")
	}
	out := fmt.Sprintf("%s, database %s, %s", orUnknown(s.Address), orUnknown(s.Database), tables)
	if s.Flavor != "" {
		out += ", " + s.Flavor
	}
	return out
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func sourcePosText(b backlog) string {
	if !b.Known {
		return b.Reason
	}
	out := b.SourcePos
	if b.SourceEnd != "" && b.SourceEnd != b.SourcePos {
		out += " (binary log ends at " + b.SourceEnd + ")"
	}
	return out
}

// behindShort is the BEHIND column: transactions or bytes behind, 0 when caught up, "-" unknown.
func behindShort(b backlog) string {
	switch {
	case !b.Known:
		return "-"
	case b.CaughtUp != nil && *b.CaughtUp:
		return "0"
	case b.Transactions != nil:
		return fmt.Sprintf("%d trx", *b.Transactions)
	case b.Bytes != nil:
		return formatBytes(*b.Bytes)
	}
	return "yes"
}

// behindText is the backlog in full: what is counted, and why the rest is not.
func behindText(b backlog) string {
	if !b.Known {
		return "unknown (see the source position)"
	}
	var parts []string
	if b.CaughtUp != nil && *b.CaughtUp {
		parts = append(parts, "caught up")
	}
	if b.Transactions != nil {
		parts = append(parts, fmt.Sprintf("%d transactions", *b.Transactions))
	} else if b.TransactionsReason != "" {
		parts = append(parts, "transactions "+b.TransactionsReason)
	}
	if b.Bytes != nil {
		parts = append(parts, fmt.Sprintf("%d bytes of binary log (%s)", *b.Bytes, formatBytes(*b.Bytes)))
	} else if b.BytesReason != "" {
		parts = append(parts, "bytes "+b.BytesReason)
	}
	return strings.Join(parts, "; ")
}

// formatBytes formats a byte count with a binary unit: 512 B, 1.5 KiB, 3.2 MiB, 1.0 GiB.
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 3; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGT"[exp])
}

// ownerShort is the OWNER column: the live owner (abbreviated) and its epoch, "none", or "?"
// when unknown.
func ownerShort(ws workflowStatus, now time.Time) string {
	d := ws.Details
	switch {
	case d == nil || !d.HasLease || now.IsZero():
		return "?"
	case d.Leased(now):
		return fmt.Sprintf("%s #%d", abbreviate(d.Owner, ownerWidth), d.Epoch)
	}
	return "none"
}

// leaseText is the lease in full.
func leaseText(ws workflowStatus, now time.Time) string {
	d := ws.Details
	switch {
	case d == nil:
		return ws.DetailsReason
	case !d.HasLease:
		return "unknown: the sidecar has no lease columns (an older vplayer's)"
	case now.IsZero():
		return "unknown: the target's clock was not read"
	case d.Leased(now):
		return fmt.Sprintf("owner %s, epoch %d, until %s (in %s)", d.Owner, d.Epoch, d.LeaseUntil.UTC().Format(time.RFC3339), formatMillis(d.LeaseUntil.Sub(now)))
	case d.Owner != "":
		return fmt.Sprintf("none: owner %s's lease (epoch %d) expired at %s, %s ago", d.Owner, d.Epoch, d.LeaseUntil.UTC().Format(time.RFC3339), formatMillis(now.Sub(d.LeaseUntil)))
	case d.Epoch > 0:
		return fmt.Sprintf("none: released (last epoch %d)", d.Epoch)
	}
	return "none: never owned"
}

// holdShort is the HOLD column: a manual throttle or a diff pause in force, "-" for none, "?"
// when unknown.
func holdShort(ws workflowStatus, now time.Time) string {
	d := ws.Details
	if d == nil || now.IsZero() || !d.HasThrottle && !d.HasPause {
		return "?"
	}
	var holds []string
	if d.HasThrottle && d.Throttled(now) {
		holds = append(holds, "throttled")
	}
	if d.HasPause && d.Paused(now) {
		holds = append(holds, "diff pause")
	}
	if len(holds) == 0 {
		return "-"
	}
	return strings.Join(holds, ",")
}

// throttleText is the manual throttle in full.
func throttleText(ws workflowStatus, now time.Time) string {
	d := ws.Details
	switch {
	case d == nil:
		return ws.DetailsReason
	case !d.HasThrottle:
		return "unknown: the sidecar has no throttle columns (an older vplayer's)"
	case now.IsZero():
		return "unknown: the target's clock was not read"
	case !d.Throttled(now):
		return "none (automatic holds, --max-load, --throttle-replicas and --apply-delay, show in the message)"
	}
	why := ""
	if d.ThrottleReason != "" {
		why = fmt.Sprintf(", reason %q", d.ThrottleReason)
	}
	if d.ThrottleForever {
		return "throttled until vplayer unthrottle" + why
	}
	return fmt.Sprintf("throttled until %s (%s more)%s", d.ThrottleUntil.UTC().Format(time.RFC3339), formatMillis(d.ThrottleUntil.Sub(now)), why)
}

// pauseText is the vplayer diff pause in full.
func pauseText(ws workflowStatus, now time.Time) string {
	d := ws.Details
	switch {
	case d == nil:
		return ws.DetailsReason
	case !d.HasPause:
		return "unknown: the sidecar has no pause columns (an older vplayer's)"
	case now.IsZero():
		return "unknown: the target's clock was not read"
	case !d.Paused(now):
		return "none"
	}
	return fmt.Sprintf("%s, until %s (a vplayer diff holds the stream)", d.Pause, d.PauseUntil.UTC().Format(time.RFC3339))
}

func copyText(ws workflowStatus) string {
	if ws.Copy == nil {
		return ws.CopyReason
	}
	return summarizeCopy(*ws.Copy).line()
}

// formatMillis formats a duration as formatSeconds does, rounded to the second.
func formatMillis(d time.Duration) string {
	return formatSeconds(int64(max(d, 0).Round(time.Second) / time.Second))
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
