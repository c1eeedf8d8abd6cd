package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/vplayer/vplayer/workflow"
)

// readCopies reads the copy state of each record whose copy is in progress, by record id. A
// sidecar without copy state (an older vplayer's) has none.
func readCopies(ctx context.Context, store *workflow.Store, recs []workflow.Record) map[int64][]workflow.TableCopy {
	out := map[int64][]workflow.TableCopy{}
	for _, r := range recs {
		if r.State != workflow.StateCopying {
			continue
		}
		if st, err := store.CopyState(ctx, r.ID); err == nil && len(st) > 0 {
			out[r.ID] = st
		}
	}
	return out
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

// renderCopies prints, after the status table, each copy in progress: one line per table with
// its rows copied, rows estimated, rate and ETA.
func renderCopies(w io.Writer, recs []workflow.Record, copies map[int64][]workflow.TableCopy, now time.Time) {
	for _, r := range recs {
		st := copies[r.ID]
		if len(st) == 0 {
			continue
		}
		fmt.Fprintf(w, "\ncopy of %s:\n", r.Workflow)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  TABLE\tROWS COPIED\tROWS ESTIMATED\tRATE\tETA\tCHUNKS\tSTATE")
		for _, c := range st {
			rate, eta, state := "-", "-", "copying"
			if v, ok := copyRate(c); ok {
				rate = fmt.Sprintf("%.0f rows/s", v)
			}
			if s, ok := copyETA(c); ok {
				eta = formatSeconds(s)
			}
			switch {
			case c.Done:
				state = "done"
			case c.Chunks == 0:
				state = "waiting"
			}
			fmt.Fprintf(tw, "  %s\t%d\t~%d\t%s\t%s\t%d\t%s\n", c.Table, c.Rows, c.Estimated, rate, eta, c.Chunks, state)
		}
		tw.Flush()
	}
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
	CopiedAt      string   `json:"copied_at"`
}

func toCopyJSON(c workflow.TableCopy) copyJSON {
	out := copyJSON{Table: c.Table, RowsCopied: c.Rows, RowsEstimated: c.Estimated, Chunks: c.Chunks, Done: c.Done, CopiedAt: c.CopiedAt}
	if v, ok := copyRate(c); ok {
		out.RowsPerSecond = &v
	}
	if v, ok := copyETA(c); ok {
		out.ETASeconds = &v
	}
	return out
}
