package plan

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/vplayer/vplayer/event"
	"github.com/vplayer/vplayer/sqlq"
	"github.com/vplayer/vplayer/tabledef"
)

// ErrSchemaDrift means the binlog's description of a table does not match the target's table.
var ErrSchemaDrift = errors.New("schema drift")

// keyKind says how rows of a table are identified.
type keyKind uint8

const (
	keyPrimary keyKind = iota + 1
	keyUnique          // first unique key over NOT NULL columns
	keyAll             // every column, NULL-safe, LIMIT 1
)

// Column is one target column, in ordinal order.
type Column struct {
	name      string
	dataType  string // information_schema DATA_TYPE, lower case
	unsigned  bool
	generated bool
	notNull   bool
	collation string // COLLATION_NAME: empty for a column that holds no characters
	quoted    string // backquoted name
	length    int    // CHARACTER_OCTET_LENGTH: BINARY(n) is padded to it
	table     string // the table's quoted name, for errors
}

// uniqueKey is one unique key of a table, for writesets.
type uniqueKey struct {
	name string
	cols []int // column indexes, in the key's order
	// exact says that two rows' values of the key are equal exactly when their SQL literals are:
	// no column compares under a collation (a case-insensitive or PAD SPACE string), holds a
	// float (0 and -0), is generated (its value need not be in the binlog's image) or is in the
	// key by a prefix of its value (values that differ after it collide).
	exact bool
}

// Table is what the planner knows of one target table.
type Table struct {
	schema, name string
	quoted       string // `schema`.`name`
	cols         []Column
	key          []int // column indexes identifying a row
	keyKind      keyKind
	uniques      []uniqueKey // every unique key, the primary key first: what a row change's writeset holds
	foldable     bool        // primary key, no other unique key, no foreign key or trigger: changes fold per key (see fold)
	related      bool        // has a foreign key, is referenced by one, or has a trigger: deletes go one row at a time, in source order
	upsertTail   []byte      // " ON DUPLICATE KEY UPDATE ...", for a table with a key
	countedTail  []byte      // upsertTail counting the rows it updates (see appendCountedUpsert)
	upsertShape  string
	keyTuple     []byte // the key columns as they precede IN
	keyName      string // the index identifying rows, empty for keyAll
	hasEnum      bool   // a writable ENUM column: see needsLenient
	writable     []int  // non-generated column indexes
	insertHead   []byte
	deleteShape  string
	insertShape  string
	updateShape  string
	// partial marks a view of a table (see view): its writable columns are those a partial
	// image carries. views are t's views, by the columns they write.
	partial bool
	views   map[string]*Table
	// versioned is set for a system-versioned table whose rows the target versions at the
	// source's times (see versioned.go).
	versioned *versioning
	// sourceVersioned marks a plain table whose source table is system-versioned (see
	// SetSourceVersioned): its rows events cannot be applied exactly.
	sourceVersioned bool
}

// BuildTable turns a definition into what the planner writes SQL from: the row identity, whether
// changes fold, the statements' fixed parts, a system-versioned table's versioning. It does no
// I/O. A period the applier cannot write at the source's times is an error.
func BuildTable(d tabledef.Table) (*Table, error) {
	t := &Table{schema: d.Schema, name: d.Name, quoted: d.Quoted()}
	for _, c := range d.AllColumns() {
		t.cols = append(t.cols, Column{name: c.Name, dataType: c.Type, unsigned: c.Unsigned, generated: c.Generated, notNull: c.NotNull,
			collation: c.Collation, length: c.OctetLength, quoted: c.Ident(), table: t.quoted})
	}
	var p *period
	if d.Period != nil {
		var err error
		if p, err = periodOf(t, d.Period); err != nil {
			return nil, err
		}
	}
	t.setKey(&d)
	t.related = d.Related
	t.foldable = t.foldable && !d.Related
	for i, c := range t.cols {
		if !c.generated {
			t.writable = append(t.writable, i)
			t.hasEnum = t.hasEnum || c.dataType == "enum"
		}
	}
	head := []byte("INSERT INTO " + t.quoted + " (")
	for n, i := range t.writable {
		if n > 0 {
			head = append(head, ',')
		}
		head = append(head, t.cols[i].quoted...)
	}
	t.insertHead = append(head, ") VALUES "...)
	t.insertShape = "INSERT " + t.quoted
	if t.keyKind != keyAll {
		t.upsertTail = upsertTail(t)
		t.countedTail = countedTail(t)
		t.upsertShape = "INSERT ... ON DUPLICATE KEY UPDATE " + t.quoted
		t.keyTuple = keyTupleOf(t)
	}
	t.updateShape = "UPDATE " + t.quoted
	t.deleteShape = "DELETE " + t.quoted
	if p != nil {
		// Each change of a versioned row is a row of history: none folds into another.
		t.versioned, t.foldable = newVersioning(t, p), false
	}
	return t, nil
}

