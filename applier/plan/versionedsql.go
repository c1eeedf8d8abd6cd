package plan

import "github.com/vplayer/vplayer/event"

// The statements that write a system-versioned table's rows (see versioned.go): each runs at the
// source's instant, so that the target versions the rows as the source did.

// appendHistory appends one INSERT of history rows of t, every column of their images as it is.
func appendHistory(b *Batch, t *Table, rows []event.Row) error {
	if b.lenient(t, rows...) {
		defer b.strict()
	}
	v := t.versioned
	b.begin(t.insertShape)
	b.buf = append(b.buf, v.histHead...)
	var err error
	b.buf, err = appendAfterTuples(b.buf, t, v.histCols, rows)
	return err
}

// appendVersionedUpdate appends the UPDATE of r at instant at: every writable column set from the
// after image, the row found by the before image's key; in idempotent mode, the after image
// inserted when it found none.
func appendVersionedUpdate(b *Batch, t *Table, at stamp, r event.Row, mode, gtid string) error {
	if b.lenient(t, r) {
		defer b.strict()
	}
	b.begin(t.updateShape)
	b.buf = append(b.buf, at.prefix()...)
	b.buf = append(b.buf, "UPDATE "...)
	b.buf = append(b.buf, t.quoted...)
	b.buf = append(b.buf, " SET "...)
	if err := appendSetWhere(b, t, r); err != nil {
		return err
	}
	b.expect(Check{Want: 1, Kind: UpdateMissing, Table: t, row: r, before: true, GTID: gtid})
	if mode != ExecModeIdempotent {
		return nil
	}
	return appendInsertIfNoneMatched(b, t, r.After, at.prefix())
}

// appendVersionedDelete appends the DELETE at instant at of rows of t, current rows that end then:
// one DELETE ... WHERE key IN (...) when rows are identified by a key and nothing can see their
// order, else one per row.
func appendVersionedDelete(b *Batch, t *Table, at stamp, rows []event.Row, gtid string) error {
	if t.keyKind == keyAll || t.related || len(rows) == 1 {
		for _, r := range rows {
			b.begin(t.deleteShape)
			b.buf = append(b.buf, at.prefix()...)
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
	b.buf = append(b.buf, at.prefix()...)
	b.buf = append(b.buf, "DELETE FROM "...)
	b.buf = append(b.buf, t.quoted...)
	b.buf = append(b.buf, " WHERE "...)
	b.buf = append(b.buf, t.keyTuple...)
	return appendKeysIn(b, t, rows, gtid)
}
