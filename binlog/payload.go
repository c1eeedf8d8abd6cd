package binlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/klauspost/compress/zstd"

	"github.com/vplayer/vplayer/event"
)

// Compressed transactions (MySQL's binlog_transaction_compression): the source writes a
// transaction's events (BEGIN, table maps, rows events, its XID) into one TRANSACTION_PAYLOAD_EVENT,
// zstd-compressed, after the transaction's GTID event. go-mysql's parser decompresses such a
// payload whole and decodes every event in it before it returns, so a transaction of a gigabyte
// would cost gigabytes however small the relay log is.
//
// The reader decodes a payload as a stream instead: a streaming zstd decoder, the decompressed
// bytes cut into events by their headers, each event decoded by a parser of its own and
// translated, and its vplayer events put into the sink, before the next is decompressed. The
// relay log's backpressure then bounds what is decoded and not yet applied, as for any other
// event. go-mysql has no hook that keeps its parser from decoding a payload, so the reader runs
// its syncer in raw mode (RawModeEnabled: every event but the format description and rotations
// arrives undecoded) and decodes every event itself, with a parser configured as the syncer's
// was (newParser), except payloads, which it hands to translatePayload.
//
// What stays whole: the compressed payload, which the syncer reads as one event (it must fit in
// memory, as any event must), each decompressed event (a rows event is at most a few rows, or one
// big row), and the zstd window (2 MiB at MySQL's default compression level 3, at most 128 MiB at
// level 22).

// maxEventSize is the largest event a payload may hold: a source sends no event larger than its
// replica's max_allowed_packet, at most 1 GiB.
const maxEventSize = 1 << 30

// keepWindow is the largest zstd window whose decoder the reader keeps between payloads; a
// decoder that needed a larger one is released after its payload.
const keepWindow = 8 << 20

// Payload header fields (MySQL's Transaction_payload_event): type, length and value, each a
// length-encoded integer, up to a type of 0.
const (
	payloadHeaderEnd        = 0
	payloadSizeField        = 1
	payloadCompressionField = 2
	payloadUncompressedSize = 3
)

// Payload compression types.
const (
	compressionZstd = 0
	compressionNone = 255
)

// payloadHeader is the decoded header of a transaction payload event's body.
type payloadHeader struct {
	compression  uint64
	size         uint64 // the payload's size, as the source wrote it
	uncompressed uint64 // the size of the events inside, 0 when unknown
}

// parsePayloadHeader decodes the header of a transaction payload event's body (after the common
// header, without checksum) and returns it with the payload that follows it.
func parsePayloadHeader(body []byte) (payloadHeader, []byte, error) {
	var h payloadHeader
	b := body
	for {
		typ, n, err := lengthEncoded(b)
		if err != nil {
			return h, nil, fmt.Errorf("payload header field type: %w", err)
		}
		b = b[n:]
		if typ == payloadHeaderEnd {
			break
		}
		length, n, err := lengthEncoded(b)
		if err != nil {
			return h, nil, fmt.Errorf("payload header field %d length: %w", typ, err)
		}
		b = b[n:]
		if uint64(len(b)) < length {
			return h, nil, fmt.Errorf("payload header field %d: %d bytes, %d left", typ, length, len(b))
		}
		field := b[:length]
		b = b[length:]
		var dst *uint64
		switch typ {
		case payloadSizeField:
			dst = &h.size
		case payloadCompressionField:
			dst = &h.compression
		case payloadUncompressedSize:
			dst = &h.uncompressed
		default:
			continue // a field of a later version: its length says what to skip
		}
		v, n, err := lengthEncoded(field)
		if err != nil || n != len(field) {
			return h, nil, fmt.Errorf("payload header field %d: %d bytes that are no length-encoded integer", typ, len(field))
		}
		*dst = v
	}
	if h.size != uint64(len(b)) {
		return h, nil, fmt.Errorf("payload of %d bytes, its header says %d", len(b), h.size)
	}
	return h, b, nil
}

// lengthEncoded decodes the length-encoded integer at the start of b (the client/server
// protocol's: one byte below 251, else 0xfc, 0xfd or 0xfe and 2, 3 or 8 bytes, little-endian) and
// returns it with the bytes it takes.
func lengthEncoded(b []byte) (v uint64, n int, err error) {
	if len(b) == 0 {
		return 0, 0, io.ErrUnexpectedEOF
	}
	switch b[0] {
	case 0xfb, 0xff:
		return 0, 0, fmt.Errorf("no length-encoded integer starts with %#x", b[0])
	case 0xfc:
		n = 3
	case 0xfd:
		n = 4
	case 0xfe:
		n = 9
	default:
		return uint64(b[0]), 1, nil
	}
	if len(b) < n {
		return 0, 0, io.ErrUnexpectedEOF
	}
	for i := n - 1; i >= 1; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v, n, nil
}

