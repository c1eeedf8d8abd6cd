// Package event holds vplayer's own description of what the source's binary log said: transaction
// boundaries, row changes, DDL and heartbeats. The reader produces these values, the relay log
// buffers them and the applier consumes them; only the reader and the applier know go-mysql.
package event

import "fmt"

// Type says what an Event carries.
type Type uint8

// Event types, in the order they appear within a transaction.
const (
	// Begin opens a source transaction. Its Pos is empty.
	Begin Type = iota + 1
	// Rows carries the row changes of one binlog rows event, for one table.
	Rows
	// Commit closes the open source transaction. Pos is the position just after it.
	Commit
	// DDL is a schema change, outside any transaction. Pos is the position just after it.
	DDL
	// Skip is a whole transaction that touched no replicated table: only its position matters.
	Skip
	// Heartbeat is the source saying it is alive while it has nothing to send.
	Heartbeat
	// XAPrepare closes the open source transaction, an XA transaction, as prepared: its rows
	// reach the target only with its XACommit. Pos is the position just after it.
	XAPrepare
	// XACommit and XARollback end the prepared XA transaction XID, outside any transaction. Pos
	// is the position just after them.
	XACommit
	XARollback
	// Statement is a data change the source logged as an SQL statement (a session with
	// binlog_format STATEMENT or MIXED) on a replicated table, inside the open transaction:
	// Query holds it and Schema its default database. A row-based applier cannot apply it
	// exactly, so the applier ends the stream there.
	Statement
)

func (t Type) String() string {
	switch t {
	case Begin:
		return "BEGIN"
	case Rows:
		return "ROWS"
	case Commit:
		return "COMMIT"
	case DDL:
		return "DDL"
	case Skip:
		return "SKIP"
	case Heartbeat:
		return "HEARTBEAT"
	case XAPrepare:
		return "XA PREPARE"
	case XACommit:
		return "XA COMMIT"
	case XARollback:
		return "XA ROLLBACK"
	case Statement:
		return "STATEMENT"
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// RowKind is the kind of a row change.
type RowKind uint8

// Row change kinds.
const (
	Insert RowKind = iota + 1
	Update
	Delete
)

func (k RowKind) String() string {
	switch k {
	case Insert:
		return "INSERT"
	case Update:
		return "UPDATE"
	case Delete:
		return "DELETE"
	}
	return fmt.Sprintf("RowKind(%d)", uint8(k))
}

// Table identifies a source table as the binlog's table map described it.
type Table struct {
	Schema string
	Name   string
	// ColumnCount is the number of columns the source logged for the table.
	ColumnCount int
	// ColumnNames are the source's column names when it logs full row metadata, else nil.
	ColumnNames []string
	// ColumnTypes are the binlog column type codes, one per column.
	ColumnTypes []byte
	// Unsigned marks unsigned numeric columns when the source logs that metadata, else nil.
	Unsigned []bool
}

// Row is one row change. Before is nil for an insert, After is nil for a delete. Values are in
// column order, as the reader decoded them (nil for SQL NULL).
type Row struct {
	Before []any
	After  []any
}

// Event is one item of the stream. Exactly the fields its Type names are set.
type Event struct {
	Type Type
	// Pos is the source position just after this event, as "<flavor>/<value>", for Commit, DDL,
	// Skip and the XA types; empty otherwise.
	Pos string
	// Timestamp is the source's commit time in unix seconds (event header time).
	Timestamp int64
	// GTID is the source transaction's GTID (0-1-57, or <uuid>:57), on Begin events; empty when
	// the source logs none.
	GTID string
	// XID is the XA transaction's id as the binlog writes it (X'6162',X'',1), on the Begin of an
	// XA transaction and on the XA types.
	XID string
	// Table and Kind and Rows are set for Rows events.
	Table *Table
	Kind  RowKind
	Rows  []Row
	// BeforeCols and AfterCols say which columns the rows' before and after images carry, for
	// a source that logs partial row images (binlog_row_image MINIMAL or NOBLOB): nil when the
	// image carries every column of Table, else a bitmap in the binlog's order (bit i%8 of byte
	// i/8 is column i). A column an image does not carry is nil in it, like a NULL: only these
	// tell the two apart.
	BeforeCols, AfterCols Columns
	// NoForeignKeyChecks is set on Rows events that the source wrote with foreign_key_checks=0
	// (the rows event's flag): the target applies them with the same setting, so that its
	// cascades happen exactly when the source's did.
	NoForeignKeyChecks bool
	// Schema and Query are set for DDL events: Schema is the statement's default database on the
	// source (empty when it had none).
	Schema string
	Query  string
	// DBRefs are the byte ranges [start, end) of Query that name the source database as a
	// qualifier (`shop` in shop.t), for DDL events, so that the statement can be pointed at
	// another target database.
	DBRefs [][2]int
	// CutOver is set on a DDL event that stands for an online schema-change tool's cut-over (the
	// RENAME TABLE that puts its shadow table in the table's place): the statement the source
	// logged. Query is then what the target is to run instead, the ALTER the tool ran on its
	// shadow table pointed at the table; or, when the reader does not know that ALTER (the
	// shadow table was created before the workflow's start), CutOver itself, which the applier
	// refuses to run.
	CutOver string
	// Size is the event's size in the binary log, in bytes, as the relay log accounts it.
	Size int
}

// Bytes returns the size the relay log accounts for e: its binlog size, at least 1.
func (e *Event) Bytes() int {
	if e.Size < 1 {
		return 1
	}
	return e.Size
}

// Columns is a set of a table's columns as a rows event's bitmap: bit i%8 of byte i/8 is column i.
// A nil Columns holds every column.
type Columns []byte

// Has reports whether column i is in c.
func (c Columns) Has(i int) bool {
	if c == nil {
		return true
	}
	return i>>3 < len(c) && c[i>>3]&(1<<(uint(i)&7)) != 0
}