// setKey takes the row identity tabledef picks among d's unique keys (the primary key first:
// the first whose columns are all NOT NULL and none generated), else every column; and records
// every unique key for writesets.
func (t *Table) setKey(d *tabledef.Table) {
	colIndex := func(name string) int {
		for i, c := range t.cols {
			if c.name == name {
				return i
			}
		}
		return -1
	}
	for _, ix := range d.Uniques {
		u := uniqueKey{name: ix.Name, exact: !ix.Prefix}
		for _, name := range ix.Columns {
			i := colIndex(name)
			if i < 0 {
				u.exact = false
				continue
			}
			u.cols = append(u.cols, i)
			u.exact = u.exact && t.cols[i].exactKey()
		}
		t.uniques = append(t.uniques, u)
	}
	switch id := d.Identity(len(d.Columns)); id.Kind {
	case tabledef.KeyPrimary:
		t.key, t.keyName, t.keyKind = id.Columns, id.Index, keyPrimary
		// With another unique constraint, the order of row changes can matter (a value moving
		// from one row to another), so only a table with just its primary key folds.
		t.foldable = len(d.Uniques) == 1
	case tabledef.KeyUnique:
		t.key, t.keyName, t.keyKind = id.Columns, id.Index, keyUnique
	default:
		t.keyKind = keyAll
		for i, c := range t.cols {
			if !c.generated {
				t.key = append(t.key, i)
			}
		}
	}
}

// exactKey reports whether two values of c in a key are equal exactly when their SQL literals
// are: not for strings under a collation (case-insensitive ones, and PAD SPACE ones, which
// ignore trailing spaces), floats (0 and -0), or generated columns.
func (c *Column) exactKey() bool {
	if c.generated {
		return false
	}
	switch c.dataType {
	case "float", "double", "real", "double precision":
		return false
	case "enum", "set":
		return true // written as their numbers
	}
	return c.collation == "" || c.collation == "binary"
}

// Check cross-checks the binlog's table map against the target definition, to which columns map
// by position: the names and the integers' signedness when the source logs full row metadata,
// and each column's kind of type (so that columns shifted or swapped between an integer and a
// string are caught even without names). As on a native replica, either side may have columns
// the other lacks after all the columns they share (a schema change rolled out one side first):
// the target's are left to their defaults, the source's are not written. A mismatch is
// ErrSchemaDrift, naming the table and the columns.
func (t *Table) Check(bt *event.Table) error {
	src := sqlq.Ident(bt.Schema) + "." + sqlq.Ident(bt.Name)
	var diffs []string
	for i, c := range t.cols {
		if i >= bt.ColumnCount {
			break
		}
		if i < len(bt.ColumnNames) && !strings.EqualFold(bt.ColumnNames[i], c.name) {
			diffs = append(diffs, fmt.Sprintf("column %d is %s on the source but %s on the target", i+1, bt.ColumnNames[i], c.name))
			continue
		}
		if i < len(bt.ColumnTypes) {
			have, want := tabledef.TypeFamily(c.dataType), binlogFamily(bt.ColumnTypes[i])
			if have != "" && want != "" && have != want {
				diffs = append(diffs, fmt.Sprintf("column %d (%s on the target) holds %s values on the source but is %s on the target", i+1, c.name, want, c.dataType))
				continue
			}
		}
		// Integers arrive as bit patterns: the target's signedness says how to read them, so it
		// must be the source's.
		if i < len(bt.Unsigned) && tabledef.TypeFamily(c.dataType) == "integer" && bt.Unsigned[i] != c.unsigned {
			diffs = append(diffs, fmt.Sprintf("column %d (%s) is %s on the source but %s on the target", i+1, c.name, signedness(bt.Unsigned[i]), signedness(c.unsigned)))
		}
	}
	if len(diffs) > 0 {
		var names string
		if bt.ColumnNames != nil {
			names = " (" + strings.Join(bt.ColumnNames, ", ") + ")"
		}
		return fmt.Errorf("%w on %s (source %s): %s; the binlog rows have %d columns%s, the target table has %d (%s): make the columns the two tables share match the source's, in the same order (either side may have more columns after them)",
			ErrSchemaDrift, t.quoted, src, strings.Join(diffs, "; "), bt.ColumnCount, names, len(t.cols), strings.Join(t.columnNames(), ", "))
	}
	return nil
}

