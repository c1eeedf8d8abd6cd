package binlog

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vplayer/vplayer/event"
)

// The oltp capture's workload: two tables shaped like sysbench's (and vplayer bench's), loaded
// with oltpLoadRows rows each, then oltpWriteTxns transactions of the oltp_write_only mix and
// oltpInsertTxns insert-only transactions, with the proportions of vplayer bench's backlogs.
const (
	oltpLoadRows   = 25
	oltpWriteTxns  = 60
	oltpInsertTxns = 60
)

var oltpTables = []string{"sbtest1", "sbtest2"}

// oltpScript returns the oltp capture's workload, the same at every call. Annotated rows events
// are turned off for the session: the binlog dump does not send them unless asked, and without
// them the capture stays small.
func oltpScript() []captureStep {
	rng := rand.New(rand.NewPCG(14, 14))
	digits := func(groups int) string {
		var b strings.Builder
		for i := 0; i < groups; i++ {
			if i > 0 {
				b.WriteByte('-')
			}
			for j := 0; j < 11; j++ {
				b.WriteByte(byte('0' + rng.IntN(10)))
			}
		}
		return b.String()
	}
	tuple := func(id int) string {
		return fmt.Sprintf("(%d, %d, '%s', '%s')", id, 1+rng.IntN(oltpLoadRows), digits(10), digits(5))
	}
	insert := func(t string, ids ...int) string {
		rows := make([]string, len(ids))
		for i, id := range ids {
			rows[i] = tuple(id)
		}
		return "INSERT INTO " + t + " (id, k, c, pad) VALUES " + strings.Join(rows, ", ")
	}
	table := func() string { return oltpTables[rng.IntN(len(oltpTables))] }
	id := func() int { return 1 + rng.IntN(oltpLoadRows) }

	script := []captureStep{
		{"CREATE DATABASE", []string{"CREATE DATABASE shop"}},
	}
	for i, t := range oltpTables {
		stmts := []string{"CREATE TABLE " + t + " (id INT NOT NULL, k INT NOT NULL DEFAULT 0, c CHAR(120) NOT NULL DEFAULT '', " +
			"pad CHAR(60) NOT NULL DEFAULT '', PRIMARY KEY (id), KEY k_1 (k)) ENGINE=InnoDB"}
		if i == 0 {
			stmts = append([]string{"USE shop", "SET SESSION binlog_annotate_row_events = OFF"}, stmts...)
		}
		script = append(script, captureStep{"CREATE TABLE " + t, stmts})
	}
	next := map[string]int{}
	for _, t := range oltpTables {
		ids := make([]int, oltpLoadRows)
		for i := range ids {
			ids[i] = i + 1
		}
		script = append(script, captureStep{"load " + t, []string{insert(t, ids...)}})
		next[t] = oltpLoadRows
	}
	for range oltpWriteTxns {
		stmts := []string{"BEGIN",
			"UPDATE " + table() + " SET k = k + 1 WHERE id = " + strconv.Itoa(id()),
			"UPDATE " + table() + " SET c = '" + digits(10) + "' WHERE id = " + strconv.Itoa(id())}
		t, key := table(), id()
		stmts = append(stmts, "DELETE FROM "+t+" WHERE id = "+strconv.Itoa(key), insert(t, key), "COMMIT")
		script = append(script, captureStep{"oltp_write_only: update k by key, update c by key, delete + re-insert of a key", stmts})
	}
	ids := func(t string, n int) []int {
		out := make([]int, n)
		for i := range out {
			next[t]++
			out[i] = next[t]
		}
		return out
	}
	for range oltpInsertTxns {
		t := table()
		switch p := rng.IntN(4); {
		case p < 2:
			script = append(script, captureStep{"inserts only: one single-row INSERT", []string{insert(t, ids(t, 1)...)}})
		case p == 2:
			script = append(script, captureStep{"inserts only: one 10-row INSERT", []string{insert(t, ids(t, 10)...)}})
		default:
			stmts := []string{"BEGIN"}
			for range 5 {
				stmts = append(stmts, insert(t, ids(t, 1)...))
			}
			script = append(script, captureStep{"inserts only: five single-row INSERTs in one transaction", append(stmts, "COMMIT")})
		}
	}
	return script
}

// rawEvents returns the capture's events as the binlog dump delivers them to go-mysql's parser:
// the raw bytes of each event, the format description event first.
func rawEvents(b testing.TB, c capture) [][]byte {
	b.Helper()
	var out [][]byte
	for _, ev := range parseCapture(b, c, 4) {
		out = append(out, ev.RawData)
	}
	return out
}

// discard is a sink that keeps nothing and counts the row changes it is given.
type discard struct{ rows int }

func (d *discard) Put(_ context.Context, e *event.Event) error {
	if e.Type == event.Rows {
		d.rows += len(e.Rows)
	}
	return nil
}

// decodeStream parses raw events with a parser in raw mode, as the reader's syncer does, and
// hands them to the reader's handler, which decodes and translates them into sink.
func decodeStream(tb testing.TB, raw [][]byte, start Position, f *Filter, sink *discard) {
	p := replication.NewBinlogParser()
	p.SetRawMode(true)
	ctx := context.Background()
	logger := slog.New(slog.DiscardHandler)
	t := newTranslator(start, f)
	t.metaFlavor = "mariadb"
	h := &handler{ctx: ctx, rctx: ctx, start: start, t: t, dec: newEventDecoder("mariadb", t), w: newPaceWatch(time.Second, logger), sink: sink, logger: logger}
	for _, data := range raw {
		ev, err := p.Parse(data)
		if err != nil {
			tb.Fatal(err)
		}
		if err := h.HandleEvent(ev); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkDecode decodes the oltp capture, the shape of vplayer bench's backlogs, from the
// bytes of its events to vplayer's events in a sink: go-mysql's parsing and the reader's
// handling of each event (the pace's bookkeeping, the translation). It reports
// the time and the allocations per row change.
//
//	go test ./binlog -run '^$' -bench Decode -count 6
func BenchmarkDecode(b *testing.B) {
	c := loadCapture(b, oltpCapture)
	raw := rawEvents(b, c)
	start, f := emptyMariaDB(b), mustFilter(b, "shop")
	var probe discard
	decodeStream(b, raw, start, f, &probe)
	if probe.rows == 0 {
		b.Fatal("the capture has no row change")
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	n := 0
	for b.Loop() {
		decodeStream(b, raw, start, f, &discard{})
		n++
	}
	runtime.ReadMemStats(&after)
	rows := float64(n * probe.rows)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/rows, "ns/row")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/rows, "allocs/row")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/rows, "B/row")
}
