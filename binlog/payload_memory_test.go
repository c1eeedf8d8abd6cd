package binlog

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vplayer/vplayer/event"
	"github.com/vplayer/vplayer/relaylog"
)

// The memory test's transaction: statements of bigRowsPerStatement rows, one rows event per row
// (MySQL cuts a statement's rows events at binlog_row_event_max_size, 8 KiB, but never a row),
// each row's body bigRowBody bytes, more than 200 MiB in all.
const (
	bigStatements       = 52
	bigRowsPerStatement = 16
	bigRowBody          = 256 << 10
	bigRows             = bigStatements * bigRowsPerStatement
)

// The memory test's bounds: the process's peak resident set, and the most memory the pipeline
// keeps reachable (the compressed payload, the zstd decoder, the relay log's bytes, the event
// being decoded and the consumer's batch, the test binary's own).
const (
	payloadRSSLimit       = 64 << 20
	payloadReachableLimit = 16 << 20
)

// The child process: payloadMemoryEnv names the stream's file, payloadModeEnv what it measures.
const (
	payloadMemoryEnv    = "VPLAYER_TEST_PAYLOAD_STREAM"
	payloadModeEnv      = "VPLAYER_TEST_PAYLOAD_MODE"
	payloadModeRSS      = "rss"
	payloadModeHeap     = "reachable"
	payloadMemoryMarker = "payload memory: "
)

// vplayerRunGC is the garbage collector's settings `vplayer run` applies (internal/cli/gc.go),
// given to the child that measures the peak resident set: the process it stands for.
var vplayerRunGC = []string{"GOGC=200", "GOMEMLIMIT=48MiB"}

// payloadMemory is what the child process measured, printed on one line after payloadMemoryMarker.
type payloadMemory struct {
	// VmHWM is the process's peak resident set (/proc/self/status), and BeforeRSS its resident
	// set once the events were read and before they were decoded, in bytes.
	VmHWM, BeforeRSS int64
	// Sys is the memory the Go runtime obtained from the system (runtime.MemStats.Sys, which
	// never shrinks).
	Sys uint64
	// Reachable is, in the reachable mode, the largest heap found live by a collection forced
	// after each of the consumer's fetches.
	Reachable uint64
	// Rows, Bytes and Commits are what the consumer took from the relay log: row changes, bytes
	// of their bodies, and commits.
	Rows, Commits int
	Bytes         int64
	// PayloadBytes and UncompressedBytes are the payload event's size and the size of the
	// events inside it.
	PayloadBytes, UncompressedBytes int64
}

