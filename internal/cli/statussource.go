package cli

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/stream"
	"github.com/vplayer/vplayer/workflow"
)

// sourceState is what vplayer status reads of the --source server: where its binary log ends, as
// a GTID position and as a file and offset.
type sourceState struct {
	// Address is the server's host:port as the --source DSN names it.
	Address string
	// Flavor is "mariadb" or "mysql".
	Flavor string
	// GTID is the source's GTID position (MariaDB's gtid_binlog_pos, MySQL's gtid_executed),
	// zero when it has none.
	GTID binlog.Position
	// Logs are SHOW BINARY LOGS' files, oldest first; nil when LogsErr says why they could not
	// be read.
	Logs    []binlogFile
	LogsErr error
	// Err says why the source could not be read at all; nothing else is set then.
	Err error
}

// binlogFile is one of the source's binary log files and its size in bytes.
type binlogFile struct {
	Name string
	Size uint64
}

// End returns the end of the source's binary log as a file position: its last file and that
// file's size, which is where the next event will be written.
func (s *sourceState) End() (binlog.Position, bool) {
	if len(s.Logs) == 0 {
		return binlog.Position{}, false
	}
	last := s.Logs[len(s.Logs)-1]
	return binlog.Position{Flavor: binlog.FlavorFilePos, File: last.Name, Offset: uint32(min(last.Size, 1<<32-1))}, true
}

// readSource reads the source's position for status.
func readSource(ctx context.Context, pool *sql.DB, address string) *sourceState {
	s := &sourceState{Address: address}
	flavor, err := stream.SourceFlavor(ctx, pool)
	if err != nil {
		s.Err = err
		return s
	}
	s.Flavor = flavor
	q := "SELECT @@GLOBAL.gtid_executed"
	if flavor == "mariadb" {
		q = "SELECT @@GLOBAL.gtid_binlog_pos"
	}
	var gtid sql.NullString
	if err := pool.QueryRowContext(ctx, q).Scan(&gtid); err == nil && strings.TrimSpace(gtid.String) != "" {
		if p, err := binlog.ParsePosition(strings.ReplaceAll(gtid.String, "\n", ""), flavor); err == nil {
			s.GTID = p
		}
	}
	s.Logs, s.LogsErr = binaryLogSizes(ctx, pool)
	return s
}

