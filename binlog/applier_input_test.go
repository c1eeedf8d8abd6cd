package binlog

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/vplayer/vplayer/event"
	"github.com/vplayer/vplayer/internal/eventjson"
)

// applierCaptureEvents is the events file of the applier's golden case planned from the basic
// capture: the capture decoded by the translator (database shop), in the applier's golden
// input form (applier/plan/golden_test.go reads it).
const applierCaptureEvents = "../testdata/applier/capture-basic/events.json"

func jsonImage(t *testing.T, vals []any) []any {
	t.Helper()
	if vals == nil {
		return nil
	}
	out := make([]any, len(vals))
	for i, v := range vals {
		switch x := v.(type) {
		case nil, string:
			out[i] = x
		case int8, int16, int32, int64:
			out[i] = x
		case decimal.Decimal:
			out[i] = x.String()
		case []byte:
			out[i] = string(x)
		default:
			t.Fatalf("value %v of Go type %T: not in the applier's golden input form", v, v)
		}
	}
	return out
}

func jsonEvents(t *testing.T, evs []*event.Event) []eventjson.Event {
	t.Helper()
	var out []eventjson.Event
	for _, e := range evs {
		je := eventjson.Event{Type: e.Type.String(), Pos: e.Pos, TS: e.Timestamp, GTID: e.GTID, XID: e.XID,
			NoFK: e.NoForeignKeyChecks, Schema: e.Schema, Query: e.Query, DBRefs: e.DBRefs, Size: e.Size}
		if e.Type == event.Rows {
			je.Table, je.Columns, je.Kind = e.Table.Name, e.Table.ColumnCount, e.Kind.String()
			je.BeforeCols, je.AfterCols = columnList(e.BeforeCols, e.Table.ColumnCount), columnList(e.AfterCols, e.Table.ColumnCount)
			for _, r := range e.Rows {
				je.Rows = append(je.Rows, eventjson.Row{Before: jsonImage(t, r.Before), After: jsonImage(t, r.After)})
			}
		}
		out = append(out, je)
	}
	return out
}

// TestCapture_applierInput: the applier's golden case capture-basic plans the events this
// package decodes from the basic capture; -update writes them.
func TestCapture_applierInput(t *testing.T) {
	c := loadCapture(t, basicCapture)
	tr := newTranslator(emptyMariaDB(t), mustFilter(t, "shop"))
	evs := jsonEvents(t, translateAll(t, tr, parseCapture(t, c, 4)))
	// Two fetches, cut after the bulk insert's transaction (GTID 0-1-11), so that the batch
	// before holds the capture's DDL and the one after its mixed transaction.
	cut := -1
	for i, e := range evs {
		if e.Type == event.Commit.String() && e.Pos == fmt.Sprintf("MariaDB/0-%d-11", captureServerID) {
			cut = i + 1
		}
	}
	if cut < 0 {
		t.Fatal("no commit of GTID 11 in the capture")
	}
	// One event a line.
	fetches := [][]eventjson.Event{evs[:cut], evs[cut:]}
	var b strings.Builder
	b.WriteString("[\n")
	for f, fetch := range fetches {
		b.WriteString(" [\n")
		for i, e := range fetch {
			line, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			b.WriteString("  ")
			b.Write(line)
			if i < len(fetch)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(" ]")
		if f < len(fetches)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("]\n")
	got := b.String()
	if *update {
		if err := os.MkdirAll(filepath.Dir(applierCaptureEvents), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(applierCaptureEvents, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(applierCaptureEvents)
	if err != nil {
		t.Fatalf("%v (write it with: go test ./binlog -run TestCapture_applierInput -update)", err)
	}
	if string(want) != got {
		t.Errorf("%s is not what the translator decodes from %s: regenerate it with go test ./binlog -run TestCapture_applierInput -update, then the applier's golden files with go test ./applier/plan -run Golden -update",
			applierCaptureEvents, c.dir)
	}
}

// columnList lists the columns of a partial image; nil for a full one.
func columnList(c event.Columns, n int) []int {
	if c == nil {
		return nil
	}
	out := []int{}
	for i := range n {
		if c.Has(i) {
			out = append(out, i)
		}
	}
	return out
}