// TestTranslatePayload_memory passes a transaction of more than 200 MiB, zstd-compressed in one
// payload as MySQL writes it, through the reader's handler into a relay log of the default bounds
// (250000 bytes, 5000 items) drained by a consumer that checks every row, and checks that the
// process's peak resident set stays within 64 MiB, the payload's compressed bytes included.
//
// Memory is measured in child processes (this test binary run again for this test only), which
// only read the stream the parent built and decode it, two ways:
//
//   - the peak resident set as the kernel counts it (VmHWM), everything the process touched (Go
//     runtime, decoder buffers, the test binary itself), with the garbage collector set as
//     `vplayer run` sets it. What it adds to the data kept reachable is the collector's slack,
//     which depends on the CPU it gets: on a machine with more runnable threads than cores, a
//     collection starved of CPU lets a fast producer's heap run past its goal (once in ten runs
//     here beside three busy loops on two cores), so a peak above the bound is measured once
//     more, and both must be above it to fail. Under the race detector VmHWM counts the
//     detector's shadow memory, which is not vplayer's: it is then logged, not checked.
//   - the memory kept reachable: a collection forced after each of the consumer's fetches, the
//     largest live heap found, checked against 16 MiB. This is what the streaming decoder
//     bounds, whatever the collector's pace: decoding the payload whole took 792 MiB here.
func TestTranslatePayload_memory(t *testing.T) {
	if path := os.Getenv(payloadMemoryEnv); path != "" {
		streamPayloadChild(t, path, os.Getenv(payloadModeEnv))
		return
	}
	if testing.Short() {
		t.Skip("builds and decodes 200 MiB: not with -short")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skipf("no /proc/self/status to read the peak resident set from: %v", err)
	}
	path := filepath.Join(t.TempDir(), "stream")
	uncompressed := writeBigPayloadStream(t, path)
	if uncompressed < 200<<20 {
		t.Fatalf("the payload holds %d bytes of events, want at least 200 MiB", uncompressed)
	}
	check := func(m payloadMemory) {
		t.Helper()
		if got, want := m.UncompressedBytes, uncompressed; got != want {
			t.Errorf("the child read a payload of %d bytes of events, want %d", got, want)
		}
		if m.Rows != bigRows || m.Bytes != bigRows*bigRowBody || m.Commits != 1 {
			t.Errorf("the consumer took %d rows of %d bytes and %d commits, want %d rows of %d bytes and 1 commit",
				m.Rows, m.Bytes, m.Commits, bigRows, bigRows*bigRowBody)
		}
	}

	heap := runPayloadChild(t, path, payloadModeHeap)
	check(heap)
	t.Logf("%d MiB of events (%d rows) in a payload of %.1f MiB: at most %.1f MiB reachable after a collection",
		heap.UncompressedBytes>>20, heap.Rows, mib(heap.PayloadBytes), mib(heap.Reachable))
	if heap.Reachable > payloadReachableLimit {
		t.Errorf("%.1f MiB reachable after a collection, want at most %d MiB", mib(heap.Reachable), payloadReachableLimit>>20)
	}

	var peaks []string
	for range 2 {
		m := runPayloadChild(t, path, payloadModeRSS, vplayerRunGC...)
		check(m)
		peaks = append(peaks, fmt.Sprintf("%.1f MiB", mib(m.VmHWM)))
		t.Logf("peak RSS %.1f MiB (%.1f MiB before decoding), Go runtime's Sys %.1f MiB (%s)",
			mib(m.VmHWM), mib(m.BeforeRSS), mib(m.Sys), strings.Join(vplayerRunGC, " "))
		if raceEnabled || m.VmHWM <= payloadRSSLimit {
			return
		}
	}
	t.Errorf("peak resident set %s, want at most %d MiB", strings.Join(peaks, " then "), payloadRSSLimit>>20)
}

func mib[N int64 | uint64](n N) float64 { return float64(n) / (1 << 20) }

// runPayloadChild runs this test in a child process that decodes the stream at path and measures
// mode, with env added to its environment, and returns what it measured.
func runPayloadChild(t *testing.T, path, mode string, env ...string) payloadMemory {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestTranslatePayload_memory$", "-test.timeout=2m")
	cmd.Env = append(append(os.Environ(), payloadMemoryEnv+"="+path, payloadModeEnv+"="+mode), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s%s", err, out, stderr.Bytes())
	}
	for line := range strings.Lines(string(out)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), payloadMemoryMarker); ok {
			var m payloadMemory
			if err := json.Unmarshal([]byte(rest), &m); err != nil {
				t.Fatalf("child's measure %q: %v", rest, err)
			}
			return m
		}
	}
	t.Fatalf("the child printed no measure:\n%s%s", out, stderr.Bytes())
	return payloadMemory{}
}

// bigBody returns row id's body: a block of random letters repeated, each copy starting with id,
// its place and 56 random letters, so that zstd compresses it about 60 times (repetitive text
// compresses a few times, a column of the same document in every row much more).
func bigBody(block []byte, id int32, rng *rand.Rand) []byte {
	body := make([]byte, bigRowBody)
	for off := 0; off < len(body); off += len(block) {
		copy(body[off:], block)
		binary.LittleEndian.PutUint32(body[off:], uint32(id))
		binary.LittleEndian.PutUint32(body[off+4:], uint32(off))
		for i := off + 8; i < off+64; i++ {
			body[i] = byte('a' + rng.IntN(26))
		}
	}
	return body
}

