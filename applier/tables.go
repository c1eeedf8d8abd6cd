package applier

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"

	"github.com/vplayer/vplayer/applier/plan"
	"github.com/vplayer/vplayer/event"
	"github.com/vplayer/vplayer/tabledef"
)

// loadTable reads the target definition of schema.name and builds the table from it.
func loadTable(ctx context.Context, db *sql.DB, schema, name string) (*plan.Table, error) {
	d, err := tabledef.Load(ctx, db, schema, name)
	if errors.Is(err, tabledef.ErrPeriod) {
		return nil, fmt.Errorf("%w: %w", plan.ErrSchemaDrift, err)
	}
	if err != nil {
		return nil, err
	}
	if len(d.Columns) == 0 {
		return nil, fmt.Errorf("%w: table %s does not exist on the target: create it with the source's definition", plan.ErrSchemaDrift, d.Quoted())
	}
	// Folding reorders a table's changes and turns updates into upserts, and a delete of a set of
	// keys runs in index order: a foreign key (the table's or one that references it) or a
	// trigger could observe that, so such tables keep their changes as the source wrote them.
	if d.Related, err = tabledef.Related(ctx, db, schema, name); err != nil {
		return nil, err
	}
	if d.Period != nil {
		if err := probeVersioning(ctx, db, d.Quoted()); err != nil {
			return nil, err
		}
	}
	return plan.BuildTable(d)
}

// Keyless reports whether rows of schema.name on the target are identified by every column (the
// table has no primary key and no unique key over NOT NULL columns): each change is then applied
// one row at a time with LIMIT 1. The stream warns about such tables at start.
func Keyless(ctx context.Context, db *sql.DB, schema, name string) (bool, error) {
	t, err := loadTable(ctx, db, schema, name)
	if err != nil {
		return false, err
	}
	return t.Keyless(), nil
}

// tableCache holds target definitions, keyed by source schema and table.
type tableCache struct {
	db       *sql.DB
	source   *sql.DB // nil: the source's table kinds are not read
	targetDB string
	logger   *slog.Logger
	byName   map[string]*plan.Table
	checked  map[*event.Table]*plan.Table
}

func newTableCache(db, source *sql.DB, targetDB string, logger *slog.Logger) *tableCache {
	return &tableCache{db: db, source: source, targetDB: targetDB, logger: logger, byName: map[string]*plan.Table{}, checked: map[*event.Table]*plan.Table{}}
}

// get returns the target table for a binlog table, checked against it.
func (c *tableCache) get(ctx context.Context, bt *event.Table) (*plan.Table, error) {
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
		if c.source != nil && !t.Versioned() {
			// A plain target table of a system-versioned source table (plan's SetSourceVersioned).
			versioned, err := tabledef.Versioned(ctx, c.source, bt.Schema, bt.Name)
			if err != nil {
				return nil, fmt.Errorf("source: %w", err)
			}
			if versioned {
				t.SetSourceVersioned()
			}
		}
		c.logger.Debug("table definition loaded", "table", t.Quoted(), "row_identity", t.Identity())
		c.byName[bt.Name] = t
	}
	if err := t.Check(bt); err != nil {
		return nil, err
	}
	if extra := t.ExtraColumns(bt); extra != "" {
		c.logger.Info("table columns differ", "table", t.Quoted(), "detail", extra)
	}
	c.checked[bt] = t
	return t, nil
}

// reset forgets every definition, after DDL.
func (c *tableCache) reset() {
	clear(c.byName)
	clear(c.checked)
}
