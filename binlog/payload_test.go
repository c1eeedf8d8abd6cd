package binlog

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/klauspost/compress/zstd"
	"go.uber.org/goleak"

	"github.com/vplayer/vplayer/event"
)

// No MySQL server runs here, so compressed transactions are built byte by byte as a MySQL 8
// source sends them (binlog_transaction_compression=ON): a format description event with CRC32
// checksums, then per transaction a GTID event and a TRANSACTION_PAYLOAD_EVENT whose zstd stream
// holds the transaction's events (BEGIN, table maps, rows events, XID) without checksums and
// with an end position of 0, its header fields length-encoded (compression type, uncompressed
// size, payload size, end mark).

// mysql8PostHeaders are the post-header lengths of event types 1 to 41, as in a MySQL 8.0 format
// description event. go-mysql reads the table map's and the rows events' (6-byte table ids).
var mysql8PostHeaders = []byte{
	56, 13, 0, 8, 0, 0, 0, 0, 4, 0, 4, 0, 0, 0, 98, 0, 4, 26, 8, 0, // 1-20
	0, 0, 8, 8, 8, 2, 0, 0, 0, 10, 10, 10, 42, 42, 0, 18, 52, 0, 10, 0, // 21-40
	0, // 41
}

const payloadTestTime = 1767322800 // 2026-01-02 03:00:00 UTC

// mysqlStream frames events as a MySQL 8 source sends them: each with its end position in the
// binlog file and a CRC32 checksum.
type mysqlStream struct {
	pos    uint32 // where the next event starts
	events [][]byte
}

func newMySQLStream() *mysqlStream {
	s := &mysqlStream{pos: 4}
	fde := binary.LittleEndian.AppendUint16(nil, 4)
	version := make([]byte, 50)
	copy(version, "8.0.36")
	fde = append(fde, version...)
	fde = binary.LittleEndian.AppendUint32(fde, payloadTestTime)
	fde = append(fde, replication.EventHeaderSize)
	fde = append(fde, mysql8PostHeaders...)
	fde = append(fde, byte(replication.BINLOG_CHECKSUM_ALG_CRC32))
	s.add(replication.FORMAT_DESCRIPTION_EVENT, fde)
	return s
}

// add appends the event of type typ and body, and returns its bytes.
func (s *mysqlStream) add(typ replication.EventType, body []byte) []byte {
	size := uint32(replication.EventHeaderSize + len(body) + replication.BinlogChecksumLength)
	ev := eventHeader(typ, size, s.pos+size)
	ev = append(ev, body...)
	ev = binary.LittleEndian.AppendUint32(ev, crc32.ChecksumIEEE(ev))
	s.pos += size
	s.events = append(s.events, ev)
	return ev
}

func eventHeader(typ replication.EventType, size, logPos uint32) []byte {
	h := binary.LittleEndian.AppendUint32(nil, payloadTestTime)
	h = append(h, byte(typ))
	h = binary.LittleEndian.AppendUint32(h, 1) // server id
	h = binary.LittleEndian.AppendUint32(h, size)
	h = binary.LittleEndian.AppendUint32(h, logPos)
	return binary.LittleEndian.AppendUint16(h, 0) // flags
}

// innerEvent frames an event of a transaction payload: no checksum, an end position of 0.
func innerEvent(typ replication.EventType, body []byte) []byte {
	return append(eventHeader(typ, uint32(replication.EventHeaderSize+len(body)), 0), body...)
}

// gtidBody is a MySQL 8.0 GTID event's body: transaction uuid:gno, logical clock, commit
// timestamp, transaction length, server version.
func gtidBody(uuid string, gno int64) []byte {
	sid, err := hex.DecodeString(strings.ReplaceAll(uuid, "-", ""))
	if err != nil || len(sid) != 16 {
		panic(fmt.Sprintf("server uuid %q: %v", uuid, err))
	}
	b := append([]byte{1}, sid...)
	b = binary.LittleEndian.AppendUint64(b, uint64(gno))
	b = append(b, replication.LogicalTimestampTypeCode)
	b = binary.LittleEndian.AppendUint64(b, uint64(gno-1)) // last committed
	b = binary.LittleEndian.AppendUint64(b, uint64(gno))   // sequence number
	b = append(b, binary.LittleEndian.AppendUint64(nil, uint64(payloadTestTime)*1000000)[:7]...)
	b = append(b, 0x10)                               // transaction length (not checked)
	return binary.LittleEndian.AppendUint32(b, 80036) // server version
}