// writeBigPayloadStream writes to path, as frames of a 4-byte length and an event, a MySQL 8
// stream of one transaction: its GTID event and its payload, statements of big rows. It returns
// the size of the events in the payload. The events are compressed as they are built: nothing
// holds them all.
func writeBigPayloadStream(t *testing.T, path string) int64 {
	t.Helper()
	block := make([]byte, 4096)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range block {
		block[i] = byte('a' + rng.IntN(26))
	}
	var compressed bytes.Buffer
	enc := testZstdWriter(t, &compressed)
	var n int64
	write := func(typ replication.EventType, body []byte) {
		ev := innerEvent(typ, body)
		n += int64(len(ev))
		if _, err := enc.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	write(replication.QUERY_EVENT, queryBody("shop", "BEGIN"))
	id := int32(0)
	for range bigStatements {
		write(replication.TABLE_MAP_EVENT, tableMapBody(90, "shop", "items"))
		for r := range bigRowsPerStatement {
			id++
			row := payloadRow{id, "row " + strconv.Itoa(int(id)), bigBody(block, id, rng)}
			write(replication.WRITE_ROWS_EVENTv2, rowsBody(replication.WRITE_ROWS_EVENTv2, 90, r == bigRowsPerStatement-1, row))
		}
	}
	write(replication.XID_EVENT, xidBody(1))
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	s := newMySQLStream()
	s.add(replication.GTID_EVENT, gtidBody(uuidA, 6))
	s.add(replication.TRANSACTION_PAYLOAD_EVENT, payloadBody(compressionZstd, uint64(n), compressed.Bytes()))
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for _, ev := range s.events {
		w.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(ev))))
		w.Write(ev)
	}
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		t.Fatal(err)
	}
	return n
}

// streamPayloadChild is the child process: it reads the stream at path, hands its events to a
// reader's handler that puts them into a relay log, drains the relay log, and prints what it
// measured: in mode payloadModeHeap the live heap after a collection forced after each fetch.
func streamPayloadChild(t *testing.T, path, mode string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var raw [][]byte
	var m payloadMemory
	for len(data) > 0 {
		size := binary.LittleEndian.Uint32(data)
		raw = append(raw, data[4:4+size])
		data = data[4+size:]
	}
	payload := raw[len(raw)-1]
	m.PayloadBytes = int64(len(payload))
	body := payload[replication.EventHeaderSize : len(payload)-replication.BinlogChecksumLength]
	h, _, err := parsePayloadHeader(body)
	if err != nil {
		t.Fatal(err)
	}
	m.UncompressedBytes = int64(h.uncompressed)
	m.BeforeRSS = procStatus(t, "VmRSS")

	var afterFetch func()
	if mode == payloadModeHeap {
		afterFetch = func() {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			m.Reachable = max(m.Reachable, ms.HeapAlloc)
		}
	}
	log := relaylog.New(250000, 5000)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	consumed := make(chan error, 1)
	go func() { consumed <- consume(ctx, log, &m, afterFetch) }()
	start := Position{Flavor: FlavorMySQL, GTID: mysqlSet(t, uuidA+":1-5")}
	if err := handleRaw(start, mustFilter(t, "shop"), raw, log); err != nil {
		t.Fatal(err)
	}
	if err := <-consumed; err != nil {
		t.Fatal(err)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.Sys = ms.Sys
	m.VmHWM = procStatus(t, "VmHWM")
	line, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(payloadMemoryMarker + string(line))
}

// consume drains log until the transaction's commit, checking each row as it goes (ids in order,
// each body as bigBody made it) and calling afterFetch, when not nil, once it checked a fetch.
func consume(ctx context.Context, log *relaylog.Log, m *payloadMemory, afterFetch func()) error {
	next := int32(1)
	for {
		evs, err := log.Fetch(ctx)
		if err != nil {
			return err
		}
		for _, e := range evs {
			switch e.Type {
			case event.Commit:
				m.Commits++
				return nil
			case event.Rows:
				for _, r := range e.Rows {
					id, _ := r.After[0].(int32)
					b, _ := r.After[2].([]byte)
					if id != next || len(b) != bigRowBody || int32(binary.LittleEndian.Uint32(b)) != id ||
						int32(binary.LittleEndian.Uint32(b[len(b)-4096:])) != id {
						return fmt.Errorf("row %d: id %v, body of %d bytes, want row %d's", m.Rows, r.After[0], len(b), next)
					}
					next++
					m.Rows++
					m.Bytes += int64(len(b))
				}
			}
		}
		if afterFetch != nil {
			afterFetch()
		}
	}
}

// procStatus returns the field of /proc/self/status named name, a size in kB, in bytes.
func procStatus(t *testing.T, name string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", sc.Text(), err)
			}
			return kb << 10
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	t.Fatalf("no %s in /proc/self/status", name)
	return 0
}
