package cli

import (
	"context"
	"encoding/json"
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

// renderStatusTable prints one line per record: workflow, state, lag, the age of the last update
// and heartbeat, the position (abbreviated) and the message (on one line).
func renderStatusTable(w io.Writer, recs []workflow.Record, now time.Time) error {
	return renderStatusTableCopies(w, recs, nil, now)
}

// renderStatusTableCopies is renderStatusTable followed, for each workflow with a copy in
// progress in copies (by record id), by one line per table of its copy.
func renderStatusTableCopies(w io.Writer, recs []workflow.Record, copies map[int64][]workflow.TableCopy, now time.Time) error {
	defer renderCopies(w, recs, copies, now)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKFLOW\tSTATE\tLAG\tUPDATED\tHEARTBEAT\tPOS\tMESSAGE")
	for _, r := range recs {
		lag := "-"
		if s, ok := recordLag(r, now); ok {
			lag = formatSeconds(s)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Workflow, r.State, lag,
			ago(r.TimeUpdated, now), ago(r.TimeHeartbeat, now), abbreviate(r.Pos, posWidth), oneLine(r.Message))
	}
	return tw.Flush()
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

// statusJSON is one record as status --json prints it: the record's columns, the source and
// options as objects, and the ages computed at now (null when unknown).
type statusJSON struct {
	ID                   int64           `json:"id"`
	Workflow             string          `json:"workflow"`
	State                string          `json:"state"`
	Message              string          `json:"message"`
	Pos                  string          `json:"pos"`
	StopPos              string          `json:"stop_pos,omitempty"`
	DBName               string          `json:"db_name"`
	TimeUpdated          int64           `json:"time_updated"`
	TransactionTimestamp int64           `json:"transaction_timestamp"`
	TimeHeartbeat        int64           `json:"time_heartbeat"`
	LagSeconds           *int64          `json:"lag_seconds"`
	UpdatedAgeSeconds    *int64          `json:"updated_age_seconds"`
	HeartbeatAgeSeconds  *int64          `json:"heartbeat_age_seconds"`
	Source               json.RawMessage `json:"source,omitempty"`
	Options              json.RawMessage `json:"options,omitempty"`
	// Copy is the copy phase's progress, per table, while the workflow copies.
	Copy []copyJSON `json:"copy,omitempty"`
}

func toStatusJSON(r workflow.Record, now time.Time) statusJSON {
	s := statusJSON{ID: r.ID, Workflow: r.Workflow, State: r.State, Message: r.Message, Pos: r.Pos, StopPos: r.StopPos,
		DBName: r.DBName, TimeUpdated: r.TimeUpdated, TransactionTimestamp: r.TransactionTimestamp, TimeHeartbeat: r.TimeHeartbeat}
	opt := func(v int64, ok bool) *int64 {
		if !ok {
			return nil
		}
		return &v
	}
	s.LagSeconds = opt(recordLag(r, now))
	s.UpdatedAgeSeconds = opt(age(r.TimeUpdated, now))
	s.HeartbeatAgeSeconds = opt(age(r.TimeHeartbeat, now))
	if json.Valid([]byte(r.Source)) {
		s.Source = json.RawMessage(r.Source)
	}
	if json.Valid([]byte(r.Options)) {
		s.Options = json.RawMessage(r.Options)
	}
	return s
}

// renderStatusJSON prints the records as a JSON array.
func renderStatusJSON(w io.Writer, recs []workflow.Record, now time.Time) error {
	return renderStatusJSONCopies(w, recs, nil, now)
}

// renderStatusJSONCopies is renderStatusJSON with each copy in progress in copies (by record id).
func renderStatusJSONCopies(w io.Writer, recs []workflow.Record, copies map[int64][]workflow.TableCopy, now time.Time) error {
	out := make([]statusJSON, len(recs))
	for i, r := range recs {
		out[i] = toStatusJSON(r, now)
		for _, c := range copies[r.ID] {
			out[i].Copy = append(out[i].Copy, toCopyJSON(c))
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
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
