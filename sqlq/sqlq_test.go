package sqlq_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/vplayer/vplayer/sqlq"
)

func TestIdent(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", "``"},
		{"plain", "orders", "`orders`"},
		{"one backtick", "a`b", "`a``b`"},
		{"only backtick", "`", "````"},
		{"two backticks", "``", "``````"},
		{"leading and trailing", "`x`", "```x```"},
		{"quotes untouched", `a'b"c\d`, "`a'b\"c\\d`"},
		{"dot kept inside", "db.table", "`db.table`"},
		{"utf8", "tablé_€", "`tablé_€`"},
		{"nul byte", "a\x00b", "`a\x00b`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sqlq.Ident(tt.in); got != tt.want {
				t.Errorf("Ident(%q)=%q, want %q", tt.in, got, tt.want)
			}
			prefix := []byte("SELECT ")
			got := sqlq.AppendIdent(append([]byte(nil), prefix...), tt.in)
			if want := string(prefix) + tt.want; string(got) != want {
				t.Errorf("AppendIdent(%q, %q)=%q, want %q", prefix, tt.in, got, want)
			}
		})
	}
}

// stringTests are the escapes of AppendString and AppendBytes, shared with the server round trip.
var stringTests = []struct {
	name string
	in   string
	want string
}{
	{"empty", "", `''`},
	{"plain", "hello", `'hello'`},
	{"nul", "\x00", `'\0'`},
	{"nul then digit", "\x001", `'\01'`},
	{"newline", "a\nb", `'a\nb'`},
	{"carriage return", "a\rb", `'a\rb'`},
	{"ctrl-z", "\x1a", `'\Z'`},
	{"single quote", "it's", `'it\'s'`},
	{"backslash", `a\b`, `'a\\b'`},
	{"backslash then quote", `\'`, `'\\\''`},
	{"trailing backslash", `a\`, `'a\\'`},
	{"double quote untouched", `"x"`, `'"x"'`},
	{"tab untouched", "a\tb", "'a\tb'"},
	{"percent and underscore untouched", "%_", `'%_'`},
	{"backtick untouched", "`", "'`'"},
	{"high bytes untouched", "\x80\xff\xfe", "'\x80\xff\xfe'"},
	{"4-byte utf8", "😀", "'😀'"},
	{"all specials", "\x00\n\r\x1a'\\", `'\0\n\r\Z\'\\'`},
}

func TestString(t *testing.T) {
	for _, tt := range stringTests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sqlq.String(tt.in); got != tt.want {
				t.Errorf("String(%q)=%q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestAppendString(t *testing.T) {
	for _, tt := range stringTests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := []byte("x = ")
			got := sqlq.AppendString(append([]byte(nil), prefix...), tt.in)
			if want := string(prefix) + tt.want; string(got) != want {
				t.Errorf("AppendString(%q, %q)=%q, want %q", prefix, tt.in, got, want)
			}
		})
	}
}

func TestAppendBytes(t *testing.T) {
	for _, tt := range stringTests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := []byte("x = ")
			got := sqlq.AppendBytes(append([]byte(nil), prefix...), []byte(tt.in))
			if want := string(prefix) + tt.want; string(got) != want {
				t.Errorf("AppendBytes(%q, %q)=%q, want %q", prefix, tt.in, got, want)
			}
		})
	}
}

// TestAppendBytes_allBytes checks every single byte against AppendString.
func TestAppendBytes_allBytes(t *testing.T) {
	for c := 0; c < 256; c++ {
		in := []byte{byte(c)}
		got := sqlq.AppendBytes(nil, in)
		if want := sqlq.AppendString(nil, string(in)); !bytes.Equal(got, want) {
			t.Errorf("AppendBytes(nil, %q)=%q, want AppendString's %q", in, got, want)
		}
	}
}

// TestAppendString_doesNotClobber checks that appending to a slice with spare capacity leaves the
// bytes before it alone.
func TestAppendString_doesNotClobber(t *testing.T) {
	buf := make([]byte, 0, 64)
	buf = append(buf, "a, "...)
	first := sqlq.AppendString(buf, "one")
	second := sqlq.AppendString(first, "tw'o")
	if got, want := string(second), `a, 'one''tw\'o'`; got != want {
		t.Errorf("two appends=%q, want %q", got, want)
	}
	if got, want := string(first), `a, 'one'`; got != want {
		t.Errorf("first append after the second=%q, want %q", got, want)
	}
}

// BenchmarkAppendString quotes strings as the applier writes row values: short text, a
// sysbench CHAR(120) value (digits and dashes, nothing to escape), a long text with an escape
// every few dozen bytes, and binary data where about one byte in 50 needs escaping.
func BenchmarkAppendString(b *testing.B) {
	sysbench := strings.Repeat("12345678901-", 10)[:119]
	text := strings.Repeat(`It's a line of text with a "quote" and a path C:\dir.`+"\n", 20)
	binary := make([]byte, 4096)
	for i := range binary {
		binary[i] = byte(i * 37) // 0, '\n', '\r', 0x1a, '\'' and '\\' each once in 256
	}
	cases := []struct {
		name string
		in   string
	}{
		{"short", "inserted row"},
		{"sysbench-c", sysbench},
		{"text-1k", text},
		{"binary-4k", string(binary)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			buf := make([]byte, 0, 2*len(c.in)+2)
			b.SetBytes(int64(len(c.in)))
			b.ReportAllocs()
			for b.Loop() {
				buf = sqlq.AppendString(buf[:0], c.in)
			}
		})
	}
}
