// Package compare checks that tables on two servers hold the same rows, byte for byte. Tests, the
// demo and the benchmark use it to prove that the target equals the source.
package compare

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/vplayer/vplayer/sqlq"
)

// Result is the outcome of comparing one table.
type Result struct {
	Table      string
	SourceRows int
	TargetRows int
	// Mismatches counts row positions whose contents differ, in the tables' shared order.
	Mismatches int
	// First describes the first difference, empty when equal.
	First string
}

// Equal reports whether the table matched.
func (r Result) Equal() bool {
	return r.SourceRows == r.TargetRows && r.Mismatches == 0
}

func (r Result) String() string {
	if r.Equal() {
		return fmt.Sprintf("%s: %d rows, equal", r.Table, r.SourceRows)
	}
	return fmt.Sprintf("%s: DIFFERENT: source %d rows, target %d rows, %d mismatches; first: %s", r.Table, r.SourceRows, r.TargetRows, r.Mismatches, r.First)
}

// Tables compares each table of srcDB on src with the same-named table of dstDB on dst, row by row
// in the order of all columns, every column read as HEX() so that bytes, not renderings, are
// compared.
func Tables(ctx context.Context, src, dst *sql.DB, srcDB, dstDB string, tables []string) ([]Result, error) {
	out := make([]Result, 0, len(tables))
	for _, t := range tables {
		r, err := table(ctx, src, dst, srcDB, dstDB, t)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

// AllEqual reports whether every result is equal.
func AllEqual(rs []Result) bool {
	for _, r := range rs {
		if !r.Equal() {
			return false
		}
	}
	return true
}

func columns(ctx context.Context, db *sql.DB, schema, table string) ([]string, error) {
	rows, err := db.QueryContext(ctx, "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION", schema, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("table %s.%s does not exist", schema, table)
	}
	return cols, rows.Err()
}

func table(ctx context.Context, src, dst *sql.DB, srcDB, dstDB, name string) (Result, error) {
	res := Result{Table: name}
	cols, err := columns(ctx, src, srcDB, name)
	if err != nil {
		return res, fmt.Errorf("source: %w", err)
	}
	exprs := make([]string, len(cols))
	order := make([]string, len(cols))
	for i, c := range cols {
		exprs[i] = "HEX(" + sqlq.Ident(c) + ")"
		order[i] = sqlq.Ident(c)
	}
	q := func(db string) string {
		return "SELECT " + strings.Join(exprs, ",") + " FROM " + sqlq.Ident(db) + "." + sqlq.Ident(name) + " ORDER BY " + strings.Join(order, ",")
	}
	a, err := src.QueryContext(ctx, q(srcDB))
	if err != nil {
		return res, fmt.Errorf("read source %s: %w", name, err)
	}
	defer a.Close()
	b, err := dst.QueryContext(ctx, q(dstDB))
	if err != nil {
		return res, fmt.Errorf("read target %s: %w", name, err)
	}
	defer b.Close()
	ra := make([]sql.RawBytes, len(cols))
	rb := make([]sql.RawBytes, len(cols))
	pa := make([]any, len(cols))
	pb := make([]any, len(cols))
	for i := range cols {
		pa[i], pb[i] = &ra[i], &rb[i]
	}
	for {
		hasA, hasB := a.Next(), b.Next()
		if hasA {
			if err := a.Scan(pa...); err != nil {
				return res, err
			}
			res.SourceRows++
		}
		if hasB {
			if err := b.Scan(pb...); err != nil {
				return res, err
			}
			res.TargetRows++
		}
		if !hasA && !hasB {
			break
		}
		if hasA && hasB {
			for i := range cols {
				if !bytes.Equal(ra[i], rb[i]) || (ra[i] == nil) != (rb[i] == nil) {
					if res.Mismatches == 0 {
						res.First = fmt.Sprintf("row %d, column %s: source %s, target %s", res.SourceRows, cols[i], show(ra[i]), show(rb[i]))
					}
					res.Mismatches++
					break
				}
			}
		} else if res.First == "" {
			if hasA {
				res.First = fmt.Sprintf("source has more rows; next source row starts with %s", show(ra[0]))
			} else {
				res.First = fmt.Sprintf("target has more rows; next target row starts with %s", show(rb[0]))
			}
		}
	}
	if err := a.Err(); err != nil {
		return res, err
	}
	return res, b.Err()
}

func show(b sql.RawBytes) string {
	if b == nil {
		return "NULL"
	}
	if len(b) > 64 {
		return "0x" + string(b[:64]) + "..."
	}
	return "0x" + string(b)
}