func queryBody(schema, q string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 7) // thread id
	b = binary.LittleEndian.AppendUint32(b, 0)    // execution time
	b = append(b, byte(len(schema)))
	b = binary.LittleEndian.AppendUint16(b, 0) // error code
	b = binary.LittleEndian.AppendUint16(b, 0) // status variables length
	b = append(append(b, schema...), 0)
	return append(b, q...)
}

func xidBody(xid uint64) []byte { return binary.LittleEndian.AppendUint64(nil, xid) }

// Columns of the tables of these tests: id INT, note VARCHAR(255) CHARACTER SET utf8mb4 and body
// LONGBLOB, logged with binlog_row_metadata=FULL (names and signedness).
var payloadColumns = []string{"id", "note", "body"}

func tableMapBody(tableID uint64, schema, table string) []byte {
	b := binary.LittleEndian.AppendUint64(nil, tableID)[:6]
	b = binary.LittleEndian.AppendUint16(b, 1) // flags
	b = append(append(append(b, byte(len(schema))), schema...), 0)
	b = append(append(append(b, byte(len(table))), table...), 0)
	b = append(b, 3, mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_BLOB)
	b = append(b, 3)                                               // metadata: 3 bytes
	b = binary.LittleEndian.AppendUint16(b, 255*4)                 // VARCHAR: its maximum length in bytes
	b = append(b, 4)                                               // LONGBLOB: a 4-byte length
	b = append(b, 0b110)                                           // nullable: note and body
	b = append(b, replication.TABLE_MAP_OPT_META_SIGNEDNESS, 1, 0) // id is signed
	var names []byte
	for _, n := range payloadColumns {
		names = append(append(names, byte(len(n))), n...)
	}
	b = append(b, replication.TABLE_MAP_OPT_META_COLUMN_NAME, byte(len(names)))
	return append(b, names...)
}

// payloadRow is one row of the tables of these tests; a nil body is NULL.
type payloadRow struct {
	id   int32
	note string
	body []byte
}

func appendRowImage(b []byte, r payloadRow) []byte {
	nulls := byte(0)
	if r.body == nil {
		nulls = 0b100
	}
	b = append(b, nulls)
	b = binary.LittleEndian.AppendUint32(b, uint32(r.id))
	b = binary.LittleEndian.AppendUint16(b, uint16(len(r.note)))
	b = append(b, r.note...)
	if r.body != nil {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(r.body)))
		b = append(b, r.body...)
	}
	return b
}

// rowsBody is a version 2 rows event's body for images: each row's image (an update's before and
// after images in turn), every column present; last marks the statement's last rows event.
func rowsBody(typ replication.EventType, tableID uint64, last bool, images ...payloadRow) []byte {
	b := binary.LittleEndian.AppendUint64(nil, tableID)[:6]
	var flags uint16
	if last {
		flags = replication.RowsEventStmtEndFlag
	}
	b = binary.LittleEndian.AppendUint16(b, flags)
	b = binary.LittleEndian.AppendUint16(b, 2) // no extra data
	b = append(b, 3, 0b111)                    // 3 columns, all present
	if typ == replication.UPDATE_ROWS_EVENTv2 {
		b = append(b, 0b111)
	}
	for _, r := range images {
		b = appendRowImage(b, r)
	}
	return b
}

// putLengthEncoded appends v as MySQL's net_store_length writes it.
func putLengthEncoded(b []byte, v uint64) []byte {
	switch {
	case v < 251:
		return append(b, byte(v))
	case v < 1<<16:
		return binary.LittleEndian.AppendUint16(append(b, 0xfc), uint16(v))
	case v < 1<<24:
		return append(b, 0xfd, byte(v), byte(v>>8), byte(v>>16))
	}
	return binary.LittleEndian.AppendUint64(append(b, 0xfe), v)
}