// payloadDecoder decodes the events of transaction payload events one at a time. It holds the
// format description event in force, the parser of the events inside payloads, and a zstd
// decoder reused from one payload to the next. It starts no goroutine (its zstd decoder decodes
// synchronously); close releases it.
type payloadDecoder struct {
	flavor string
	rows   func(*replication.RowsEvent, []byte) error // the translator's decodeRows

	// format is the format description event in force, raw; checksum says the events outside
	// payloads end with a CRC32 (those inside carry none).
	format   []byte
	checksum bool
	// parser decodes the events inside payloads: a parser of the format with checksums off; nil
	// until the first payload after a format description event.
	parser *replication.BinlogParser

	zr   *zstd.Decoder // nil until the first compressed payload
	src  bytes.Reader
	head [replication.EventHeaderSize]byte
}

func newPayloadDecoder(flavor string, rows func(*replication.RowsEvent, []byte) error) *payloadDecoder {
	return &payloadDecoder{flavor: flavor, rows: rows}
}

// setFormat records the format description event ev, in force for the events after it.
func (d *payloadDecoder) setFormat(ev *replication.BinlogEvent, fde *replication.FormatDescriptionEvent) {
	d.format = ev.RawData
	d.checksum = fde.ChecksumAlgorithm == replication.BINLOG_CHECKSUM_ALG_CRC32
	d.parser = nil
}

// innerParser returns the parser of the events inside payloads: configured as the reader's own
// (its table maps' optional metadata decoded, see tableMeta), with the format in force but no
// checksums, which the events inside a payload do not carry. The format is given to the parser
// as the event it is, its checksum algorithm byte (the fifth byte from its end, before its own
// checksum) set to off.
func (d *payloadDecoder) innerParser() (*replication.BinlogParser, error) {
	if d.parser != nil {
		return d.parser, nil
	}
	if d.format == nil {
		return nil, errors.New("transaction payload before any format description event")
	}
	format := bytes.Clone(d.format)
	if d.checksum {
		format[len(format)-replication.BinlogChecksumLength-1] = byte(replication.BINLOG_CHECKSUM_ALG_OFF)
	}
	p := newParser(d.flavor, d.rows, nil)
	fev, err := p.Parse(format)
	if err != nil {
		return nil, fmt.Errorf("decode the format description event for a transaction payload: %w", err)
	}
	if _, ok := fev.Event.(*replication.FormatDescriptionEvent); !ok {
		return nil, fmt.Errorf("decode the format description event for a transaction payload: got %T", fev.Event)
	}
	d.parser = p
	return p, nil
}

// decode decodes the events of the transaction payload event raw (its bytes as the source sent
// them) in order, calling each with every one before it decompresses the next. An event passed to
// each is the caller's: nothing of it is reused.
func (d *payloadDecoder) decode(raw []byte, each func(*replication.BinlogEvent) error) error {
	if len(raw) < replication.EventHeaderSize {
		return fmt.Errorf("transaction payload event of %d bytes", len(raw))
	}
	body := raw[replication.EventHeaderSize:]
	if d.checksum {
		if len(body) < replication.BinlogChecksumLength {
			return fmt.Errorf("transaction payload event of %d bytes", len(raw))
		}
		body = body[:len(body)-replication.BinlogChecksumLength]
	}
	h, payload, err := parsePayloadHeader(body)
	if err != nil {
		return fmt.Errorf("decode transaction payload: %w", err)
	}
	p, err := d.innerParser()
	if err != nil {
		return err
	}
	r, done, err := d.open(h.compression, payload)
	if err != nil {
		return err
	}
	defer done()
	var read uint64
	for {
		if _, err := io.ReadFull(r, d.head[:]); err == io.EOF {
			break
		} else if err != nil {
			return fmt.Errorf("decompress transaction payload at byte %d: %w", read, err)
		}
		size := uint64(binary.LittleEndian.Uint32(d.head[9:13]))
		switch {
		case size < replication.EventHeaderSize || size > maxEventSize:
			return fmt.Errorf("decode transaction payload: event of %d bytes at byte %d", size, read)
		case h.uncompressed > 0 && read+size > h.uncompressed:
			return fmt.Errorf("decode transaction payload: event of %d bytes at byte %d of %d", size, read, h.uncompressed)
		}
		buf := make([]byte, size)
		copy(buf, d.head[:])
		if _, err := io.ReadFull(r, buf[replication.EventHeaderSize:]); err != nil {
			return fmt.Errorf("decompress transaction payload at byte %d: %w", read, noEOF(err))
		}
		ev, err := p.Parse(buf)
		if err != nil {
			return fmt.Errorf("decode the %s event at byte %d of a transaction payload: %w", replication.EventType(d.head[4]), read, err)
		}
		read += size
		if err := each(ev); err != nil {
			return err
		}
	}
	if h.uncompressed > 0 && read != h.uncompressed {
		return fmt.Errorf("decode transaction payload: %d bytes of events, its header says %d", read, h.uncompressed)
	}
	return nil
}

