package vdiff

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/vplayer/vplayer/sqlq"
	"github.com/vplayer/vplayer/tabledef"
	"github.com/vplayer/vplayer/tablekey"
)

// Querier runs queries: a *sql.Conn holding a snapshot transaction, or a *sql.DB in tests.
type Querier = tabledef.Querier

// Key kinds, as TableResult.KeyKind names them.
const (
	KeyPrimary = "primary key"
	KeyUnique  = "unique key"
	KeyNone    = "no key: rows compared as a whole"
)

// Options shape a table comparison.
type Options struct {
	// ChunkSize is how many source rows, in key order, one checksummed chunk holds. Default 1000.
	ChunkSize int
	// MaxKeys is how many keys of each kind of difference a result lists. Default 10.
	MaxKeys int
}

func (o Options) withDefaults() Options {
	if o.ChunkSize <= 0 {
		o.ChunkSize = 1000
	}
	if o.MaxKeys <= 0 {
		o.MaxKeys = 10
	}
	return o
}

// TableResult is the comparison of one table.
type TableResult struct {
	Table string
	// KeyKind says how rows are identified: KeyPrimary, KeyUnique and the key's name, or KeyNone.
	KeyKind string
	// SourceRows and TargetRows count the rows on each side.
	SourceRows, TargetRows int64
	// Compared counts the rows compared: every source row, and every row only on the target.
	Compared int64
	// Missing counts rows on the source only, Extra rows on the target only, Differing rows on
	// both sides whose contents differ.
	Missing, Extra, Differing int64
	// MissingKeys, ExtraKeys and DifferingKeys list the first keys of each (for a table without
	// a key, the first columns of the row), as "col=value,...".
	MissingKeys, ExtraKeys, DifferingKeys []string
	// Chunks counts the chunks checksummed; RowChunks those whose checksums differed and whose
	// rows were compared one by one.
	Chunks, RowChunks int
	// Problem, when set, is why the table could not be compared (it is missing on the target, or
	// the columns the two tables share differ); the table then counts as different.
	Problem string
	// Columns counts the columns compared: those the two tables share, the first of each, as many
	// as the narrower table has (tabledef.SharedColumns). SourceOnly and TargetOnly name the
	// columns after them, on the side that has more: replication leaves the source's unwritten and
	// the target's at their defaults, and the comparison does not read them.
	Columns                int
	SourceOnly, TargetOnly []string
}

// ColumnsNote says what was compared of a table whose source and target have different numbers
// of columns ("compared 3 shared columns; target has 1 more: added"); "" when they have the same.
func (r TableResult) ColumnsNote() string {
	side, more := "source", r.SourceOnly
	if len(r.TargetOnly) > 0 {
		side, more = "target", r.TargetOnly
	}
	if len(more) == 0 {
		return ""
	}
	return fmt.Sprintf("compared %d shared columns; %s has %d more: %s", r.Columns, side, len(more), strings.Join(more, ", "))
}

// Equal reports whether the table is the same on both sides.
func (r TableResult) Equal() bool {
	return r.Problem == "" && r.Missing == 0 && r.Extra == 0 && r.Differing == 0
}

// table is the SQL of one table's comparison, the same text on both sides.
type table struct {
	name      string
	src, dst  string // qualified, quoted names
	cols      []tabledef.Column
	key       []tabledef.Column // nil: no key
	keyExprs  string            // the key columns as read (see tablekey.Expr)
	order     string            // ORDER BY list
	digest    string            // one row's digest: 32 hex digits
	display   []tabledef.Column // for a table without a key: the columns shown for a row
	dispExprs string
}

// chunk is a range of keys: above lo (nil: from the start) and up to and including hi (nil: to
// the end).
type chunk struct{ lo, hi []string }

// checksum sums a chunk's row digests: a count and two 64-bit halves summed exactly (a sum, not
// an XOR, so that two equal rows never cancel out).
type checksum struct{ rows, a, b string }