func lengthEncodedSize(v uint64) uint64 { return uint64(len(putLengthEncoded(nil, v))) }

// payloadBody is a TRANSACTION_PAYLOAD_EVENT's body, as MySQL's encoder lays it out.
func payloadBody(compression, uncompressed uint64, payload []byte) []byte {
	field := func(b []byte, typ, v uint64) []byte {
		return putLengthEncoded(putLengthEncoded(putLengthEncoded(b, typ), lengthEncodedSize(v)), v)
	}
	b := field(nil, payloadCompressionField, compression)
	if compression != compressionNone {
		b = field(b, payloadUncompressedSize, uncompressed)
	}
	b = field(b, payloadSizeField, uint64(len(payload)))
	return append(append(b, payloadHeaderEnd), payload...)
}

// testZstdWriter returns a streaming zstd encoder set as MySQL's default level 3 compresses a
// transaction: level 3's 2 MiB window, no content size in the frame header.
func testZstdWriter(t testing.TB, w io.Writer) *zstd.Encoder {
	t.Helper()
	enc, err := zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithWindowSize(2<<20),
		zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	return enc
}

// compressedPayload returns the TRANSACTION_PAYLOAD_EVENT body of events, zstd-compressed.
func compressedPayload(t testing.TB, events ...[]byte) []byte {
	t.Helper()
	var raw, out bytes.Buffer
	for _, e := range events {
		raw.Write(e)
	}
	enc := testZstdWriter(t, &out)
	if _, err := enc.Write(raw.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return payloadBody(compressionZstd, uint64(raw.Len()), out.Bytes())
}

// uncompressedPayload returns the TRANSACTION_PAYLOAD_EVENT body of events, not compressed
// (compression type NONE).
func uncompressedPayload(events ...[]byte) []byte {
	return payloadBody(compressionNone, 0, bytes.Join(events, nil))
}

// handleRaw hands raw events to a reader's handler as its syncer does (raw mode: undecoded), the
// handler putting what they yield into sink.
func handleRaw(start Position, f *Filter, raw [][]byte, sink Sink) error {
	ctx := context.Background()
	logger := slog.New(slog.DiscardHandler)
	t := newTranslator(start, f)
	t.metaFlavor = mysql.MySQLFlavor
	h := &handler{ctx: ctx, rctx: ctx, start: start, t: t, dec: newEventDecoder(mysql.MySQLFlavor, t),
		w: newPaceWatch(time.Second, logger), sink: sink, logger: logger}
	defer h.dec.close()
	p := replication.NewBinlogParser()
	p.SetRawMode(true)
	for _, data := range raw {
		ev, err := p.Parse(data)
		if err != nil {
			return err
		}
		if err := h.HandleEvent(ev); err != nil {
			return err
		}
	}
	return nil
}

// collect is a sink that keeps every event.
type collect struct{ events []*event.Event }

func (c *collect) Put(_ context.Context, e *event.Event) error {
	c.events = append(c.events, e)
	return nil
}

// decodeWhole decodes raw events as the reader did before it streamed payloads: go-mysql's
// parser, configured as its syncer was, decodes each payload whole, and the translator
// translates its events in one call.
func decodeWhole(t *testing.T, start Position, f *Filter, raw [][]byte) []*event.Event {
	t.Helper()
	tr := newTranslator(start, f)
	tr.metaFlavor = mysql.MySQLFlavor
	p := newParser(mysql.MySQLFlavor, tr.decodeRows, skipOptionalMeta)
	var out []*event.Event
	for _, data := range raw {
		ev, err := p.Parse(data)
		if err != nil {
			t.Fatalf("go-mysql's parser: %v", err)
		}
		evs, err := tr.translate(ev)
		if err != nil {
			t.Fatalf("translate: %v", err)
		}
		out = append(out, evs...)
	}
	return out
}

// detail renders every field of e that the applier reads.
func detail(e *event.Event) string {
	s := fmt.Sprintf("%v pos=%q ts=%d gtid=%q xid=%q size=%d", e.Type, e.Pos, e.Timestamp, e.GTID, e.XID, e.Size)
	if e.Type != event.Rows {
		return s
	}
	tb := e.Table
	s += fmt.Sprintf(" %s.%s cols=%d names=%q types=%v unsigned=%v %v before=%v after=%v nofk=%v",
		tb.Schema, tb.Name, tb.ColumnCount, tb.ColumnNames, tb.ColumnTypes, tb.Unsigned, e.Kind, e.BeforeCols, e.AfterCols, e.NoForeignKeyChecks)
	for _, r := range e.Rows {
		s += " | " + renderImage(r.Before) + " -> " + renderImage(r.After)
	}
	return s
}

func details(evs []*event.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = detail(e)
	}
	return out
}

