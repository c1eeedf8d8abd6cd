package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/vplayer/vplayer/workflow"
)

func TestRenderCopies(t *testing.T) {
	now := time.Unix(1_700_000_100, 0)
	recs := []workflow.Record{{ID: 3, Workflow: "orders", State: workflow.StateCopying, Pos: "MariaDB/0-1-9"}}
	copies := map[int64][]workflow.TableCopy{3: {
		{Table: "customers", Rows: 5000, Estimated: 5000, Chunks: 5, Done: true, StartedAt: 1_700_000_000, UpdatedAt: 1_700_000_010},
		{Table: "orders", Rows: 2000, Estimated: 10000, Chunks: 2, StartedAt: 1_700_000_010, UpdatedAt: 1_700_000_020},
		{Table: "zeta", Estimated: 7},
	}}
	var b strings.Builder
	if err := renderStatusTableCopies(&b, recs, copies, now); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"copy of orders:",
		"customers  5000         ~5000           500 rows/s  0s   5       done",
		"orders     2000         ~10000          200 rows/s  40s  2       copying",
		"zeta       0            ~7              -           -    0       waiting",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	if err := renderStatusJSONCopies(&b, recs, copies, now); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); !strings.Contains(got, `"rows_per_second": 200`) || !strings.Contains(got, `"eta_seconds": 40`) {
		t.Errorf("status --json lacks the orders table's rate and ETA:\n%s", got)
	}
}