// open returns the decompressed stream of payload and a function that releases it.
func (d *payloadDecoder) open(compression uint64, payload []byte) (io.Reader, func(), error) {
	d.src.Reset(payload)
	release := func() { d.src.Reset(nil) }
	switch compression {
	case compressionNone:
		return &d.src, release, nil
	case compressionZstd:
	default:
		return nil, nil, fmt.Errorf("transaction payload compressed with type %d, which vplayer does not know (zstd is 0, none 255)", compression)
	}
	if d.zr == nil {
		zr, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, nil, fmt.Errorf("start a zstd decoder: %w", err)
		}
		d.zr = zr
	}
	if err := d.zr.Reset(&d.src); err != nil {
		return nil, nil, fmt.Errorf("decompress transaction payload: %w", err)
	}
	var fh zstd.Header
	big := fh.Decode(payload) == nil && fh.WindowSize > keepWindow
	return d.zr, func() {
		d.zr.Reset(nil) // drops its reference to the payload
		if big {
			d.close()
		}
		release()
	}, nil
}

// close releases the zstd decoder.
func (d *payloadDecoder) close() {
	if d.zr != nil {
		d.zr.Close()
		d.zr = nil
	}
}

// noEOF turns the end of the stream inside an event into the truncation it is.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// translatePayload translates the transaction payload event ev as a stream: its events are
// decoded by d one at a time, and the vplayer events of each are handed to put before the next is
// decompressed. A payload of a transaction the start position contains is dropped undecoded. An
// error of put is returned as it is; any other names the payload's end in the binlog file and
// the position (which, in a GTID workflow, includes the transaction).
func (t *translator) translatePayload(ev *replication.BinlogEvent, d *payloadDecoder, put func([]*event.Event) error) error {
	t.out = t.out[:0]
	if t.skip.drop(ev.Event) {
		return nil
	}
	pos := t.posString()
	t.enterPayload(ev.Header)
	defer t.leavePayload()
	var putErr error
	err := d.decode(ev.RawData, func(inner *replication.BinlogEvent) error {
		out, err := t.translate(inner)
		if err != nil {
			return err
		}
		putErr = put(out)
		return putErr
	})
	if err != nil && putErr == nil {
		return fmt.Errorf("read the transaction payload ending at binlog offset %d (position %s): %w", ev.Header.LogPos, pos, err)
	}
	return err
}

// decodedPayload translates a transaction payload (MySQL binlog_transaction_compression: a
// whole transaction inside one event) whose events go-mysql's parser decoded whole (e.Events), in
// one call. The reader decodes a payload's events as a stream instead (translatePayload).
func (t *translator) decodedPayload(h *replication.EventHeader, e *replication.TransactionPayloadEvent) ([]*event.Event, error) {
	var all []*event.Event
	t.enterPayload(h)
	defer t.leavePayload()
	for _, inner := range e.Events {
		out, err := t.translate(inner)
		if err != nil {
			return nil, err
		}
		all = append(all, out...)
	}
	t.out = append(t.out[:0], all...)
	return t.out, nil
}

// enterPayload starts the events of the transaction payload event h. They carry no end position:
// the payload's own is where the transaction ends. Their table maps are decoded whole by the
// payload's parser (see tableMeta).
func (t *translator) enterPayload(h *replication.EventHeader) {
	if t.pos.Flavor == FlavorFilePos && h.LogPos > 0 {
		t.pos.Offset = h.LogPos
	}
	t.inPayload = true
}

// leavePayload ends the events of the payload enterPayload started.
func (t *translator) leavePayload() { t.inPayload = false }