// payloadStream is a stream of three transactions, each in a payload that pack builds: inserts
// in two rows events of one statement and rows of a table the filter leaves out; an update and a
// delete; a transaction on that other table only.
func payloadStream(pack func(events ...[]byte) []byte) *mysqlStream {
	blob := bytes.Repeat([]byte("blob\x00"), 100)
	rowA := payloadRow{1, "first", blob}
	rowB := payloadRow{2, strings.Repeat("é", 200), nil}
	rowB2 := payloadRow{2, "second", []byte{0, 1, 2}}
	rowC := payloadRow{3, "", []byte{}}
	s := newMySQLStream()
	s.add(replication.GTID_EVENT, gtidBody(uuidA, 6))
	s.add(replication.TRANSACTION_PAYLOAD_EVENT, pack(
		innerEvent(replication.QUERY_EVENT, queryBody("shop", "BEGIN")),
		innerEvent(replication.TABLE_MAP_EVENT, tableMapBody(90, "shop", "items")),
		innerEvent(replication.WRITE_ROWS_EVENTv2, rowsBody(replication.WRITE_ROWS_EVENTv2, 90, false, rowA, rowB)),
		innerEvent(replication.WRITE_ROWS_EVENTv2, rowsBody(replication.WRITE_ROWS_EVENTv2, 90, true, rowC)),
		innerEvent(replication.TABLE_MAP_EVENT, tableMapBody(91, "other", "log")),
		innerEvent(replication.WRITE_ROWS_EVENTv2, rowsBody(replication.WRITE_ROWS_EVENTv2, 91, true, rowA)),
		innerEvent(replication.XID_EVENT, xidBody(100)),
	))
	s.add(replication.GTID_EVENT, gtidBody(uuidA, 7))
	s.add(replication.TRANSACTION_PAYLOAD_EVENT, pack(
		innerEvent(replication.QUERY_EVENT, queryBody("shop", "BEGIN")),
		innerEvent(replication.TABLE_MAP_EVENT, tableMapBody(90, "shop", "items")),
		innerEvent(replication.UPDATE_ROWS_EVENTv2, rowsBody(replication.UPDATE_ROWS_EVENTv2, 90, false, rowB, rowB2)),
		innerEvent(replication.DELETE_ROWS_EVENTv2, rowsBody(replication.DELETE_ROWS_EVENTv2, 90, true, rowA, rowC)),
		innerEvent(replication.XID_EVENT, xidBody(101)),
	))
	s.add(replication.GTID_EVENT, gtidBody(uuidA, 8))
	s.add(replication.TRANSACTION_PAYLOAD_EVENT, pack(
		innerEvent(replication.QUERY_EVENT, queryBody("other", "BEGIN")),
		innerEvent(replication.TABLE_MAP_EVENT, tableMapBody(91, "other", "log")),
		innerEvent(replication.WRITE_ROWS_EVENTv2, rowsBody(replication.WRITE_ROWS_EVENTv2, 91, true, rowB2)),
		innerEvent(replication.XID_EVENT, xidBody(102)),
	))
	return s
}

