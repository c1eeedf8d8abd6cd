package binlog

import (
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/vplayer/vplayer/event"
)

// Online schema-change tools (gh-ost, pt-online-schema-change) change a table t on the source by
// creating a shadow table (_t_gho, _t_new) with t's definition, altering it, copying t's rows
// into it while t's changes follow (gh-ost from the binlog, pt-online-schema-change through
// triggers on t), and renaming it in t's place at the cut-over (RENAME TABLE t TO _t_old,
// _t_new TO t). Replicated as it is, that copies the table a second time on the target. The
// reader instead passes over every row and DDL of the tools' tables (Filter.Match is false for
// them), records the ALTER run on the shadow table, and turns the cut-over into that ALTER on t:
// a DDL event that --on-ddl handles as it handles any (exec runs it, ignore passes over it,
// stop stops there).

// onlineDDL handles a statement of its own, q with default schema schema, that changes a shadow
// or trash table of a replicated table, or is a cut-over: it emits its event and reports true.
// Any other statement is left to the caller. The translator's position is already past q.
func (t *translator) onlineDDL(h *replication.EventHeader, q, schema string) bool {
	if t.filter.online == nil {
		return false
	}
	tables, ok := ddlTables(q, schema)
	if !ok || len(tables) == 0 {
		return false
	}
	verb, object := ddlVerb(q)
	if verb == "RENAME" {
		return t.rename(h, q, schema, tables)
	}
	kinds := make([]tableKind, len(tables))
	bases := make([]string, len(tables))
	for i, tr := range tables {
		kinds[i], bases[i] = t.filter.onlineKind(tr.schema, tr.name)
		if kinds[i] == plainTable {
			return false // a statement that names a plain table is an ordinary DDL
		}
	}
	id := t.eventID()
	for i, tr := range tables {
		if kinds[i] != shadowTable {
			continue // a trash table: nothing to keep
		}
		switch {
		case verb == "CREATE" && object == "TABLE":
			base := bases[i]
			if like, ok := createLike(q, schema); ok && like.schema == tr.schema && t.filter.online.isShadowOf(tr.name, like.name) {
				base = like.name
			}
			t.noteOnline(t.online.created(tr.name, base, id))
		case verb == "ALTER":
			if _, spec, ok := alterOf(q, schema); ok && spec != "" {
				t.noteOnline(t.online.altered(tr.name, bases[i], spec, id))
			}
		case verb == "DROP" && object == "TABLE":
			t.noteOnline(t.online.dropped(tr.name, id))
		case verb == "TRUNCATE":
		default:
			// CREATE or DROP INDEX on the shadow table: a change of its definition the cut-over
			// would have to carry over, which the reader does not do.
			t.noteOnline(t.online.unsupported(tr.name, bases[i], statementShape(q)))
		}
	}
	t.skipOnline(h)
	return true
}

// rename handles a RENAME TABLE that moves the tools' tables: the cut-over (a shadow table
// renamed to its table), the table renamed to one of its trash tables (the other half of the
// cut-over), a tool's tables among themselves. A RENAME that also moves another table is left to
// the caller, as an ordinary DDL.
func (t *translator) rename(h *replication.EventHeader, q, schema string, tables []tableRef) bool {
	o, db := t.filter.online, t.filter.DB()
	var cutOver []tableRef // shadow table, table: the pairs that put a shadow table in place
	var swappedOut []string
	for i := 0; i+1 < len(tables); i += 2 {
		from, to := tables[i], tables[i+1]
		if from.schema != db || to.schema != db {
			return false
		}
		fromKind, _ := t.filter.onlineKind(db, from.name)
		toKind, _ := t.filter.onlineKind(db, to.name)
		switch {
		case fromKind == shadowTable && o.isShadowOf(from.name, to.name) && t.filter.matchName(db, to.name):
			cutOver = append(cutOver, from, to)
		case fromKind == plainTable && toKind != plainTable && (o.isTrashOf(to.name, from.name) || o.isShadowOf(to.name, from.name)):
			swappedOut = append(swappedOut, from.name)
		case fromKind != plainTable && toKind != plainTable:
		default:
			return false
		}
	}
	// The table renamed away is half of a cut-over only when its shadow table is renamed in its
	// place by the same statement or one to come (gh-ost's cut-over in two steps).
	for _, name := range swappedOut {
		if !t.online.pendingFor(name) && !renamesTo(cutOver, name) {
			return false
		}
	}
	if len(cutOver) == 0 {
		t.skipOnline(h)
		return true
	}
	id := t.eventID()
	ev := &event.Event{Type: event.DDL, Pos: t.posString(), Timestamp: int64(h.Timestamp), Schema: schema, CutOver: q,
		Size: int(h.EventSize)}
	var rec *shadowRecord
	for i := 0; i < len(cutOver); i += 2 {
		r, changed := t.online.cutOver(cutOver[i].name, id)
		t.noteOnline(changed)
		rec = r
	}
	switch {
	case len(cutOver) > 2 || rec == nil || !rec.complete():
		// What the shadow table became is not known: the applier refuses to guess.
		ev.Query = q
	case len(rec.Alters) == 0:
		// The shadow table kept the table's definition: nothing to change on the target.
		t.skipOnline(h)
		return true
	default:
		ev.Query = cutOverAlter(db, cutOver[1].name, rec.Alters)
	}
	ev.DBRefs = dbRefs(ev.Query, db)
	t.emit(ev)
	// Table ids may be reused with new definitions after DDL; forget them.
	clear(t.tables)
	clear(t.toolTables)
	return true
}

