// Package sqlq writes MySQL identifiers and literals into SQL text. It is the one place that
// escapes; everything that builds SQL goes through it.
package sqlq

import "strings"

// Ident quotes a MySQL identifier with backticks.
func Ident(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}

// AppendIdent appends the quoted identifier s to b.
func AppendIdent(b []byte, s string) []byte {
	b = append(b, '`')
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			b = append(b, '`')
		}
		b = append(b, s[i])
	}
	return append(b, '`')
}

// String quotes s as a MySQL string literal.
func String(s string) string {
	return string(AppendString(make([]byte, 0, len(s)+2), s))
}

// AppendString appends s to b as a quoted MySQL string literal, escaping every byte that needs it
// so that any byte sequence passes through unchanged (the session must not use
// NO_BACKSLASH_ESCAPES).
func AppendString(b []byte, s string) []byte { return appendQuoted(b, s) }

// AppendBytes is AppendString for a byte slice.
func AppendBytes(b []byte, s []byte) []byte { return appendQuoted(b, s) }

func appendQuoted[T string | []byte](b []byte, s T) []byte {
	b = append(b, '\'')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case 0:
			b = append(b, '\\', '0')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case 0x1a:
			b = append(b, '\\', 'Z')
		case '\'':
			b = append(b, '\\', '\'')
		case '\\':
			b = append(b, '\\', '\\')
		default:
			b = append(b, c)
		}
	}
	return append(b, '\'')
}
