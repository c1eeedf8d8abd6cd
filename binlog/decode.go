package binlog

import (
	"fmt"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
)

// newParser returns a go-mysql parser that decodes events as vplayer reads them: the source's
// flavor, DECIMAL values as decimals (UseDecimal: never through a float), MySQL's binary JSON as
// text whose doubles keep a fractional part (1.0, not 1, so that the target parses them back as
// doubles), temporal values as the strings the binlog holds, TIMESTAMPs in UTC. Rows events are
// decoded by rows (the translator's decodeRows), table maps' optional metadata by meta when it
// is not nil (skipOptionalMeta: see tablemap.go), else by go-mysql.
func newParser(flavor string, rows func(*replication.RowsEvent, []byte) error, meta func([]byte) error) *replication.BinlogParser {
	p := replication.NewBinlogParser()
	p.SetFlavor(flavor)
	p.SetUseDecimal(true)
	p.SetUseFloatWithTrailingZero(true)
	p.SetParseTime(false)
	p.SetTimestampStringLocation(time.UTC)
	p.SetRowsEventDecodeFunc(rows)
	if meta != nil {
		p.SetTableMapOptionalMetaDecodeFunc(meta)
	}
	return p
}

// eventDecoder decodes the events the syncer passes undecoded (its raw mode: see payload.go),
// on the syncer's goroutine, each before the next is read: every event but transaction payloads,
// which translatePayload decodes as a stream through payload.
type eventDecoder struct {
	parser  *replication.BinlogParser
	payload *payloadDecoder
}

// newEventDecoder returns the decoder of a stream of the given go-mysql flavor translated by t.
func newEventDecoder(flavor string, t *translator) *eventDecoder {
	return &eventDecoder{
		parser:  newParser(flavor, t.decodeRows, skipOptionalMeta),
		payload: newPayloadDecoder(flavor, t.decodeRows),
	}
}

// decode returns raw, an event as the syncer read it, decoded; a transaction payload event is
// returned as it is, for translatePayload.
func (d *eventDecoder) decode(raw *replication.BinlogEvent) (*replication.BinlogEvent, error) {
	if raw.Header.EventType == replication.TRANSACTION_PAYLOAD_EVENT {
		return raw, nil
	}
	ev, err := d.parser.Parse(raw.RawData)
	if err != nil {
		return nil, fmt.Errorf("decode %s event: %w", raw.Header.EventType, err)
	}
	if fde, ok := ev.Event.(*replication.FormatDescriptionEvent); ok {
		d.payload.setFormat(ev, fde)
	}
	return ev, nil
}

// close releases what the decoder holds between events.
func (d *eventDecoder) close() { d.payload.close() }
