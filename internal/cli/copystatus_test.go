package cli

import (
	"strings"
	"testing"

	"github.com/vplayer/vplayer/workflow"
)

func TestRenderCopyTables(t *testing.T) {
	tables := []workflow.TableCopy{
		{Table: "customers", Rows: 5000, Estimated: 5000, Chunks: 5, Done: true, StartedAt: 1_700_000_000, UpdatedAt: 1_700_000_010},
		{Table: "orders", Rows: 2000, Estimated: 10000, Chunks: 2, StartedAt: 1_700_000_010, UpdatedAt: 1_700_000_020},
		{Table: "zeta", Estimated: 7},
		{Table: "zkeys", Rows: 3, Estimated: 3, Chunks: 1, Done: true, DeferredKeys: []string{"KEY `k` (`v`)"}},
	}
	var b strings.Builder
	renderCopyTables(&b, "orders", tables)
	out := b.String()
	for _, want := range []string{
		"copy of orders:",
		"customers  5000         ~5000           500 rows/s  0s   5       done",
		"orders     2000         ~10000          200 rows/s  40s  2       copying",
		"zeta       0            ~7              -           -    0       waiting",
		"zkeys      3            ~3              -           0s   1       keys to build",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("copy tables lack %q:\n%s", want, out)
		}
	}
}

func TestSummarizeCopy(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	i := func(v int64) *int64 { return &v }
	tests := []struct {
		name        string
		in          workflow.CopyProgress
		phase       string
		percent     *float64
		rate        *float64
		eta         *int64
		rows, total int64
		line        string
	}{
		{name: "none", phase: copyNone, line: "none"},
		{name: "to plan", in: workflow.CopyProgress{ToPlan: true}, phase: copyPlanning, line: "to be planned: the tables are listed when the copy starts"},
		{
			name: "copying",
			in: workflow.CopyProgress{Tables: []workflow.TableCopy{
				{Table: "a", Rows: 600, Estimated: 500, Done: true, StartedAt: 100, UpdatedAt: 105},
				{Table: "b", Rows: 400, Estimated: 1400, StartedAt: 105, UpdatedAt: 110},
			}},
			phase: copyCopying, percent: f(50), rate: f(100), eta: i(10), rows: 1000, total: 2000,
			line: "50.0% (1000 of ~2000 rows, 1 of 2 tables), 100 rows/s, ETA 10s",
		},
		{
			name: "estimate too low: below 100% until done",
			in: workflow.CopyProgress{Tables: []workflow.TableCopy{
				{Table: "a", Rows: 900, Estimated: 100, StartedAt: 100, UpdatedAt: 109},
			}},
			phase: copyCopying, percent: f(99.9), rate: f(100), eta: i(0), rows: 900, total: 900,
			line: "99.9% (900 of ~900 rows, 0 of 1 tables), 100 rows/s, ETA 0s",
		},
		{
			name: "no rate yet, keys left",
			in: workflow.CopyProgress{Tables: []workflow.TableCopy{
				{Table: "a", Estimated: 10},
				{Table: "b", Rows: 5, Estimated: 5, Done: true, DeferredKeys: []string{"KEY `k` (`v`)"}},
			}},
			phase: copyCopying, percent: f(100 * 5.0 / 15), rows: 5, total: 15,
			line: "33.3% (5 of ~15 rows, 1 of 2 tables), rate unknown, ETA unknown, secondary keys to build on 1 tables afterwards",
		},
		{
			name: "done",
			in: workflow.CopyProgress{Tables: []workflow.TableCopy{
				{Table: "a", Rows: 10, Estimated: 12, Done: true, StartedAt: 100, UpdatedAt: 100},
			}},
			phase: copyDone, percent: f(100), eta: i(0), rows: 10, total: 10,
			line: "done: 100.0% (10 of ~10 rows, 1 of 1 tables)",
		},
	}
	eqF := func(a, b *float64) bool {
		return a == nil && b == nil || a != nil && b != nil && *a-*b < 1e-9 && *b-*a < 1e-9
	}
	eqI := func(a, b *int64) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := summarizeCopy(tt.in)
			if s.Phase != tt.phase || s.RowsCopied != tt.rows || s.RowsTotal != tt.total {
				t.Errorf("summarizeCopy: phase %s, rows %d of %d; want %s, %d of %d", s.Phase, s.RowsCopied, s.RowsTotal, tt.phase, tt.rows, tt.total)
			}
			if !eqF(s.Percent, tt.percent) || !eqF(s.RowsPerSecond, tt.rate) || !eqI(s.ETASeconds, tt.eta) {
				t.Errorf("summarizeCopy: percent %v, rate %v, eta %v; want %v, %v, %v", deref(s.Percent), deref(s.RowsPerSecond), deref(s.ETASeconds),
					deref(tt.percent), deref(tt.rate), deref(tt.eta))
			}
			if got := s.line(); got != tt.line {
				t.Errorf("line()=%q, want %q", got, tt.line)
			}
		})
	}
}

// deref prints a pointer's value, or nil.
func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
