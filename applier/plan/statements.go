package plan

import (
	"github.com/vplayer/vplayer/event"
)

// lenient reports whether any after image of rows needs sqlModeLenient, and if so adds the
// statement that sets it; the caller restores strictness with strict after its statement.
func (b *Batch) lenient(t *Table, rows ...event.Row) bool {
	for _, r := range rows {
		if needsLenient(t, t.writable, r.After) {
			b.Add("", "SET SESSION sql_mode='"+sqlModeLenient+"'")
			return true
		}
	}
	return false
}

func (b *Batch) strict() {
	b.Add("", "SET SESSION sql_mode='"+SQLModeStrict+"'")
}

// appendInsert appends one multi-row INSERT for rows of t.
func appendInsert(b *Batch, t *Table, rows []event.Row) error {
	return appendInsertTail(b, t, rows, t.insertShape, nil)
}

// appendInsertMode appends the inserts of rows of t as --exec-mode wants them: in strict mode a
// plain INSERT (a key that exists fails it with a duplicate-key error); in idempotent mode, for
// a table with a key, a probe that counts the keys that already exist and an upsert that writes
// the rows' images over them.
func appendInsertMode(b *Batch, t *Table, rows []event.Row, mode, gtid string) error {
	if mode != ExecModeIdempotent || t.keyKind == keyAll {
		return appendInsert(b, t, rows)
	}
	c := Check{Want: 0, Kind: InsertExists, Table: t, rows: rows, GTID: gtid} // rows only for keyLiterals, now
	keys := c.KeyLiterals()
	appendTouch(b, t, keys)
	c.Keys, c.rows = keys, nil
	b.expect(c)
	return appendUpsert(b, t, rows)
}

// appendInsertTail appends one multi-row INSERT for rows of t followed by tail (an ON DUPLICATE
// KEY UPDATE clause, or nothing).
func appendInsertTail(b *Batch, t *Table, rows []event.Row, shape string, tail []byte) error {
	if b.lenient(t, rows...) {
		defer b.strict()
	}
	defer func() { b.buf = append(b.buf, tail...) }()
	b.begin(shape)
	b.buf = append(b.buf, t.insertHead...)
	var err error
	b.buf, err = appendAfterTuples(b.buf, t, t.writable, rows)
	return err
}

// appendAfterTuples appends the after images of rows, columns cols of each, as comma-separated
// tuples: the VALUES list of a multi-row INSERT.
func appendAfterTuples(buf []byte, t *Table, cols []int, rows []event.Row) ([]byte, error) {
	for n, r := range rows {
		if n > 0 {
			buf = append(buf, ',')
		}
		var err error
		if buf, err = appendTuple(buf, t, cols, r.After); err != nil {
			return buf, err
		}
	}
	return buf, nil
}

func appendTuple(buf []byte, t *Table, cols []int, vals []any) ([]byte, error) {
	buf = append(buf, '(')
	for n, i := range cols {
		if n > 0 {
			buf = append(buf, ',')
		}
		var err error
		if buf, err = appendValue(buf, &t.cols[i], vals[i]); err != nil {
			return buf, err
		}
	}
	return append(buf, ')'), nil
}

// appendWhere appends the row-identity condition for the before image vals: key columns equal
// to the image's (key columns are NOT NULL), or, for a table without a usable key, every column
// matching exactly (see appendMatch) and LIMIT 1: identical rows are interchangeable.
func appendWhere(buf []byte, t *Table, vals []any) ([]byte, error) {
	buf = append(buf, " WHERE "...)
	for n, i := range t.key {
		if n > 0 {
			buf = append(buf, " AND "...)
		}
		var err error
		if t.keyKind == keyAll {
			buf, err = appendMatch(buf, &t.cols[i], vals[i])
		} else {
			buf = append(buf, t.cols[i].quoted...)
			buf = append(buf, '=')
			buf, err = appendValue(buf, &t.cols[i], vals[i])
		}
		if err != nil {
			return buf, err
		}
	}
	if t.keyKind == keyAll {
		buf = append(buf, " LIMIT 1"...)
	}
	return buf, nil
}

// appendUpdate appends one UPDATE per row: every writable column set from the after image, the
// row found by the before image's key (so updates that change the key work). Each must match
// one row; in idempotent mode, one that matches none is followed by the insert of its after
// image.
func appendUpdate(b *Batch, t *Table, rows []event.Row, mode, gtid string) error {
	for _, r := range rows {
		if err := appendUpdateRow(b, t, r, mode, gtid); err != nil {
			return err
		}
	}
	return nil
}