// renamesTo reports whether pairs (shadow table, table) put a table named name in place.
func renamesTo(pairs []tableRef, name string) bool {
	for i := 1; i < len(pairs); i += 2 {
		if pairs[i].name == name {
			return true
		}
	}
	return false
}

// cutOverAlter is the DDL a cut-over becomes: the ALTERs run on the shadow table, run on table
// of db instead, as one statement.
func cutOverAlter(db, table string, alters []recordedAlter) string {
	var b strings.Builder
	b.WriteString("ALTER TABLE ")
	b.WriteString(quoteName(db))
	b.WriteByte('.')
	b.WriteString(quoteName(table))
	for i, a := range alters {
		if i > 0 {
			// A line break ends a -- comment the previous ALTER may end with.
			b.WriteString("\n,")
		}
		b.WriteByte(' ')
		b.WriteString(a.Spec)
	}
	return b.String()
}

// skipOnline emits the Skip of a statement passed over as an online schema-change tool's.
func (t *translator) skipOnline(h *replication.EventHeader) {
	if t.skip.stats != nil {
		t.skip.stats.SkippedOnlineDDLStatements.Add(1)
	}
	t.emit(&event.Event{Type: event.Skip, Pos: t.posString(), Timestamp: int64(h.Timestamp), Size: 1})
}

// noteOnline marks the online schema change state for saving when changed.
func (t *translator) noteOnline(changed bool) {
	if changed {
		t.onlineDirty = true
	}
}

// eventID names the statement just read for the online schema change state: its GTID as a
// position of its flavor (MariaDB/0-1-57), or the position after it where the source logs none.
// The same event read again, after a restart, has the same id.
func (t *translator) eventID() string {
	if t.gtid != "" && (t.pos.Flavor == FlavorMariaDB || t.pos.Flavor == FlavorMySQL) {
		return t.pos.Flavor + "/" + t.gtid
	}
	return t.posString()
}

// quoteName backquotes an identifier.
func quoteName(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}

// ddlVerb returns a DDL statement's verb and the kind of object it changes (TABLE, INDEX...), in
// upper case.
func ddlVerb(q string) (verb, object string) {
	l := lexer{s: q}
	verb = l.word()
	switch verb {
	case "CREATE":
		l.optional("OR", "REPLACE")
		l.optional("TEMPORARY")
	case "ALTER":
		l.optional("ONLINE")
		l.optional("IGNORE")
	case "DROP":
		l.optional("TEMPORARY")
	}
	object = l.word()
	switch object {
	case "UNIQUE", "FULLTEXT", "SPATIAL":
		object = l.word()
	case "TABLES":
		object = "TABLE"
	}
	return verb, object
}

// alterOf reads ALTER [ONLINE] [IGNORE] TABLE [IF EXISTS] name rest: the table and rest, its
// alter specifications, trimmed of a final semicolon.
func alterOf(q, defaultSchema string) (tableRef, string, bool) {
	l := lexer{s: q, def: defaultSchema}
	if l.word() != "ALTER" {
		return tableRef{}, "", false
	}
	l.optional("ONLINE")
	l.optional("IGNORE")
	if l.word() != "TABLE" {
		return tableRef{}, "", false
	}
	l.optional("IF", "EXISTS")
	tr, ok := l.name()
	if !ok {
		return tableRef{}, "", false
	}
	spec := strings.TrimSpace(l.s[l.i:])
	spec = strings.TrimSpace(strings.TrimSuffix(spec, ";"))
	return tr, spec, true
}

// createLike reads CREATE [OR REPLACE] [TEMPORARY] TABLE [IF NOT EXISTS] name [(]LIKE other[)]:
// other.
func createLike(q, defaultSchema string) (tableRef, bool) {
	l := lexer{s: q, def: defaultSchema}
	if l.word() != "CREATE" {
		return tableRef{}, false
	}
	l.optional("OR", "REPLACE")
	l.optional("TEMPORARY")
	if l.word() != "TABLE" {
		return tableRef{}, false
	}
	l.optional("IF", "NOT", "EXISTS")
	if _, ok := l.name(); !ok {
		return tableRef{}, false
	}
	l.punct('(')
	if l.word() != "LIKE" {
		return tableRef{}, false
	}
	return l.name()
}
