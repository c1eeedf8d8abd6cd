package binlog

import "strings"

// dmlTables recognises a data change logged as a statement (a session with binlog_format
// STATEMENT or MIXED): INSERT, REPLACE, UPDATE, DELETE, LOAD DATA and LOAD XML, and a WITH
// clause before one of them. It returns the tables the statement may write, qualified with
// defaultSchema where the statement does not name a schema; ok is false for any other statement.
//
// The answer errs on the side of naming too many tables, never too few, since a replicated table
// it missed would be a change skipped in silence: for INSERT, REPLACE and LOAD the one table they
// write into; for UPDATE and DELETE, whose multi-table forms name the written tables among those
// they only read (joins, aliases), every name before SET (UPDATE) or WHERE (DELETE). A WITH
// statement, whose written table follows subqueries, names every identifier it holds.
func dmlTables(query, defaultSchema string) (verb string, tables []tableRef, ok bool) {
	l := lexer{s: query, def: defaultSchema}
	verb = l.word()
	switch verb {
	case "INSERT", "REPLACE":
	modifiers:
		for {
			save := l.i
			switch l.word() {
			case "LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY", "IGNORE":
			case "INTO":
				break modifiers
			default:
				l.i = save // INSERT t ... without INTO: back to the name
				break modifiers
			}
		}
		if t, ok := l.name(); ok {
			return verb, []tableRef{t}, true
		}
		return verb, l.names(""), true
	case "LOAD":
		if w := l.word(); w != "DATA" && w != "XML" {
			return "", nil, false
		}
		if l.skipTo("INTO") && l.word() == "TABLE" {
			if t, ok := l.name(); ok {
				return verb + " DATA", []tableRef{t}, true
			}
		}
		return verb + " DATA", l.names(""), true
	case "UPDATE":
		return verb, l.names("SET"), true
	case "DELETE":
		return verb, l.names("WHERE"), true
	case "WITH":
		return verb, l.names(""), true
	}
	return "", nil, false
}

// skipTo passes tokens up to and including the keyword w; false when the statement ends first.
func (l *lexer) skipTo(w string) bool {
	for l.i < len(l.s) {
		l.skip()
		if l.i >= len(l.s) {
			return false
		}
		if isIdentByte(l.s[l.i]) {
			if word := l.word(); word == w {
				return true
			}
			continue
		}
		l.token()
	}
	return false
}

// names returns every name, qualified or not, from the lexer's place up to the keyword stop (the
// end of the statement when stop is empty), passing over string literals, numbers and
// punctuation: a superset of the tables that part of the statement names.
func (l *lexer) names(stop string) []tableRef {
	var out []tableRef
	for {
		l.skip()
		if l.i >= len(l.s) {
			return out
		}
		c := l.s[l.i]
		switch {
		case c == '`' || (isIdentByte(c) && !(c >= '0' && c <= '9')):
			save := l.i
			if stop != "" && c != '`' {
				if l.word() == stop {
					return out
				}
				l.i = save
			}
			t, ok := l.name()
			if !ok {
				return out
			}
			if t.schema != l.def || !sqlKeywords[strings.ToUpper(t.name)] || l.s[save] == '`' {
				out = append(out, t)
			}
		default:
			l.token()
		}
	}
}

// token passes one token that is not a name: a quoted string, a number or a punctuation mark.
func (l *lexer) token() {
	c := l.s[l.i]
	switch c {
	case '\'', '"':
		for j := l.i + 1; j < len(l.s); j++ {
			switch l.s[j] {
			case '\\':
				j++
			case c:
				if j+1 < len(l.s) && l.s[j+1] == c {
					j++
					continue
				}
				l.i = j + 1
				return
			}
		}
		l.i = len(l.s)
	default:
		if isIdentByte(c) {
			for l.i < len(l.s) && isIdentByte(l.s[l.i]) {
				l.i++
			}
			return
		}
		l.i++
	}
}

// statementShape is q cut to at most 200 bytes, for an error message.
func statementShape(q string) string {
	q = strings.Join(strings.Fields(q), " ")
	if len(q) > 200 {
		return q[:200] + "..."
	}
	return q
}

// sqlKeywords are the words of a multi-table UPDATE or DELETE that names reads as table names.
var sqlKeywords = map[string]bool{
	"FROM": true, "JOIN": true, "INNER": true, "LEFT": true, "RIGHT": true, "OUTER": true, "CROSS": true,
	"NATURAL": true, "STRAIGHT_JOIN": true, "ON": true, "USING": true, "AS": true, "AND": true, "OR": true,
	"NOT": true, "IS": true, "NULL": true, "IN": true, "IGNORE": true, "LOW_PRIORITY": true, "QUICK": true,
	"PARTITION": true, "USE": true, "FORCE": true, "INDEX": true, "KEY": true, "FOR": true, "SELECT": true,
	"WHERE": true, "SET": true, "INTO": true, "VALUES": true, "VALUE": true, "ORDER": true, "BY": true,
	"LIMIT": true, "RETURNING": true, "LIKE": true, "BETWEEN": true, "EXISTS": true, "DISTINCT": true,
}
