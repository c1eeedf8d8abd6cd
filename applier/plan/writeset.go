package plan

import (
	"strings"

	"github.com/vplayer/vplayer/event"
)

// A batch's writeset is what its row changes touch, for an executor that runs batches on several
// sessions: two batches whose writesets overlap must commit in source order, one after the other;
// two whose writesets are disjoint cannot change each other's rows. For each row change it holds,
// per unique key of the table (the primary key among them), the key's values in the images the
// change has: the after image of an insert, the before image of a delete, both of an update, so
// that an update moving a row from one key to another touches both. The rules:
//
//   - a key with a NULL in the image is left out: a unique key never conflicts on NULL;
//   - a key whose values compare under a collation (a case-insensitive or PAD SPACE string
//     column: 'a' = 'A' = 'a '), or that holds a float (0 = -0), a generated column (its value
//     need not be in the image) or a column by a prefix of its value, is not normalised: it is
//     recorded as the whole key (every value of it), which overlaps every other change of the
//     table that has a non-NULL value in it;
//   - a table without a primary key or a unique key over NOT NULL columns (rows identified by
//     every column) is recorded as the whole table: it overlaps every batch that touches it;
//   - DDL, and XA transactions (prepared, committed or rolled back outside the batch that holds
//     their rows), are barriers, which overlap every batch.
//
// A writeset cannot see what the server adds: gap and next-key locks, foreign keys and their
// cascades, triggers. An executor must survive those conflicts (roll back the later batch and
// run it again after the earlier one), not prevent them.
type Writeset struct {
	keys    []wkey
	seen    map[wkey]struct{}
	barrier bool
}

// wkey is one key value a batch touches.
type wkey struct {
	table string // `schema`.`name` on the target
	// index is the unique key's name (PRIMARY for the primary key); empty for the whole table.
	index string
	// value is the key's values as SQL literals, in the key's column order, as the row identity
	// writes them (`1` or `(1,'a')`); empty for every value of the key.
	value string
}

// wholeTable reports whether k stands for every row of its table.
func (k wkey) wholeTable() bool { return k.index == "" }

// wholeIndex reports whether k stands for every value of its unique key.
func (k wkey) wholeIndex() bool { return k.index != "" && k.value == "" }

func (w *Writeset) add(k wkey) {
	if _, ok := w.seen[k]; ok {
		return
	}
	if w.seen == nil {
		w.seen = map[wkey]struct{}{}
	}
	w.seen[k] = struct{}{}
	w.keys = append(w.keys, k)
}

// AddRows adds the keys that rows, changes of t, touch.
func (w *Writeset) AddRows(t *Table, rows []event.Row) {
	if t.keyKind == keyAll {
		w.add(wkey{table: t.quoted})
		return
	}
	for _, r := range rows {
		if r.Before != nil {
			w.addImage(t, r.Before)
		}
		if r.After != nil {
			w.addImage(t, r.After)
		}
	}
}

// addImage adds the keys of the row image vals of t.
func (w *Writeset) addImage(t *Table, vals []any) {
	for i := range t.uniques {
		u := &t.uniques[i]
		if hasNull(u.cols, vals) {
			continue
		}
		if !u.exact {
			w.add(wkey{table: t.quoted, index: u.name})
			continue
		}
		if v, ok := keyValue(t, u.cols, vals); ok {
			w.add(wkey{table: t.quoted, index: u.name, value: v})
		}
	}
}

// hasNull reports whether one of the columns cols is NULL (or missing) in the image vals.
func hasNull(cols []int, vals []any) bool {
	for _, i := range cols {
		if i >= len(vals) || vals[i] == nil {
			return true
		}
	}
	return false
}

// keyValue returns the literal of the values of columns cols in vals, false when one is NULL
// (or cannot be written: the statement that writes it fails the batch anyway).
func keyValue(t *Table, cols []int, vals []any) (string, bool) {
	var buf []byte
	if len(cols) > 1 {
		buf = append(buf, '(')
	}
	for n, i := range cols {
		if i >= len(vals) || vals[i] == nil {
			return "", false
		}
		if n > 0 {
			buf = append(buf, ',')
		}
		var err error
		if buf, err = appendValue(buf, &t.cols[i], vals[i]); err != nil {
			return "", false
		}
	}
	if len(cols) > 1 {
		buf = append(buf, ')')
	}
	return string(buf), true
}

// overlaps reports whether k and o could stand for the same row or unique key value: a whole
// table overlaps every key of its table; a whole unique key, every value of it; values, the same
// values of the same key.
func (k wkey) overlaps(o wkey) bool {
	switch {
	case k.table != o.table:
		return false
	case k.wholeTable() || o.wholeTable():
		return true
	case k.index != o.index:
		return false
	}
	return k.value == "" || o.value == "" || k.value == o.value
}

// overlaps reports whether batches with writesets w and o could change the same row or unique
// key value: a barrier overlaps everything, else a key of one overlaps a key of the other. It
// compares every pair: an executor keeps its own index of the keys in flight.
func (w *Writeset) overlaps(o *Writeset) bool {
	if w.barrier || o.barrier {
		return true
	}
	for _, a := range w.keys {
		for _, b := range o.keys {
			if a.overlaps(b) {
				return true
			}
		}
	}
	return false
}

// touches reports whether w overlaps the one key value k, through w's index.
func (w *Writeset) touches(k wkey) bool {
	if w.barrier {
		return true
	}
	_, key := w.seen[k]
	_, Table := w.seen[wkey{table: k.table}]
	_, index := w.seen[wkey{table: k.table, index: k.index}]
	return key || Table || index
}

// OverlapsIndexed is overlaps through o's and w's index of their keys: O(len of the smaller)
// map lookups, plus a scan of the larger for each whole-key entry of the smaller.
func (w *Writeset) OverlapsIndexed(o *Writeset) bool {
	if w.barrier || o.barrier {
		return true
	}
	small, big := w, o
	if len(small.keys) > len(big.keys) {
		small, big = big, small
	}
	for _, k := range small.keys {
		if k.wholeTable() || k.wholeIndex() {
			for _, b := range big.keys {
				if k.overlaps(b) {
					return true
				}
			}
			continue
		}
		if big.touches(k) {
			return true
		}
	}
	return false
}

// Add adds one key to w: a value of table's unique key index (its values as SQL literals, in the
// key's column order, as the row identity writes them), every value of index when value is
// empty, or every row of table when index is empty too. table is `schema`.`name` on the target.
func (w *Writeset) Add(table, index, value string) {
	w.add(wkey{table: table, index: index, value: value})
}

// Barrier reports whether w overlaps every batch: DDL, an XA transaction, a transaction sent
// before its commit.
func (w *Writeset) Barrier() bool { return w.barrier }

// Missing returns the keys of o that w does not touch, as `table` index value: empty when a
// batch of writeset w conflicts with everything one of o could.
func (w *Writeset) Missing(o *Writeset) []string {
	var out []string
	for _, k := range o.keys {
		if !w.touches(k) {
			out = append(out, k.table+" "+k.index+" "+k.value)
		}
	}
	return out
}

// String lists w's keys, for a message.
func (w *Writeset) String() string {
	if w.barrier {
		return "barrier"
	}
	keys := make([]string, len(w.keys))
	for i, k := range w.keys {
		keys[i] = k.table + " " + k.index + " " + k.value
	}
	return "[" + strings.Join(keys, ", ") + "]"
}
