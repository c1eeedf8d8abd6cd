package plan

import (
	"strconv"

	"github.com/vplayer/vplayer/event"
)

// The statements that write rows by key: DELETE ... WHERE key IN (...) over key literals (the key
// columns as the SQL tuple keyOf builds), and the upserts, counted or not, with the ON DUPLICATE
// KEY UPDATE tails a Table keeps. The fold writes its net changes with them; the row group its
// inserts in idempotent mode, and the probes of execmode.go their key lists.

// dupCounter is the session variable a counted upsert counts the existing rows it meets in.
const dupCounter = "@vplayer_dup"

// appendCountedUpsert appends an upsert of rows (keys being their key literals) that counts the
// rows it finds already there, then a check whose matched-row count is 1 when it found every one
// and 0 otherwise. The count comes from the ON DUPLICATE KEY UPDATE clause, which runs once for
// every row that exists, changed by the image or not: the upsert's own affected-row count cannot
// tell an inserted row from one already equal to its image. Neither reads the keys a second
// time: the check matches one row by key (the first, there either way after the upsert).
func appendCountedUpsert(b *Batch, t *Table, rows []event.Row, keys []string, shape string) error {
	b.Add("", "SET "+dupCounter+" = 0")
	if err := appendInsertTail(b, t, rows, shape, t.countedTail); err != nil {
		return err
	}
	appendTouchShape(b, t, keys[:1], shape)
	b.buf = append(b.buf, " AND "+dupCounter+" = "...)
	b.buf = strconv.AppendInt(b.buf, int64(len(rows)), 10)
	return nil
}

// appendDeleteKeys appends DELETE ... WHERE key IN (keys), keys being key literals; shape names it.
func appendDeleteKeys(b *Batch, t *Table, keys []string, shape string) {
	b.begin(shape)
	b.buf = append(b.buf, "DELETE FROM "...)
	b.buf = append(b.buf, t.quoted...)
	appendKeyIn(b, t, keys)
}

// appendKeyIn appends " WHERE <key> IN (<keys>)", keys being key literals.
func appendKeyIn(b *Batch, t *Table, keys []string) {
	b.buf = append(b.buf, " WHERE "...)
	b.buf = append(b.buf, t.keyTuple...)
	b.buf = append(b.buf, " IN ("...)
	for i, k := range keys {
		if i > 0 {
			b.buf = append(b.buf, ',')
		}
		b.buf = append(b.buf, k...)
	}
	b.buf = append(b.buf, ')')
}

// appendUpsert appends one multi-row INSERT ... ON DUPLICATE KEY UPDATE that leaves each row as
// its image says, whether or not its key existed.
func appendUpsert(b *Batch, t *Table, rows []event.Row) error {
	return appendInsertTail(b, t, rows, t.upsertShape, t.upsertTail)
}

// upsertTail returns " ON DUPLICATE KEY UPDATE c=VALUES(c),..." over the writable non-key
// columns (a no-op assignment of the first key column when every column is in the key).
func upsertTail(t *Table) []byte { return buildUpsertTail(t, false) }

// countedTail is upsertTail whose first assignment also adds one to dupCounter, for every row
// the upsert finds there (see appendCountedUpsert).
func countedTail(t *Table) []byte { return buildUpsertTail(t, true) }

func buildUpsertTail(t *Table, count bool) []byte {
	inKey := map[int]bool{}
	for _, i := range t.key {
		inKey[i] = true
	}
	buf := []byte(" ON DUPLICATE KEY UPDATE ")
	assign := func(col, value string) {
		buf = append(buf, col...)
		buf = append(buf, '=')
		if count {
			buf = append(buf, "IF(("+dupCounter+" := "+dupCounter+" + 1) > 0, "+value+", "+col+")"...)
			count = false
			return
		}
		buf = append(buf, value...)
	}
	n := 0
	for _, i := range t.writable {
		if inKey[i] {
			continue
		}
		if n > 0 {
			buf = append(buf, ',')
		}
		c := t.cols[i].quoted
		assign(c, "VALUES("+c+")")
		n++
	}
	if n == 0 {
		c := t.cols[t.key[0]].quoted
		assign(c, c)
	}
	return buf
}

// keyTupleOf returns the key columns as they precede IN: `c` or (`a`,`b`).
func keyTupleOf(t *Table) []byte {
	if len(t.key) == 1 {
		return []byte(t.cols[t.key[0]].quoted)
	}
	buf := []byte{'('}
	for n, i := range t.key {
		if n > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, t.cols[i].quoted...)
	}
	return append(buf, ')')
}
