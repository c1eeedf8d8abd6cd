package applier

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/vplayer/vplayer/event"
	"github.com/vplayer/vplayer/sqlq"
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

// column is one target column, in ordinal order.
type column struct {
	name      string
	dataType  string // information_schema DATA_TYPE, lower case
	unsigned  bool
	generated bool
	quoted    string // backquoted name
}

// table is what the applier knows of one target table.
type table struct {
	schema, name string
	quoted       string // `schema`.`name`
	cols         []column
	key          []int // column indexes identifying a row
	keyKind      keyKind
	writable     []int // non-generated column indexes
	insertHead   []byte
	deleteShape  string
	insertShape  string
	updateShape  string
}

// loadTable reads the target definition of schema.name.
func loadTable(ctx context.Context, db *sql.DB, schema, name string) (*table, error) {
	rows, err := db.QueryContext(ctx, `SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, EXTRA, IS_NULLABLE
FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, schema, name)
	if err != nil {
		return nil, fmt.Errorf("read definition of %s.%s: %w", schema, name, err)
	}
	defer rows.Close()
	t := &table{schema: schema, name: name, quoted: sqlq.Ident(schema) + "." + sqlq.Ident(name)}
	notNull := map[string]bool{}
	for rows.Next() {
		var c column
		var colType, extra, nullable string
		if err := rows.Scan(&c.name, &c.dataType, &colType, &extra, &nullable); err != nil {
			return nil, fmt.Errorf("read definition of %s.%s: %w", schema, name, err)
		}
		c.dataType = strings.ToLower(c.dataType)
		c.unsigned = strings.Contains(strings.ToLower(colType), "unsigned")
		extra = strings.ToUpper(extra)
		c.generated = strings.Contains(extra, "VIRTUAL") || strings.Contains(extra, "STORED") || strings.Contains(extra, "PERSISTENT")
		c.quoted = sqlq.Ident(c.name)
		notNull[c.name] = nullable == "NO"
		t.cols = append(t.cols, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read definition of %s.%s: %w", schema, name, err)
	}
	if len(t.cols) == 0 {
		return nil, fmt.Errorf("%w: table %s does not exist on the target: create it with the source's definition", ErrSchemaDrift, t.quoted)
	}
	if err := t.loadKey(ctx, db, notNull); err != nil {
		return nil, err
	}
	for i, c := range t.cols {
		if !c.generated {
			t.writable = append(t.writable, i)
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
	t.updateShape = "UPDATE " + t.quoted
	t.deleteShape = "DELETE " + t.quoted
	return t, nil
}

func (t *table) loadKey(ctx context.Context, db *sql.DB, notNull map[string]bool) error {
	rows, err := db.QueryContext(ctx, `SELECT INDEX_NAME, NON_UNIQUE, COLUMN_NAME
FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY INDEX_NAME = 'PRIMARY' DESC, INDEX_NAME, SEQ_IN_INDEX`, t.schema, t.name)
	if err != nil {
		return fmt.Errorf("read keys of %s: %w", t.quoted, err)
	}
	defer rows.Close()
	type index struct {
		name    string
		cols    []string
		usable  bool
		primary bool
	}
	var order []*index
	byName := map[string]*index{}
	for rows.Next() {
		var name, col string
		var nonUnique int
		if err := rows.Scan(&name, &nonUnique, &col); err != nil {
			return fmt.Errorf("read keys of %s: %w", t.quoted, err)
		}
		if nonUnique != 0 {
			continue
		}
		ix := byName[name]
		if ix == nil {
			ix = &index{name: name, usable: true, primary: name == "PRIMARY"}
			byName[name] = ix
			order = append(order, ix)
		}
		ix.cols = append(ix.cols, col)
		if !notNull[col] {
			ix.usable = false
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read keys of %s: %w", t.quoted, err)
	}
	for _, ix := range order {
		if !ix.usable {
			continue
		}
		key := make([]int, 0, len(ix.cols))
		for _, name := range ix.cols {
			for i, c := range t.cols {
				if c.name == name && !c.generated {
					key = append(key, i)
				}
			}
		}
		if len(key) != len(ix.cols) {
			continue
		}
		t.key = key
		if ix.primary {
			t.keyKind = keyPrimary
		} else {
			t.keyKind = keyUnique
		}
		return nil
	}
	t.keyKind = keyAll
	t.key = nil
	for i, c := range t.cols {
		if !c.generated {
			t.key = append(t.key, i)
		}
	}
	return nil
}

// check cross-checks the binlog's table map against the target definition.
func (t *table) check(bt *event.Table) error {
	if bt.ColumnCount != len(t.cols) {
		return fmt.Errorf("%w on %s: the binlog row has %d columns, the target table has %d: make the target's columns match the source's, in the same order",
			ErrSchemaDrift, t.quoted, bt.ColumnCount, len(t.cols))
	}
	if bt.ColumnNames != nil {
		var diffs []string
		for i, n := range bt.ColumnNames {
			if !strings.EqualFold(n, t.cols[i].name) {
				diffs = append(diffs, fmt.Sprintf("column %d is %s on the source but %s on the target", i+1, n, t.cols[i].name))
			}
		}
		if len(diffs) > 0 {
			return fmt.Errorf("%w on %s: %s", ErrSchemaDrift, t.quoted, strings.Join(diffs, "; "))
		}
	}
	return nil
}

// tableCache holds target definitions, keyed by source schema and table.
type tableCache struct {
	db       *sql.DB
	targetDB string
	logger   *slog.Logger
	byName   map[string]*table
	checked  map[*event.Table]*table
}

func newTableCache(db *sql.DB, targetDB string, logger *slog.Logger) *tableCache {
	return &tableCache{db: db, targetDB: targetDB, logger: logger, byName: map[string]*table{}, checked: map[*event.Table]*table{}}
}

// get returns the target table for a binlog table, checked against it.
func (c *tableCache) get(ctx context.Context, bt *event.Table) (*table, error) {
	if t, ok := c.checked[bt]; ok {
		return t, nil
	}
	t, ok := c.byName[bt.Name]
	if !ok {
		var err error
		t, err = loadTable(ctx, c.db, c.targetDB, bt.Name)
		if err != nil {
			return nil, err
		}
		if t.keyKind == keyAll {
			c.logger.Warn("table has no primary key and no unique key over NOT NULL columns: rows are matched on every column, one at a time", "table", t.quoted)
		}
		c.byName[bt.Name] = t
	}
	if err := t.check(bt); err != nil {
		return nil, err
	}
	c.checked[bt] = t
	return t, nil
}

// reset forgets every definition, after DDL.
func (c *tableCache) reset() {
	clear(c.byName)
	clear(c.checked)
}
