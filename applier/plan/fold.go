package plan

import (
	"bytes"

	"github.com/vplayer/vplayer/event"
)

// FoldChunk bounds the rows of one folded statement.
const FoldChunk = 500

// maxFoldRows and maxFoldBytes bound what a fold holds before it is written out, so that one
// round trip stays far below max_allowed_packet whatever the relay log bounds.
const (
	maxFoldRows  = 20000
	maxFoldBytes = 1 << 20 // binlog bytes of the folded rows events
)

// fold nets the row changes of one target transaction per table and primary key: every change of
// a key ends as either its final row image or its deletion. Within one transaction the net effect
// is what counts, so a fetch's changes to a table become one DELETE ... WHERE pk IN (...) and
// multi-row INSERT statements, whatever order the source wrote them in, instead of one UPDATE per
// row. Only tables whose primary key is their only unique key fold: with another unique key, the
// order of the changes can matter (a value moving between rows).
//
// A key the fold first sees created (inserted, or the new key of an update) did not exist on the
// source before these changes, so it must not exist on the target either: its final image goes
// in by a plain INSERT, and a row written there directly fails it with a duplicate-key error, as
// it would without folding. A key first seen updated or deleted existed: its final image goes in
// by INSERT ... ON DUPLICATE KEY UPDATE, which leaves the row as the image says.
//
// A fold is reused from one target transaction to the next: its tables' maps and slices are
// emptied, not dropped, so that a steady stream of batches folds without allocating more than
// each new key's string.
type fold struct {
	tables []*foldTable // in first-change order
	byT    map[*Table]*foldTable
	spare  []*foldTable // emptied, for the next tables
	key    []byte       // where keys are built, to look them up without allocating
	ups    []event.Row  // appendTo's images of keys that existed, reused
	ins    []event.Row  // appendTo's images of keys the fold created, reused
	rows   int
	bytes  int
	gtid0  string // the first source transaction the fold holds
}

type foldTable struct {
	t     *Table
	order []foldEntry            // every key's net change, in first-change order
	index map[string]int32       // key → its entry in order
	kinds [event.Delete + 1]bool // the kinds of source row changes folded
}

// foldEntry is the net change of the key literal key.
type foldEntry struct {
	key string
	foldRow
}

// keepFold bounds the keys of a table whose map and slice a fold keeps for the next batch: a
// larger one (a big source transaction) is dropped rather than kept and cleared each time.
const keepFold = 8192

// shapeSuffix names the source's row changes that a folded statement stands for, so that a
// stall message naming vplayer's statement also says what the source did.
func (ft *foldTable) shapeSuffix() string {
	s := " (folded source "
	n := 0
	for _, k := range []event.RowKind{event.Insert, event.Update, event.Delete} {
		if !ft.kinds[k] {
			continue
		}
		if n > 0 {
			s += "+"
		}
		s += k.String()
		n++
	}
	return s + " rows)"
}

// foldRow is the net change of one key: deleted, or the row image it ends with.
type foldRow struct {
	created bool // the key's first change in the fold created it
	deleted bool
	after   []any
}

func (f *fold) table(t *Table) *foldTable {
	if f.byT == nil {
		f.byT = map[*Table]*foldTable{}
	}
	ft := f.byT[t]
	if ft == nil {
		if n := len(f.spare); n > 0 {
			ft, f.spare = f.spare[n-1], f.spare[:n-1]
		} else {
			ft = new(foldTable)
		}
		ft.t = t
		if ft.index == nil {
			ft.index = map[string]int32{}
		}
		f.byT[t] = ft
		f.tables = append(f.tables, ft)
	}
	return ft
}

// empty makes ft hold nothing, keeping its map and slice unless they grew past keepFold.
func (ft *foldTable) empty() {
	if len(ft.order) > keepFold {
		ft.order, ft.index = nil, nil
	} else {
		clear(ft.order) // drop the row images
		ft.order = ft.order[:0]
		clear(ft.index)
	}
	ft.t = nil
	ft.kinds = [event.Delete + 1]bool{}
}

// keyOf returns the key literal of image vals: the primary key columns as the SQL tuple that
// identifies the row, which is also its identity in the fold.
func keyOf(t *Table, vals []any) (string, error) {
	buf, err := appendKey(nil, t, vals)
	return string(buf), err
}