func appendUpdateRow(b *Batch, t *Table, r event.Row, mode, gtid string) error {
	if b.lenient(t, r) {
		defer b.strict()
	}
	b.begin(t.updateShape)
	b.buf = append(b.buf, "UPDATE "...)
	b.buf = append(b.buf, t.quoted...)
	b.buf = append(b.buf, " SET "...)
	if err := appendSetWhere(b, t, r); err != nil {
		return err
	}
	b.expect(Check{Want: 1, Kind: UpdateMissing, Table: t, row: r, before: true, GTID: gtid, Partial: t.partial})
	if mode != ExecModeIdempotent || t.partial {
		return nil
	}
	return appendInsertIfNoneMatched(b, t, r.After, "")
}

// appendInsertIfNoneMatched appends, after an UPDATE of idempotent mode, the INSERT of its after
// image that runs only when the UPDATE matched no row (ROW_COUNT() = 0), prefix before it. The
// after image's key may exist already (a key change onto a row the target has): it is written
// over that row, as idempotent mode writes every after image.
func appendInsertIfNoneMatched(b *Batch, t *Table, after []any, prefix string) error {
	b.begin(t.insertShape)
	b.buf = append(b.buf, prefix...)
	b.buf = append(b.buf, t.insertHead[:len(t.insertHead)-len("VALUES ")]...)
	b.buf = append(b.buf, "SELECT "...)
	tuple, err := appendTuple(nil, t, t.writable, after)
	if err != nil {
		return err
	}
	b.buf = append(b.buf, tuple[1:len(tuple)-1]...)
	b.buf = append(b.buf, " FROM DUAL WHERE ROW_COUNT() = 0"...)
	b.buf = append(b.buf, t.upsertTail...)
	return nil
}

// appendDelete appends the deletes of rows: one DELETE ... WHERE key IN (...) when rows are
// identified by a key (deleting a set of distinct keys is the same as deleting them one by one),
// else one DELETE ... LIMIT 1 per row.
func appendDelete(b *Batch, t *Table, rows []event.Row, gtid string) error {
	// One statement per row where a set would not do: without a key, and where a foreign key or
	// a trigger could see the order (a self-referencing table whose children the source
	// deleted first: one IN list would delete in index order, cascading rows it then misses).
	if t.keyKind == keyAll || t.related || len(rows) == 1 {
		for _, r := range rows {
			b.begin(t.deleteShape)
			b.buf = append(b.buf, "DELETE FROM "...)
			b.buf = append(b.buf, t.quoted...)
			var err error
			if b.buf, err = appendWhere(b.buf, t, r.Before); err != nil {
				return err
			}
			b.expect(Check{Want: 1, Kind: DeleteMissing, Table: t, row: r, before: true, GTID: gtid})
		}
		return nil
	}
	b.begin(t.deleteShape)
	b.buf = append(b.buf, "DELETE FROM "...)
	b.buf = append(b.buf, t.quoted...)
	b.buf = append(b.buf, " WHERE "...)
	if len(t.key) == 1 {
		b.buf = append(b.buf, t.cols[t.key[0]].quoted...)
	} else {
		b.buf = append(b.buf, '(')
		for n, i := range t.key {
			if n > 0 {
				b.buf = append(b.buf, ',')
			}
			b.buf = append(b.buf, t.cols[i].quoted...)
		}
		b.buf = append(b.buf, ')')
	}
	return appendKeysIn(b, t, rows, gtid)
}

// appendKeysIn appends " IN (...)" with the key of each row's before image, after the key
// columns of a DELETE, and the check that the statement deletes every one of the rows.
func appendKeysIn(b *Batch, t *Table, rows []event.Row, gtid string) error {
	b.buf = append(b.buf, " IN ("...)
	for n, r := range rows {
		if n > 0 {
			b.buf = append(b.buf, ',')
		}
		var err error
		if len(t.key) == 1 {
			b.buf, err = appendValue(b.buf, &t.cols[t.key[0]], r.Before[t.key[0]])
		} else {
			b.buf, err = appendTuple(b.buf, t, t.key, r.Before)
		}
		if err != nil {
			return err
		}
	}
	b.buf = append(b.buf, ')')
	b.expect(Check{Want: int64(len(rows)), Kind: DeleteMissing, Table: t, rows: append([]event.Row(nil), rows...), before: true, GTID: gtid})
	return nil
}

// appendSetWhere appends an UPDATE's assignments, every writable column from r's after image,
// and its row identity from r's before image.
func appendSetWhere(b *Batch, t *Table, r event.Row) error {
	if len(t.writable) == 0 {
		// A partial after image with no column vplayer writes (a source column the target
		// lacks changed): the row must still be there.
		c := t.cols[t.key[0]].quoted
		b.buf = append(b.buf, c+"="+c...)
	}
	for n, i := range t.writable {
		if n > 0 {
			b.buf = append(b.buf, ',')
		}
		b.buf = append(b.buf, t.cols[i].quoted...)
		b.buf = append(b.buf, '=')
		var err error
		if b.buf, err = appendValue(b.buf, &t.cols[i], r.After[i]); err != nil {
			return err
		}
	}
	var err error
	b.buf, err = appendWhere(b.buf, t, r.Before)
	return err
}
