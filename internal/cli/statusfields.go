package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/vplayer/vplayer/workflow"
)

// The fields of vplayer status's text views, each from a workflowStatus: the table's short forms
// and the detail view's full ones.

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
