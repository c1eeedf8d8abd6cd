// Package compare checks that tables on two servers hold the same rows, value for value: tests,
// the demo and the benchmark use it to prove that the target equals the source.
//
// Each column is read in an exact form chosen from its type (see newColumn): integers, DECIMAL,
// temporal types with every fractional digit (TIMESTAMP in UTC), YEAR, BIT, UUID and INET as
// exact text; ENUM and SET as their index and their text's bytes; character strings as the hex of
// their stored bytes; binary strings, BLOBs and spatial types as their stored bytes; FLOAT and
// DOUBLE as their stored bits. No value is converted to a rounded number or text on the way, so a
// changed cent, fractional second or last bit of a float is a difference.
package compare

import (
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
	// EmptyExpected is set for a table named in ExpectEmpty: it is equal only when neither
	// side has a row. Any other table is equal only when the source has at least one row,
	// since a comparison of no rows proves nothing.
	EmptyExpected bool
}

// Equal reports whether the table matched: the same rows on both sides, and rows on the source
// unless the table was expected to be empty, in which case none on either side.
func (r Result) Equal() bool {
	if r.SourceRows != r.TargetRows || r.Mismatches != 0 {
		return false
	}
	return (r.SourceRows == 0) == r.EmptyExpected
}

func (r Result) String() string {
	switch {
	case r.Equal() && r.EmptyExpected:
		return fmt.Sprintf("%s: empty on both sides, as expected", r.Table)
	case r.Equal():
		return fmt.Sprintf("%s: %d rows, equal", r.Table, r.SourceRows)
	case r.SourceRows == 0 && r.TargetRows == 0:
		return fmt.Sprintf("%s: DIFFERENT: empty on both sides, nothing compared (ExpectEmpty says when that is right)", r.Table)
	case r.EmptyExpected && r.SourceRows == r.TargetRows && r.Mismatches == 0:
		return fmt.Sprintf("%s: DIFFERENT: %d rows, equal, but expected empty", r.Table, r.SourceRows)
	}
	return fmt.Sprintf("%s: DIFFERENT: source %d rows, target %d rows, %d mismatches; first: %s", r.Table, r.SourceRows, r.TargetRows, r.Mismatches, r.First)
}

// Option changes how Tables compares.
type Option func(*options)

type options struct {
	empty map[string]bool // tables expected to be empty
}

// ExpectEmpty names tables the caller expects to have no rows: each is equal only when empty on
// both sides. Without it, a table empty on the source is never equal.
func ExpectEmpty(tables ...string) Option {
	return func(o *options) {
		for _, t := range tables {
			o.empty[t] = true
		}
	}
}

// Tables compares each table of srcDB on src with the same-named table of dstDB on dst, row by row
// in one order of all columns, every column read in its exact form. A source column missing on
// the target, or of another type there, is an error; columns only the target has are not
// compared. Each table is read on one connection of each pool at a time, whose session time_zone
// is set to UTC for the read and restored after it: src and dst may be the same pool only if it
// allows two connections.
func Tables(ctx context.Context, src, dst *sql.DB, srcDB, dstDB string, tables []string, opts ...Option) ([]Result, error) {
	o := options{empty: map[string]bool{}}
	for _, opt := range opts {
		opt(&o)
	}
	out := make([]Result, 0, len(tables))
	for _, t := range tables {
		r, err := table(ctx, src, dst, srcDB, dstDB, t)
		if err != nil {
			return out, fmt.Errorf("compare %s: %w", t, err)
		}
		r.EmptyExpected = o.empty[t]
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

func table(ctx context.Context, src, dst *sql.DB, srcDB, dstDB, name string) (Result, error) {
	res := Result{Table: name}
	cols, err := columns(ctx, src, srcDB, name)
	if err != nil {
		return res, fmt.Errorf("source: %w", err)
	}
	dcols, err := columns(ctx, dst, dstDB, name)
	if err != nil {
		return res, fmt.Errorf("target: %w", err)
	}
	if err := sameColumns(cols, dcols); err != nil {
		return res, err
	}
	exprs := make([]string, len(cols))
	order := make([]string, len(cols))
	for i, c := range cols {
		exprs[i] = c.expr
		order[i] = c.order
	}
	q := func(db string) string {
		return "SELECT " + strings.Join(exprs, ", ") + " FROM " + sqlq.Ident(db) + "." + sqlq.Ident(name) + " ORDER BY " + strings.Join(order, ", ")
	}
	a, err := openReader(ctx, src, q(srcDB), len(cols))
	if err != nil {
		return res, fmt.Errorf("read source: %w", err)
	}
	defer a.close(ctx)
	b, err := openReader(ctx, dst, q(dstDB), len(cols))
	if err != nil {
		return res, fmt.Errorf("read target: %w", err)
	}
	defer b.close(ctx)
	for {
		hasA, err := a.next()
		if err != nil {
			return res, fmt.Errorf("read source: %w", err)
		}
		hasB, err := b.next()
		if err != nil {
			return res, fmt.Errorf("read target: %w", err)
		}
		if hasA {
			res.SourceRows++
		}
		if hasB {
			res.TargetRows++
		}
		switch {
		case !hasA && !hasB:
			return res, nil
		case hasA && hasB:
			for i, c := range cols {
				if !sameValue(a.values[i], b.values[i]) {
					if res.Mismatches == 0 {
						res.First = fmt.Sprintf("row %d, column %s: source %s, target %s", res.SourceRows, c.name, show(c.form, a.values[i]), show(c.form, b.values[i]))
					}
					res.Mismatches++
					break
				}
			}
		case res.First == "" && hasA:
			res.First = fmt.Sprintf("source has more rows; next source row: %s", showRow(cols, a.values))
		case res.First == "":
			res.First = fmt.Sprintf("target has more rows; next target row: %s", showRow(cols, b.values))
		}
	}
}

// showRow renders a row's first columns for a difference's description.
func showRow(cols []column, values []any) string {
	const most = 4
	parts := make([]string, 0, most)
	for i, c := range cols {
		if i == most {
			parts = append(parts, "...")
			break
		}
		parts = append(parts, c.name+"="+show(c.form, values[i]))
	}
	return strings.Join(parts, ", ")
}