// appendKey appends the key literal of image vals to buf.
func appendKey(buf []byte, t *Table, vals []any) ([]byte, error) {
	if len(t.key) == 1 {
		return appendValue(buf, &t.cols[t.key[0]], vals[t.key[0]])
	}
	return appendTuple(buf, t, t.key, vals)
}

// set records r as the net change of key; created says whether this change creates the key,
// which counts only for the key's first change in the fold. key is only read: a key seen
// before costs no allocation.
func (ft *foldTable) set(key []byte, r foldRow, created bool) {
	if i, ok := ft.index[string(key)]; ok {
		e := &ft.order[i]
		r.created = e.created
		e.foldRow = r
		return
	}
	k := string(key)
	ft.index[k] = int32(len(ft.order))
	r.created = created
	ft.order = append(ft.order, foldEntry{key: k, foldRow: r})
}

// add folds the rows of one rows event of a foldable table, size its binlog bytes.
func (f *fold) add(t *Table, kind event.RowKind, rows []event.Row, size int, gtid string) error {
	if f.rows == 0 && f.bytes == 0 {
		f.gtid0 = gtid
	}
	f.bytes += size
	ft := f.table(t)
	if kind <= event.Delete {
		ft.kinds[kind] = true
	}
	for _, r := range rows {
		var err error
		switch kind {
		case event.Insert:
			if f.key, err = appendKey(f.key[:0], t, r.After); err != nil {
				return err
			}
			ft.set(f.key, foldRow{after: r.After}, true)
		case event.Update:
			// Both keys in f.key, the before image's first.
			if f.key, err = appendKey(f.key[:0], t, r.Before); err != nil {
				return err
			}
			n := len(f.key)
			if f.key, err = appendKey(f.key, t, r.After); err != nil {
				return err
			}
			kb, ka := f.key[:n:n], f.key[n:]
			moved := !bytes.Equal(kb, ka)
			if moved {
				ft.set(kb, foldRow{deleted: true}, false)
			}
			ft.set(ka, foldRow{after: r.After}, moved)
		case event.Delete:
			if f.key, err = appendKey(f.key[:0], t, r.Before); err != nil {
				return err
			}
			ft.set(f.key, foldRow{deleted: true}, false)
		}
		f.rows++
	}
	return nil
}

// full reports whether the fold holds enough to be written out now.
func (f *fold) full() bool { return f.rows >= maxFoldRows || f.bytes >= maxFoldBytes }

// overfull reports whether the fold holds twice what full calls full.
func (f *fold) overfull() bool { return f.rows >= 2*maxFoldRows || f.bytes >= 2*maxFoldBytes }

// appendTo writes the fold's statements into b and empties it. Per table: the deletions of keys
// that existed first, each of which must find its row; then, for the keys that existed and end
// with an image, an upsert of the images that counts the rows it finds, all of which must be
// there (see appendCountedUpsert); then the keys the
// fold created, by plain INSERT (a key that exists fails it with a duplicate-key error) or, in
// idempotent mode, by a probe that counts the keys that exist and an upsert. A key is in one of
// the three at most; a key both created and deleted by the fold nets to nothing. gtid names the
// source transactions the fold holds.
func (f *fold) appendTo(b *Batch, mode, gtid string) error {
	return f.appendSplit(b, nil, mode, gtid, nil)
}

// appendSplit is appendTo, but for the keys late names (when it is set): their statements go into
// lateB instead of b. Keys of one table are independent of one another, and a foldable table has
// no foreign key or trigger, so the two parts may run in either order, and the keys in each in
// any order.
func (f *fold) appendSplit(b, lateB *Batch, mode, gtid string, late func(t *Table, key string) bool) error {
	if f.gtid0 != "" && f.gtid0 != gtid {
		gtid = f.gtid0 + ".." + gtid
	}
	for _, ft := range f.tables {
		order := ft.order
		if late != nil {
			// In place, the early keys first, in their order; the index is cleared next anyway.
			k := 0
			for i := range order {
				if !late(ft.t, order[i].key) {
					order[k], order[i] = order[i], order[k]
					k++
				}
			}
			if err := f.appendTable(b, ft, order[:k], mode, gtid); err != nil {
				return err
			}
			order = order[k:]
			if len(order) == 0 {
				continue
			}
			if err := f.appendTable(lateB, ft, order, mode, gtid); err != nil {
				return err
			}
			continue
		}
		if err := f.appendTable(b, ft, order, mode, gtid); err != nil {
			return err
		}
	}
	if cap(f.ups) > keepFold {
		f.ups = nil
	}
	if cap(f.ins) > keepFold {
		f.ins = nil
	}
	for _, ft := range f.tables {
		ft.empty()
		f.spare = append(f.spare, ft)
	}
	clear(f.byT)
	clear(f.tables)
	f.tables = f.tables[:0]
	f.rows, f.bytes = 0, 0
	f.gtid0 = ""
	return nil
}