// ExtraColumns describes the columns one side has after those the two share, for a log line;
// empty when both have the same count.
func (t *Table) ExtraColumns(bt *event.Table) string {
	switch {
	case len(t.cols) > bt.ColumnCount:
		return fmt.Sprintf("the target has %d columns after the source's %d (%s): they get their defaults", len(t.cols)-bt.ColumnCount, bt.ColumnCount, strings.Join(t.columnNames()[bt.ColumnCount:], ", "))
	case len(t.cols) < bt.ColumnCount:
		extra := fmt.Sprintf("%d", bt.ColumnCount-len(t.cols))
		if len(bt.ColumnNames) == bt.ColumnCount {
			extra = strings.Join(bt.ColumnNames[len(t.cols):], ", ")
		}
		return fmt.Sprintf("the source has columns after the target's %d (%s): they are not written", len(t.cols), extra)
	}
	return ""
}

func signedness(unsigned bool) string {
	if unsigned {
		return "unsigned"
	}
	return "signed"
}

func (t *Table) columnNames() []string {
	out := make([]string, len(t.cols))
	for i, c := range t.cols {
		out[i] = c.name
	}
	return out
}

// Identity describes how rows of t are found, for logs.
func (t *Table) Identity() string {
	names := make([]string, len(t.key))
	for n, i := range t.key {
		names[n] = t.cols[i].name
	}
	switch t.keyKind {
	case keyPrimary:
		return "primary key (" + strings.Join(names, ", ") + ")"
	case keyUnique:
		return "unique key " + t.keyName + " (" + strings.Join(names, ", ") + ")"
	}
	return "every column, one row at a time (no primary key and no unique key over NOT NULL columns)"
}

// binlogFamily is tabledef.TypeFamily for a table map column type. ENUM and SET are logged as STRING, so
// strings, ENUM and SET are one family.
func binlogFamily(tp byte) string {
	switch tp {
	case mysql.MYSQL_TYPE_TINY, mysql.MYSQL_TYPE_SHORT, mysql.MYSQL_TYPE_INT24, mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_LONGLONG:
		return "integer"
	case mysql.MYSQL_TYPE_FLOAT, mysql.MYSQL_TYPE_DOUBLE:
		return "floating-point"
	case mysql.MYSQL_TYPE_NEWDECIMAL, mysql.MYSQL_TYPE_DECIMAL:
		return "decimal"
	case mysql.MYSQL_TYPE_BIT:
		return "bit"
	case mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_NEWDATE:
		return "date"
	case mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_DATETIME2, mysql.MYSQL_TYPE_TIMESTAMP, mysql.MYSQL_TYPE_TIMESTAMP2:
		return "date and time"
	case mysql.MYSQL_TYPE_TIME, mysql.MYSQL_TYPE_TIME2:
		return "time"
	case mysql.MYSQL_TYPE_YEAR:
		return "year"
	case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING, mysql.MYSQL_TYPE_STRING, mysql.MYSQL_TYPE_ENUM, mysql.MYSQL_TYPE_SET,
		mysql.MYSQL_TYPE_TINY_BLOB, mysql.MYSQL_TYPE_MEDIUM_BLOB, mysql.MYSQL_TYPE_LONG_BLOB, mysql.MYSQL_TYPE_BLOB, mysql.MYSQL_TYPE_JSON:
		return "string"
	case mysql.MYSQL_TYPE_GEOMETRY:
		return "geometry"
	}
	return ""
}

// Schema returns the table's schema on the target.
func (t *Table) Schema() string { return t.schema }

// Name returns the table's name on the target.
func (t *Table) Name() string { return t.name }

// Quoted returns `schema`.`name`.
func (t *Table) Quoted() string { return t.quoted }

// KeyColumns names the columns that identify a row, as they precede IN (`id` or (`a`,`b`));
// empty for a table whose rows every column identifies, or a nil t.
func (t *Table) KeyColumns() string {
	if t == nil {
		return ""
	}
	return string(t.keyTuple)
}

// Keyless reports whether t has no primary key and no unique key over NOT NULL columns: its rows
// are identified by every column, one row at a time with LIMIT 1.
func (t *Table) Keyless() bool { return t.keyKind == keyAll }