// TestTranslatePayload: payloads with inserts, updates and deletes, several rows events and a
// table the filter leaves out decode as a stream to the same vplayer events, field for field, as
// go-mysql's whole decoding gives, with their positions in GTID and file:pos workflows; payloads
// of compression type NONE (which go-mysql 1.14 cannot decode: it reads the header's
// length-encoded values as fixed-length ones, and NONE, 255, is written in 3 bytes) decode to the
// same events as compressed ones. The decoder starts no goroutine.
func TestTranslatePayload(t *testing.T) {
	defer goleak.VerifyNone(t)
	compressed := payloadStream(func(events ...[]byte) []byte { return compressedPayload(t, events...) })
	s := compressed
	// The binlog file position after transaction i (1-based): after its payload, event 2i.
	commit := func(i int) string { return fmt.Sprintf("binlog.000001:%d", 4+sumSizes(s, 2*i)) }
	items := "shop.items(id,note,body)"
	gtidStart := Position{Flavor: FlavorMySQL, GTID: mysqlSet(t, uuidA+":1-5")}
	for _, tt := range []struct {
		name  string
		start Position
		want  []string
	}{
		{
			name:  "gtid",
			start: gtidStart,
			want: []string{
				"BEGIN", "ROWS INSERT " + items + " 2", "ROWS INSERT " + items + " 1", "COMMIT MySQL56/" + uuidA + ":1-6",
				"BEGIN", "ROWS UPDATE " + items + " 1", "ROWS DELETE " + items + " 2", "COMMIT MySQL56/" + uuidA + ":1-7",
				"SKIP MySQL56/" + uuidA + ":1-8",
			},
		},
		{
			name:  "file:pos",
			start: Position{Flavor: FlavorFilePos, File: "binlog.000001", Offset: 4},
			want: []string{
				"BEGIN", "ROWS INSERT " + items + " 2", "ROWS INSERT " + items + " 1", "COMMIT FilePos/" + commit(1),
				"BEGIN", "ROWS UPDATE " + items + " 1", "ROWS DELETE " + items + " 2", "COMMIT FilePos/" + commit(2),
				"SKIP FilePos/" + commit(3),
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := mustFilter(t, "shop")
			var got collect
			if err := handleRaw(tt.start, f, s.events, &got); err != nil {
				t.Fatal(err)
			}
			diffLines(t, "events", summaries(got.events), tt.want)
			diffLines(t, "streamed against whole", details(got.events), details(decodeWhole(t, tt.start, f, s.events)))
			if vals := rowValues(got.events); len(vals) == 0 || !strings.Contains(vals[0], "[]uint8([98 108 111 98 0") {
				t.Errorf("first row %q, want its body's bytes", vals)
			}
		})
	}
	t.Run("none", func(t *testing.T) {
		f := mustFilter(t, "shop")
		var got, want collect
		if err := handleRaw(gtidStart, f, payloadStream(uncompressedPayload).events, &got); err != nil {
			t.Fatal(err)
		}
		if err := handleRaw(gtidStart, f, compressed.events, &want); err != nil {
			t.Fatal(err)
		}
		diffLines(t, "NONE against zstd", details(got.events), details(want.events))
	})
}

// sumSizes returns the size of the stream's first n+1 events.
func sumSizes(s *mysqlStream, n int) uint32 {
	var sum uint32
	for _, e := range s.events[:n+1] {
		sum += uint32(len(e))
	}
	return sum
}

// TestTranslatePayload_sentAgain: the payload of a transaction the start position contains is
// dropped without being decompressed (here it could not be).
func TestTranslatePayload_sentAgain(t *testing.T) {
	s := newMySQLStream()
	s.add(replication.GTID_EVENT, gtidBody(uuidA, 5))
	s.add(replication.TRANSACTION_PAYLOAD_EVENT, payloadBody(compressionZstd, 1000, []byte("not zstd")))
	s.add(replication.GTID_EVENT, gtidBody(uuidA, 6))
	s.add(replication.TRANSACTION_PAYLOAD_EVENT, compressedPayload(t,
		innerEvent(replication.QUERY_EVENT, queryBody("shop", "BEGIN")),
		innerEvent(replication.TABLE_MAP_EVENT, tableMapBody(90, "shop", "items")),
		innerEvent(replication.WRITE_ROWS_EVENTv2, rowsBody(replication.WRITE_ROWS_EVENTv2, 90, true, payloadRow{1, "a", nil})),
		innerEvent(replication.XID_EVENT, xidBody(100)),
	))
	var got collect
	start := Position{Flavor: FlavorMySQL, GTID: mysqlSet(t, uuidA+":1-5")}
	if err := handleRaw(start, mustFilter(t, "shop"), s.events, &got); err != nil {
		t.Fatal(err)
	}
	diffLines(t, "events", summaries(got.events), []string{"BEGIN", "ROWS INSERT shop.items(id,note,body) 1", "COMMIT MySQL56/" + uuidA + ":1-6"})
}

