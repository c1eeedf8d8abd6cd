package cli

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/vplayer/vplayer/workflow"
)

// Copy phases as status names them.
const (
	copyNone     = "none"     // the workflow has no copy state: it never copied
	copyPlanning = "planning" // created to copy, its tables not planned yet
	copyCopying  = "copying"  // rows or keys left to copy
	copyDone     = "done"     // every table copied and its keys built
)

// copySummary is a workflow's copy as a whole.
type copySummary struct {
	Phase                   string
	TablesTotal, TablesDone int
	RowsCopied, RowsTotal   int64
	KeysToBuild             int
	Percent, RowsPerSecond  *float64
	ETASeconds              *int64
	// StartedAt is when the first chunk committed, UpdatedAt when the last did (unix seconds).
	StartedAt, UpdatedAt int64
}

// summarizeCopy sums a workflow's copy state. RowsTotal counts each table done as the rows it
// copied, each other as the larger of its estimate and its rows copied so far. The rate is the
// rows copied over the time from the first chunk to the last, and the ETA the rows left at that
// rate; both unknown before chunks a second apart. The keys still to build are not in the ETA.
func summarizeCopy(p workflow.CopyProgress) copySummary {
	s := copySummary{Phase: copyNone}
	switch {
	case len(p.Tables) == 0 && p.ToPlan:
		s.Phase = copyPlanning
		return s
	case len(p.Tables) == 0:
		return s
	}
	s.Phase = copyDone
	s.TablesTotal = len(p.Tables)
	for _, t := range p.Tables {
		if t.Pending() {
			s.Phase = copyCopying
		}
		if t.Done {
			s.TablesDone++
			s.RowsTotal += t.Rows
		} else {
			s.RowsTotal += max(t.Estimated, t.Rows)
		}
		if len(t.DeferredKeys) > 0 {
			s.KeysToBuild++
		}
		s.RowsCopied += t.Rows
		if t.StartedAt > 0 && (s.StartedAt == 0 || t.StartedAt < s.StartedAt) {
			s.StartedAt = t.StartedAt
		}
		s.UpdatedAt = max(s.UpdatedAt, t.UpdatedAt)
	}
	pct := 100.0
	if s.TablesDone < s.TablesTotal {
		pct = 0
		if s.RowsTotal > 0 {
			// Not done is less than 100%, whatever the estimates said.
			pct = min(100*float64(s.RowsCopied)/float64(s.RowsTotal), 99.9)
		}
	}
	s.Percent = &pct
	if secs := s.UpdatedAt - s.StartedAt; s.StartedAt > 0 && secs > 0 {
		rate := float64(s.RowsCopied) / float64(secs)
		s.RowsPerSecond = &rate
		if left := s.RowsTotal - s.RowsCopied; rate > 0 {
			eta := int64(float64(max(left, 0))/rate + 0.5)
			s.ETASeconds = &eta
		}
	}
	if s.TablesDone == s.TablesTotal {
		eta := int64(0)
		s.ETASeconds = &eta
	}
	return s
}

// line is a copy's summary on one line: "42.0% (420 of ~1000 rows, 3 of 5 tables), 200
// rows/s, ETA 3s".
func (s copySummary) line() string {
	switch s.Phase {
	case copyNone:
		return "none"
	case copyPlanning:
		return "to be planned: the tables are listed when the copy starts"
	}
	out := fmt.Sprintf("%s (%d of ~%d rows, %d of %d tables)", s.percentText(), s.RowsCopied, s.RowsTotal, s.TablesDone, s.TablesTotal)
	if s.Phase == copyDone {
		return "done: " + out
	}
	rate, eta := "rate unknown", "ETA unknown"
	if s.RowsPerSecond != nil {
		rate = fmt.Sprintf("%.0f rows/s", *s.RowsPerSecond)
	}
	if s.ETASeconds != nil {
		eta = "ETA " + formatSeconds(*s.ETASeconds)
	}
	out += ", " + rate + ", " + eta
	if s.KeysToBuild > 0 {
		out += fmt.Sprintf(", secondary keys to build on %d tables afterwards", s.KeysToBuild)
	}
	return out
}

func (s copySummary) percentText() string {
	if s.Percent == nil {
		return "?%"
	}
	return fmt.Sprintf("%.1f%%", *s.Percent)
}

// copyRate is a table's rows copied per second, between its first and its last chunk; ok is
// false before two chunks a second apart.
func copyRate(c workflow.TableCopy) (float64, bool) {
	secs := c.UpdatedAt - c.StartedAt
	if c.StartedAt == 0 || secs <= 0 {
		return 0, false
	}
	return float64(c.Rows) / float64(secs), true
}

// copyETA is how long the table's copy should still take at its rate, in seconds; ok is false
// when that is unknown (no rate, or more rows copied than estimated: the estimate was low).
func copyETA(c workflow.TableCopy) (int64, bool) {
	if c.Done {
		return 0, true
	}
	rate, ok := copyRate(c)
	if !ok || rate <= 0 || c.Rows >= c.Estimated {
		return 0, false
	}
	return int64(float64(c.Estimated-c.Rows)/rate + 0.5), true
}

// renderCopyTables prints one workflow's copy in progress: one line per table with its rows
// copied, rows estimated, rate and ETA.
func renderCopyTables(w io.Writer, name string, tables []workflow.TableCopy) {
	fmt.Fprintf(w, "\ncopy of %s:\n", name)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  TABLE\tROWS COPIED\tROWS ESTIMATED\tRATE\tETA\tCHUNKS\tSTATE")
	for _, c := range tables {
		rate, eta, state := "-", "-", "copying"
		if v, ok := copyRate(c); ok {
			rate = fmt.Sprintf("%.0f rows/s", v)
		}
		if s, ok := copyETA(c); ok {
			eta = formatSeconds(s)
		}
		switch {
		case c.Done && len(c.DeferredKeys) > 0:
			state = "keys to build"
		case c.Done:
			state = "done"
		case c.Chunks == 0:
			state = "waiting"
		}
		fmt.Fprintf(tw, "  %s\t%d\t~%d\t%s\t%s\t%d\t%s\n", c.Table, c.Rows, c.Estimated, rate, eta, c.Chunks, state)
	}
	tw.Flush()
}

// copyJSON is one table's copy as status --json prints it.
type copyJSON struct {
	Table         string   `json:"table"`
	RowsCopied    int64    `json:"rows_copied"`
	RowsEstimated int64    `json:"rows_estimated"`
	RowsPerSecond *float64 `json:"rows_per_second"`
	ETASeconds    *int64   `json:"eta_seconds"`
	Chunks        int64    `json:"chunks"`
	Done          bool     `json:"done"`
	KeysToBuild   int      `json:"keys_to_build"`
	CopiedAt      string   `json:"copied_at"`
}

func toCopyJSON(c workflow.TableCopy) copyJSON {
	out := copyJSON{Table: c.Table, RowsCopied: c.Rows, RowsEstimated: c.Estimated, Chunks: c.Chunks, Done: c.Done,
		KeysToBuild: len(c.DeferredKeys), CopiedAt: c.CopiedAt}
	if v, ok := copyRate(c); ok {
		out.RowsPerSecond = &v
	}
	if v, ok := copyETA(c); ok {
		out.ETASeconds = &v
	}
	return out
}
