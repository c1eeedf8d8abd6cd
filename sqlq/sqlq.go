// Package sqlq writes MySQL identifiers and literals into SQL text. It is the one place that
// escapes; everything that builds SQL goes through it.
package sqlq

import (
	"slices"
	"strings"
)

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

// escapes maps each byte that a string literal must escape to the character that follows its
// backslash, and every other byte to 0.
var escapes = [256]byte{0: '0', '\n': 'n', '\r': 'r', 0x1a: 'Z', '\'': '\'', '\\': '\\'}

// appendQuoted grows b once for s and its quotes and copies the runs of bytes between those that
// need an escape: most values have none, and go in with one copy.
func appendQuoted[T string | []byte](b []byte, s T) []byte {
	b = slices.Grow(b, len(s)+2)
	b = append(b, '\'')
	run := 0 // start of the bytes not yet copied
	for i := 0; i < len(s); i++ {
		if e := escapes[s[i]]; e != 0 {
			b = append(b, s[run:i]...)
			b = append(b, '\\', e)
			run = i + 1
		}
	}
	b = append(b, s[run:]...)
	return append(b, '\'')
}
