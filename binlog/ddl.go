package binlog

import (
	"strings"
)

// tableRef is a table a statement names: its schema (the default one when unqualified) and name.
type tableRef struct{ schema, name string }

// ddlTables returns the tables a schema-changing statement changes: CREATE, ALTER, DROP, RENAME
// and TRUNCATE TABLE, CREATE and DROP INDEX. ok is false for every other statement (CREATE
// DATABASE, GRANT, ANALYZE, views, routines, users...): those change no replicated table.
// defaultSchema qualifies unqualified names, as the server did when it ran the statement.
func ddlTables(query, defaultSchema string) (tables []tableRef, ok bool) {
	l := lexer{s: query, def: defaultSchema}
	verb := l.word()
	switch verb {
	case "CREATE":
		l.optional("OR", "REPLACE")
		l.optional("TEMPORARY")
		switch w := l.word(); w {
		case "TABLE":
			l.optional("IF", "NOT", "EXISTS")
			return l.one()
		case "UNIQUE", "FULLTEXT", "SPATIAL", "INDEX":
			if w != "INDEX" && l.word() != "INDEX" {
				return nil, false
			}
			return l.onTable()
		}
	case "ALTER":
		l.optional("ONLINE")
		l.optional("IGNORE")
		if l.word() != "TABLE" {
			return nil, false
		}
		l.optional("IF", "EXISTS")
		return l.one()
	case "DROP":
		l.optional("TEMPORARY")
		switch l.word() {
		case "TABLE", "TABLES":
			l.optional("IF", "EXISTS")
			return l.list(',')
		case "INDEX":
			return l.onTable()
		}
	case "RENAME":
		if w := l.word(); w != "TABLE" && w != "TABLES" {
			return nil, false
		}
		l.optional("IF", "EXISTS")
		var out []tableRef
		for {
			from, ok := l.name()
			if !ok || l.word() != "TO" {
				return nil, false
			}
			to, ok := l.name()
			if !ok {
				return nil, false
			}
			out = append(out, from, to)
			if !l.punct(',') {
				return out, true
			}
		}
	case "TRUNCATE":
		l.optional("TABLE")
		return l.one()
	}
	return nil, false
}

// lexer reads the few tokens ddlTables needs: keywords, identifiers, qualified names.
type lexer struct {
	s   string
	i   int
	def string
}

// skip passes whitespace and comments.
func (l *lexer) skip() {
	for l.i < len(l.s) {
		switch c := l.s[l.i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			l.i++
		case strings.HasPrefix(l.s[l.i:], "/*"):
			end := strings.Index(l.s[l.i+2:], "*/")
			if end < 0 {
				l.i = len(l.s)
				return
			}
			l.i += end + 4
		case strings.HasPrefix(l.s[l.i:], "-- ") || c == '#':
			end := strings.IndexByte(l.s[l.i:], '\n')
			if end < 0 {
				l.i = len(l.s)
				return
			}
			l.i += end + 1
		default:
			return
		}
	}
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// ident reads a bare or backquoted identifier.
func (l *lexer) ident() (string, bool) {
	l.skip()
	if l.i >= len(l.s) {
		return "", false
	}
	if l.s[l.i] == '`' {
		var b strings.Builder
		for j := l.i + 1; j < len(l.s); j++ {
			if l.s[j] != '`' {
				b.WriteByte(l.s[j])
				continue
			}
			if j+1 < len(l.s) && l.s[j+1] == '`' {
				b.WriteByte('`')
				j++
				continue
			}
			l.i = j + 1
			return b.String(), true
		}
		return "", false
	}
	start := l.i
	for l.i < len(l.s) && isIdentByte(l.s[l.i]) {
		l.i++
	}
	return l.s[start:l.i], l.i > start
}

// word reads an identifier as an upper-case keyword.
func (l *lexer) word() string {
	save := l.i
	l.skip()
	if l.i < len(l.s) && l.s[l.i] == '`' {
		l.i = save
		return ""
	}
	w, _ := l.ident()
	return strings.ToUpper(w)
}

// optional consumes the keywords ws if they come next, all of them, else nothing.
func (l *lexer) optional(ws ...string) {
	save := l.i
	for _, w := range ws {
		if l.word() != w {
			l.i = save
			return
		}
	}
}

func (l *lexer) punct(c byte) bool {
	l.skip()
	if l.i < len(l.s) && l.s[l.i] == c {
		l.i++
		return true
	}
	return false
}

// name reads [schema.]table.
func (l *lexer) name() (tableRef, bool) {
	a, ok := l.ident()
	if !ok {
		return tableRef{}, false
	}
	if l.i < len(l.s) && l.s[l.i] == '.' {
		l.i++
		b, ok := l.ident()
		if !ok {
			return tableRef{}, false
		}
		return tableRef{schema: a, name: b}, true
	}
	return tableRef{schema: l.def, name: a}, true
}

func (l *lexer) one() ([]tableRef, bool) {
	t, ok := l.name()
	if !ok {
		return nil, false
	}
	return []tableRef{t}, true
}

func (l *lexer) list(sep byte) ([]tableRef, bool) {
	var out []tableRef
	for {
		t, ok := l.name()
		if !ok {
			return nil, false
		}
		out = append(out, t)
		if !l.punct(sep) {
			return out, true
		}
	}
}

// onTable reads "[IF [NOT] EXISTS] index_name [USING type] ON table" after CREATE/DROP INDEX.
func (l *lexer) onTable() ([]tableRef, bool) {
	l.optional("IF", "NOT", "EXISTS")
	l.optional("IF", "EXISTS")
	if _, ok := l.ident(); !ok {
		return nil, false
	}
	w := l.word()
	if w == "USING" {
		l.word()
		w = l.word()
	}
	if w != "ON" {
		return nil, false
	}
	return l.one()
}