// TestTranslatePayload_errors: a payload that is not what its header says ends the stream with an
// error naming what is wrong, before any of its events reaches the sink when its first is bad.
func TestTranslatePayload_errors(t *testing.T) {
	begin := innerEvent(replication.QUERY_EVENT, queryBody("shop", "BEGIN"))
	tableMap := innerEvent(replication.TABLE_MAP_EVENT, tableMapBody(90, "shop", "items"))
	rows := innerEvent(replication.WRITE_ROWS_EVENTv2, rowsBody(replication.WRITE_ROWS_EVENTv2, 90, true, payloadRow{1, "a", nil}))
	xid := innerEvent(replication.XID_EVENT, xidBody(100))
	whole := bytes.Join([][]byte{begin, tableMap, rows, xid}, nil)
	var zstdWhole bytes.Buffer
	enc := testZstdWriter(t, &zstdWhole)
	enc.Write(whole)
	enc.Close()
	corrupt := bytes.Clone(zstdWhole.Bytes())
	corrupt[len(corrupt)/2] ^= 0xff
	huge := bytes.Clone(begin)
	binary.LittleEndian.PutUint32(huge[9:], 1<<31)

	for _, tt := range []struct {
		name string
		body []byte
		want string
	}{
		{"unknown compression", payloadBody(7, uint64(len(whole)), whole), "compressed with type 7"},
		{"corrupt zstd", payloadBody(compressionZstd, uint64(len(whole)), corrupt), "decompress transaction payload"},
		{"truncated event", uncompressedPayload(whole[:len(whole)-3]), "unexpected EOF"},
		{"event larger than the payload says", payloadBody(compressionZstd, uint64(len(whole)-1), zstdWhole.Bytes()), "event of 27 bytes at byte"},
		{"fewer bytes than the payload says", payloadBody(compressionZstd, uint64(len(whole)+1), zstdWhole.Bytes()), "bytes of events, its header says"},
		{"event of 2 GiB", uncompressedPayload(huge, whole), "event of 2147483648 bytes at byte 0"},
		{"payload size", append(payloadBody(compressionNone, 0, whole), 0), "its header says"},
		{"header cut", []byte{payloadCompressionField, 3, 0xfc, 0xff}, "payload header field"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newMySQLStream()
			s.add(replication.GTID_EVENT, gtidBody(uuidA, 6))
			s.add(replication.TRANSACTION_PAYLOAD_EVENT, tt.body)
			var got collect
			err := handleRaw(Position{Flavor: FlavorMySQL, GTID: mysqlSet(t, uuidA+":1-5")}, mustFilter(t, "shop"), s.events, &got)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one with %q", err, tt.want)
			}
			t.Log(err)
			if !strings.Contains(err.Error(), "read binlog event after") && !strings.Contains(err.Error(), "transaction payload") {
				t.Errorf("error %v does not say it is the payload's", err)
			}
		})
	}
}

// TestLengthEncoded: the payload header's integers, as MySQL's net_store_length writes them.
func TestLengthEncoded(t *testing.T) {
	for _, v := range []uint64{0, 1, 250, 251, 255, 1<<16 - 1, 1 << 16, 1<<24 - 1, 1 << 24, 1 << 40, 1<<64 - 1} {
		b := putLengthEncoded(nil, v)
		got, n, err := lengthEncoded(append(b, 0xaa))
		if err != nil || got != v || n != len(b) {
			t.Errorf("lengthEncoded(% x) = %d, %d, %v; want %d, %d", b, got, n, err, v, len(b))
		}
		if len(b) > 1 {
			if _, _, err := lengthEncoded(b[:len(b)-1]); !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("lengthEncoded(% x) cut: %v, want io.ErrUnexpectedEOF", b, err)
			}
		}
	}
	if _, _, err := lengthEncoded([]byte{0xfb}); err == nil {
		t.Error("lengthEncoded(fb): no error, want one (NULL is no length)")
	}
}
