package binlog

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vplayer/vplayer/event"
)

// TestTableMeta_skipped: with the syncer's parser skipping the table maps' optional metadata,
// the translator decodes it for each new definition and yields the same events, table
// definitions (column names, signedness) included, as from fully decoded table maps.
func TestTableMeta_skipped(t *testing.T) {
	for _, cc := range []captureCase{basicCapture, oltpCapture} {
		t.Run(filepath.Base(cc.dir), func(t *testing.T) {
			c := loadCapture(t, cc)
			whole := translateAll(t, newTranslator(emptyMariaDB(t), mustFilter(t, "shop")), parseCapture(t, c, 4))

			p := newCaptureParser()
			p.SetTableMapOptionalMetaDecodeFunc(skipOptionalMeta)
			var evs []*replication.BinlogEvent
			for _, name := range c.files {
				if err := p.ParseFile(filepath.Join(c.dir, name), 4, func(e *replication.BinlogEvent) error {
					if tm, ok := e.Event.(*replication.TableMapEvent); ok && tm.ColumnName != nil {
						t.Fatalf("the parser decoded the column names of %s.%s: it was to skip them", tm.Schema, tm.Table)
					}
					evs = append(evs, e)
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			tr := newTranslator(emptyMariaDB(t), mustFilter(t, "shop"))
			tr.metaFlavor = "mariadb"
			skipped := translateAll(t, tr, evs)

			if len(skipped) != len(whole) {
				t.Fatalf("%d events with the metadata skipped, %d with it decoded", len(skipped), len(whole))
			}
			var named int
			for i := range whole {
				if !reflect.DeepEqual(skipped[i], whole[i]) {
					t.Errorf("event %d with the metadata skipped:\n%+v\nwith it decoded:\n%+v", i, skipped[i], whole[i])
				}
				if e := skipped[i]; e.Type == event.Rows && len(e.Table.ColumnNames) == e.Table.ColumnCount && e.Table.Unsigned != nil {
					named++
				}
			}
			if named == 0 {
				t.Error("no rows event's table has column names and signedness: the capture has no metadata to compare")
			}
		})
	}
}

// TestDecodeRows_filtered: with the reader's rows decoder, each event parsed after the one
// before was translated (as the syncer's handler runs), the rows of a table the filter leaves
// out are not decoded, and the events are those of a full decoding.
func TestDecodeRows_filtered(t *testing.T) {
	c := loadCapture(t, basicCapture)
	for _, db := range []string{"shop", "other"} {
		t.Run(db, func(t *testing.T) {
			whole := translateAll(t, newTranslator(emptyMariaDB(t), mustFilter(t, db)), parseCapture(t, c, 4))

			tr := newTranslator(emptyMariaDB(t), mustFilter(t, db))
			p := newCaptureParser()
			p.SetRowsEventDecodeFunc(tr.decodeRows)
			var got []*event.Event
			var undecoded, decoded int
			for _, name := range c.files {
				if err := p.ParseFile(filepath.Join(c.dir, name), 4, func(e *replication.BinlogEvent) error {
					if re, ok := e.Event.(*replication.RowsEvent); ok {
						if re.Rows == nil {
							undecoded++
						} else {
							decoded++
						}
					}
					out, err := tr.translate(e)
					got = append(got, out...)
					return err
				}); err != nil {
					t.Fatal(err)
				}
			}
			if !reflect.DeepEqual(got, whole) {
				t.Errorf("events with the filtered rows undecoded differ from a full decoding:\n%v\nwant\n%v", summaries(got), summaries(whole))
			}
			if undecoded == 0 || decoded == 0 {
				t.Errorf("%d rows events undecoded and %d decoded, want some of each: the capture has rows of shop and of other", undecoded, decoded)
			}
		})
	}
}