// CompareTable compares table name of srcDB on src with the same table of dstDB on dst, both read
// inside their snapshots. It compares the columns the two tables share: either may have more
// columns after them, as replication allows (see TableResult.Columns). Rows are identified by the
// source's row identity among the shared columns (tabledef's: the primary key, else the first
// unique key over NOT NULL columns none of which is generated), else by all their shared columns. The source's rows are cut into chunks of
// opt.ChunkSize keys; each chunk's row count and digest sum is computed on both servers, and only
// the rows of chunks that differ are read and matched by key.
func CompareTable(ctx context.Context, src, dst Querier, srcDB, dstDB, name string, opt Options) (TableResult, error) {
	opt = opt.withDefaults()
	res := TableResult{Table: name}
	sdef, err := tabledef.Load(ctx, src, srcDB, name)
	if err != nil {
		return res, fmt.Errorf("source: %w", err)
	}
	if len(sdef.Columns) == 0 {
		return res, fmt.Errorf("source: table %s.%s does not exist", srcDB, name)
	}
	ddef, err := tabledef.Load(ctx, dst, dstDB, name)
	if err != nil {
		return res, fmt.Errorf("target: %w", err)
	}
	if len(ddef.Columns) == 0 {
		res.Problem = fmt.Sprintf("table %s.%s does not exist on the target", dstDB, name)
		return res, nil
	}
	// A hidden period's columns are compared too: a current row's row start (and row end), as
	// any column. The comparison reads current rows only (a plain SELECT): not the history.
	scols, dcols := sdef.AllColumns(), ddef.AllColumns()
	n, differ := tabledef.SharedColumns(scols, dcols)
	if differ != "" {
		res.Problem = fmt.Sprintf("columns differ: source (%s), target (%s): %s", names(scols), names(dcols), differ)
		return res, nil
	}
	res.Columns = n
	for _, c := range scols[n:] {
		res.SourceOnly = append(res.SourceOnly, c.Name)
	}
	for _, c := range dcols[n:] {
		res.TargetOnly = append(res.TargetOnly, c.Name)
	}
	cols := scols[:n]
	id := sdef.Identity(n)
	res.KeyKind = keyKind(id)
	t := newTable(srcDB, dstDB, name, cols, sdef.KeyColumns(id))
	var lo []string
	for {
		var hi []string
		if t.key != nil {
			if hi, err = t.boundary(ctx, src, lo, opt.ChunkSize); err != nil {
				return res, fmt.Errorf("source: %w", err)
			}
		}
		c := chunk{lo: lo, hi: hi}
		if err := t.compareChunk(ctx, src, dst, c, opt, &res); err != nil {
			return res, err
		}
		if hi == nil {
			break
		}
		lo = hi
	}
	res.Compared = res.SourceRows + res.Extra
	return res, nil
}

func names(cols []tabledef.Column) string { return strings.Join(tabledef.Names(cols), ", ") }

func newTable(srcDB, dstDB, name string, cols, keyCols []tabledef.Column) *table {
	t := &table{name: name, src: sqlq.Ident(srcDB) + "." + sqlq.Ident(name), dst: sqlq.Ident(dstDB) + "." + sqlq.Ident(name),
		cols: cols, key: keyCols}
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = digestExpr(c)
	}
	t.digest = "MD5(CONCAT_WS(',', " + strings.Join(parts, ", ") + "))"
	if keyCols != nil {
		exprs := make([]string, len(keyCols))
		order := make([]string, len(keyCols))
		for i, c := range keyCols {
			exprs[i], order[i] = tablekey.Expr(c), c.Ident()
		}
		t.keyExprs, t.order = strings.Join(exprs, ", "), strings.Join(order, ", ")
		return t
	}
	t.display = cols[:min(len(cols), 4)]
	exprs := make([]string, len(t.display))
	for i, c := range t.display {
		exprs[i] = "COALESCE(LEFT(" + tablekey.Expr(c) + ", 64), 'NULL')"
	}
	t.dispExprs = strings.Join(exprs, ", ")
	return t
}

// boundary returns the key that ends the chunk starting above lo: the chunk-th key after lo, or
// nil when fewer keys remain (the chunk runs to the end).
func (t *table) boundary(ctx context.Context, q Querier, lo []string, size int) ([]string, error) {
	query := "SELECT " + t.keyExprs + " FROM " + t.src + t.where(chunk{lo: lo}) + " ORDER BY " + t.order +
		fmt.Sprintf(" LIMIT 1 OFFSET %d", size-1)
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("find the chunks of %s: %w", t.name, err)
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, rows.Err()
	}
	vals, err := tablekey.ScanStrings(rows, len(t.key))
	if err != nil {
		return nil, fmt.Errorf("find the chunks of %s: %w", t.name, err)
	}
	return vals, rows.Err()
}

// where is the WHERE clause of a chunk, "" for the whole table. A key above lo and up to hi is
// written out column by column ((a > x) OR (a = x AND b > y) ...), which every server turns into
// index ranges.
func (t *table) where(c chunk) string {
	var conds []string
	if c.lo != nil {
		conds = append(conds, t.compare(c.lo, ">", ">"))
	}
	if c.hi != nil {
		conds = append(conds, t.compare(c.hi, "<", "<="))
	}
	if len(conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(conds, " AND ")
}

// compare is (key) op (vals) in key order: see tablekey.Compare.
func (t *table) compare(vals []string, strict, last string) string {
	return tablekey.Compare(t.key, vals, strict, last)
}

func (t *table) checksum(ctx context.Context, q Querier, from string, c chunk) (checksum, error) {
	query := "SELECT COUNT(*), COALESCE(SUM(CAST(CONV(LEFT(h, 16), 16, 10) AS UNSIGNED)), 0), COALESCE(SUM(CAST(CONV(RIGHT(h, 16), 16, 10) AS UNSIGNED)), 0)" +
		" FROM (SELECT " + t.digest + " AS h FROM " + from + t.where(c) + ") d"
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return checksum{}, fmt.Errorf("checksum %s: %w", t.name, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return checksum{}, fmt.Errorf("checksum %s: %w", t.name, err)
		}
		return checksum{}, fmt.Errorf("checksum %s: no result", t.name)
	}
	var s checksum
	if err := rows.Scan(&s.rows, &s.a, &s.b); err != nil {
		return checksum{}, fmt.Errorf("checksum %s: %w", t.name, err)
	}
	return s, rows.Err()
}