// binaryLogSizes reads SHOW BINARY LOGS: each file's name and size.
func binaryLogSizes(ctx context.Context, pool *sql.DB) ([]binlogFile, error) {
	rows, err := pool.QueryContext(ctx, "SHOW BINARY LOGS")
	if err != nil {
		return nil, fmt.Errorf("SHOW BINARY LOGS: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, fmt.Errorf("SHOW BINARY LOGS: %w", err)
	}
	if len(cols) < 2 {
		return nil, fmt.Errorf("SHOW BINARY LOGS: %d columns, want the file and its size", len(cols))
	}
	var out []binlogFile
	for rows.Next() {
		var f binlogFile
		var size string
		vals := make([]any, len(cols))
		vals[0], vals[1] = &f.Name, &size
		for i := 2; i < len(vals); i++ {
			vals[i] = new(sql.RawBytes)
		}
		if err := rows.Scan(vals...); err != nil {
			return nil, fmt.Errorf("SHOW BINARY LOGS: %w", err)
		}
		if f.Size, err = strconv.ParseUint(size, 10, 64); err != nil {
			return nil, fmt.Errorf("SHOW BINARY LOGS: size %q of %s: %w", size, f.Name, err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("SHOW BINARY LOGS: %w", err)
	}
	return out, nil
}

// backlog is how far a workflow's recorded position is behind its source, as status shows it.
// Unknown values are nil, with the reason.
type backlog struct {
	// Known says the source was read and compared with the workflow's position; Reason says why
	// not otherwise.
	Known  bool
	Reason string
	// SourcePos is the source's current position, in the workflow position's flavor;
	// SourceEnd the end of its binary log as a file position, when SHOW BINARY LOGS answered.
	SourcePos string
	SourceEnd string
	// CaughtUp says the recorded position contains the source's.
	CaughtUp *bool
	// Transactions are the source transactions the recorded position lacks (GTID positions
	// only); TransactionsReason says why they are not counted otherwise.
	Transactions       *int64
	TransactionsReason string
	// Bytes are the binary log bytes between the recorded position and the source's end (file
	// positions only); BytesReason says why they are not counted otherwise.
	Bytes       *int64
	BytesReason string
}

// noGTIDBytes is why status gives no byte count for a GTID position.
const noGTIDBytes = "not counted for a GTID position: which file and offset it stands at is known only by reading the source's binary log"

// computeBacklog compares the recorded position pos with the source's state.
func computeBacklog(pos string, src *sourceState) backlog {
	var b backlog
	switch {
	case src == nil:
		b.Reason = "not read: no --source given"
		return b
	case src.Err != nil:
		b.Reason = "not read: " + src.Err.Error()
		return b
	}
	if end, ok := src.End(); ok {
		b.SourceEnd = end.String()
	}
	rec, err := binlog.ParsePosition(pos, src.Flavor)
	if err != nil {
		b.Reason = "the recorded position cannot be read: " + err.Error()
		return b
	}
	if rec.Flavor == binlog.FlavorFilePos {
		end, ok := src.End()
		if !ok {
			b.Reason = fmt.Sprintf("the source's binary log end is not known: %v", src.LogsErr)
			return b
		}
		b.Known, b.SourcePos = true, end.String()
		caught := rec.Contains(end)
		b.CaughtUp = &caught
		b.TransactionsReason = "not counted for a file position"
		n, reason := bytesBehind(rec, src.Logs)
		if reason != "" {
			b.BytesReason = reason
		} else {
			b.Bytes = &n
		}
		return b
	}
	if src.GTID.IsZero() {
		b.Reason = "the source has no GTID position to compare the workflow's with"
		return b
	}
	if src.GTID.Flavor != rec.Flavor {
		b.Reason = fmt.Sprintf("the source's position is %s, the workflow's %s: is --source the workflow's source?", src.GTID.Flavor, rec.Flavor)
		return b
	}
	b.Known, b.SourcePos = true, src.GTID.String()
	caught := rec.Contains(src.GTID)
	b.CaughtUp = &caught
	n, err := gtidBehind(src.GTID, rec)
	switch {
	case caught:
		n = 0
		b.Transactions = &n
	case err != nil:
		b.TransactionsReason = "not counted: " + err.Error()
	default:
		b.Transactions = &n
	}
	b.BytesReason = noGTIDBytes
	return b
}

// bytesBehind counts the binary log bytes from the file position rec to the end of the source's
// binary log: the rest of rec's file and every later file. reason says why they cannot be
// counted (rec's file is no longer on the source).
func bytesBehind(rec binlog.Position, logs []binlogFile) (n int64, reason string) {
	at := -1
	for i, f := range logs {
		if f.Name == rec.File {
			at = i
			break
		}
	}
	if at < 0 {
		return 0, fmt.Sprintf("not counted: the source's binary logs no longer have %s", rec.File)
	}
	total := int64(logs[at].Size) - int64(rec.Offset)
	for _, f := range logs[at+1:] {
		total += int64(f.Size)
	}
	return max(total, 0), ""
}

// sourceMatches says whether the --source server is the one the record names (its source's
// address). A record whose source cannot be read matches: nothing says otherwise.
func sourceMatches(rec workflow.Record, address string) (bool, string) {
	src, err := workflow.ParseSource(rec.Source)
	if err != nil || src.Address == "" {
		return true, ""
	}
	if strings.EqualFold(src.Address, address) {
		return true, ""
	}
	return false, src.Address
}