// appendTable writes the statements of order, net changes of ft's keys, into b (see appendTo).
func (f *fold) appendTable(b *Batch, ft *foldTable, order []foldEntry, mode, gtid string) error {
	// The key lists go into the checks, which live as long as b: one new array holds
	// them. The images only go into SQL: they are put in f's slices, kept for next time.
	nd, nu, ni := 0, 0, 0
	for i := range order {
		switch r := &order[i]; {
		case r.deleted && !r.created:
			nd++
		case r.deleted:
		case r.created:
			ni++
		default:
			nu++
		}
	}
	keys := make([]string, 0, nd+nu+ni)
	dels, upKeys, insKeys := keys[0:0:nd], keys[nd:nd:nd+nu], keys[nd+nu:nd+nu]
	ups, inserts := f.ups[:0], f.ins[:0]
	for i := range order {
		switch r := &order[i]; {
		case r.deleted && !r.created:
			dels = append(dels, r.key)
		case r.deleted:
		case r.created:
			inserts = append(inserts, event.Row{After: r.after})
			insKeys = append(insKeys, r.key)
		default:
			ups = append(ups, event.Row{After: r.after})
			upKeys = append(upKeys, r.key)
		}
	}
	f.ups, f.ins = ups, inserts
	from := ft.shapeSuffix()
	for len(dels) > 0 {
		n := min(len(dels), FoldChunk)
		appendDeleteKeys(b, ft.t, dels[:n], ft.t.deleteShape+from)
		b.expect(Check{Want: int64(n), Kind: DeleteMissing, Table: ft.t, Keys: dels[:n:n], GTID: gtid})
		dels = dels[n:]
	}
	for len(ups) > 0 {
		n := min(len(ups), FoldChunk)
		if mode == ExecModeIdempotent {
			// Counted by a probe: idempotent mode reads the counts after the COMMIT, and
			// counts every absent row, where the counted upsert says only whether one is.
			appendTouch(b, ft.t, upKeys[:n])
			b.expect(Check{Want: int64(n), Kind: UpdateMissing, Table: ft.t, Keys: upKeys[:n:n], GTID: gtid})
			if err := appendInsertTail(b, ft.t, ups[:n], ft.t.upsertShape+from, ft.t.upsertTail); err != nil {
				return err
			}
		} else {
			if err := appendCountedUpsert(b, ft.t, ups[:n], upKeys[:n], ft.t.upsertShape+from); err != nil {
				return err
			}
			b.expect(Check{Want: 1, Counted: true, Kind: UpdateMissing, Table: ft.t, Keys: upKeys[:n:n], GTID: gtid})
		}
		ups, upKeys = ups[n:], upKeys[n:]
	}
	for len(inserts) > 0 {
		n := min(len(inserts), FoldChunk)
		var err error
		if mode == ExecModeIdempotent {
			appendTouch(b, ft.t, insKeys[:n])
			b.expect(Check{Want: 0, Kind: InsertExists, Table: ft.t, Keys: insKeys[:n:n], GTID: gtid})
			err = appendInsertTail(b, ft.t, inserts[:n], ft.t.upsertShape+from, ft.t.upsertTail)
		} else {
			err = appendInsertTail(b, ft.t, inserts[:n], ft.t.insertShape+from, nil)
		}
		if err != nil {
			return err
		}
		inserts, insKeys = inserts[n:], insKeys[n:]
	}
	clear(f.ups) // drop the row images
	clear(f.ins)
	return nil
}