// compareChunk checksums a chunk on both sides and, when the sums differ, matches its rows.
func (t *table) compareChunk(ctx context.Context, src, dst Querier, c chunk, opt Options, res *TableResult) error {
	sa, err := t.checksum(ctx, src, t.src, c)
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	da, err := t.checksum(ctx, dst, t.dst, c)
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	res.Chunks++
	n, _ := strconv.ParseInt(sa.rows, 10, 64)
	m, _ := strconv.ParseInt(da.rows, 10, 64)
	res.SourceRows += n
	res.TargetRows += m
	if sa == da {
		return nil
	}
	res.RowChunks++
	srows, err := t.rows(ctx, src, t.src, c)
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	drows, err := t.rows(ctx, dst, t.dst, c)
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	add := func(list *[]string, count *int64, key string) {
		*count++
		if len(*list) < opt.MaxKeys {
			*list = append(*list, key)
		}
	}
	if t.key == nil {
		// Rows as a multiset of digests: a changed row is one missing and one extra.
		have := map[string]int{}
		for _, r := range drows {
			have[r.digest]++
		}
		for _, r := range srows {
			if have[r.digest] > 0 {
				have[r.digest]--
				continue
			}
			add(&res.MissingKeys, &res.Missing, r.show)
		}
		for _, r := range drows {
			if have[r.digest] > 0 {
				have[r.digest]--
				add(&res.ExtraKeys, &res.Extra, r.show)
			}
		}
		return nil
	}
	byKey := make(map[string]row, len(drows))
	for _, r := range drows {
		byKey[r.key] = r
	}
	for _, r := range srows {
		d, ok := byKey[r.key]
		switch {
		case !ok:
			add(&res.MissingKeys, &res.Missing, r.show)
		case d.digest != r.digest:
			add(&res.DifferingKeys, &res.Differing, r.show)
		}
		delete(byKey, r.key)
	}
	for _, r := range drows {
		if _, ok := byKey[r.key]; ok {
			add(&res.ExtraKeys, &res.Extra, r.show)
		}
	}
	return nil
}

// row is one row of a chunk that differs: its key as read, its digest, and how to show it.
type row struct{ key, digest, show string }

// rows reads a chunk's rows in key order.
func (t *table) rows(ctx context.Context, q Querier, from string, c chunk) ([]row, error) {
	exprs, shown := t.keyExprs, t.key
	if t.key == nil {
		exprs, shown = t.dispExprs, t.display
	}
	query := "SELECT " + t.digest + ", " + exprs + " FROM " + from + t.where(c)
	if t.order != "" {
		query += " ORDER BY " + t.order
	}
	rs, err := q.QueryContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("read the rows of %s: %w", t.name, err)
	}
	defer rs.Close()
	var out []row
	for rs.Next() {
		vals, err := tablekey.ScanStrings(rs, 1+len(shown))
		if err != nil {
			return nil, fmt.Errorf("read the rows of %s: %w", t.name, err)
		}
		parts := make([]string, len(shown))
		for i, c := range shown {
			v := vals[1+i]
			if t.key == nil && v == "NULL" {
				parts[i] = c.Name + "=NULL"
				continue
			}
			parts[i] = c.Name + "=" + tablekey.Display(c, v)
		}
		out = append(out, row{key: strings.Join(vals[1:], "\x00"), digest: vals[0], show: strings.Join(parts, ",")})
	}
	return out, rs.Err()
}

// digestExpr is c's contribution to a row's digest: its bytes, as the source and the target
// both render them, with NULL distinct from every value. Long types are hashed on their own so
// that a row's digest never outgrows max_allowed_packet.
func digestExpr(c tabledef.Column) string {
	v := "CAST(" + c.Ident() + " AS BINARY)"
	switch c.Type {
	case "float":
		v = "CAST(" + c.Ident() + "+0e0 AS BINARY)"
	}
	switch c.Type {
	case "tinytext", "text", "mediumtext", "longtext", "tinyblob", "blob", "mediumblob", "longblob", "json",
		"geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon", "geometrycollection":
		return "COALESCE(MD5(" + v + "), 'N')"
	}
	return "COALESCE(HEX(" + v + "), 'N')"
}
