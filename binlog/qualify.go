package binlog

// dbRefs returns the byte ranges [start, end) of query that name database db as a qualifier:
// `db` in db.t, db.t.c or `db` . `t`, bare or backquoted, outside comments and string
// literals. An applier that runs the statement in another database replaces them with that
// database's name. The name must match exactly, as the filter matches schemas. Identifiers
// inside comments, executable ones (/*! ... */) included, are left alone.
func dbRefs(query, db string) [][2]int {
	var out [][2]int
	l := lexer{s: query}
	prevDot := false // the previous token was '.': what follows is not a database qualifier
	for {
		l.skip()
		if l.i >= len(l.s) {
			return out
		}
		c := l.s[l.i]
		switch {
		case c == '\'' || c == '"':
			l.skipString(c)
			prevDot = false
		case c == '.':
			l.i++
			prevDot = true
		case c == '@':
			// A user or system variable (@v, @@sql_mode, @`v`): not a name.
			for l.i < len(l.s) && l.s[l.i] == '@' {
				l.i++
			}
			l.ident()
			prevDot = false
		case c == '`' || isIdentByte(c):
			start := l.i
			name, ok := l.ident()
			if !ok {
				return out
			}
			end := l.i
			qualifies := !prevDot && name == db && (c == '`' || !allDigits(name))
			prevDot = false
			if qualifies {
				save := l.i
				l.skip()
				if l.i < len(l.s) && l.s[l.i] == '.' {
					out = append(out, [2]int{start, end})
				}
				l.i = save
			}
		default:
			l.i++
			prevDot = false
		}
	}
}

// skipString passes a string literal quoted with q, with backslash escapes and doubled quotes.
func (l *lexer) skipString(q byte) {
	for l.i++; l.i < len(l.s); l.i++ {
		switch l.s[l.i] {
		case '\\':
			l.i++
		case q:
			if l.i+1 < len(l.s) && l.s[l.i+1] == q {
				l.i++
				continue
			}
			l.i++
			return
		}
	}
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
