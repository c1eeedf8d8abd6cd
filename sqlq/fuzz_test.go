package sqlq_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/vplayer/vplayer/sqlq"
)

// unquote decodes a MySQL string literal as AppendString writes it (quotes around, backslash
// escapes inside) and reports any byte a MySQL parser would read differently: an unescaped
// quote, a raw NUL, newline, carriage return or ctrl-Z, an unknown escape, a dangling backslash.
func unquote(lit []byte) ([]byte, error) {
	if len(lit) < 2 || lit[0] != '\'' || lit[len(lit)-1] != '\'' {
		return nil, fmt.Errorf("not enclosed in single quotes")
	}
	body := lit[1 : len(lit)-1]
	var out []byte
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch c {
		case '\'':
			return nil, fmt.Errorf("unescaped quote at %d", i+1)
		case 0, '\n', '\r', 0x1a:
			return nil, fmt.Errorf("raw byte %#x at %d", c, i+1)
		case '\\':
			if i+1 == len(body) {
				return nil, fmt.Errorf("dangling backslash at %d escapes the closing quote", i+1)
			}
			i++
			switch body[i] {
			case '0':
				out = append(out, 0)
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 'Z':
				out = append(out, 0x1a)
			case '\'', '\\':
				out = append(out, body[i])
			default:
				return nil, fmt.Errorf("unexpected escape \\%c at %d", body[i], i)
			}
		default:
			out = append(out, c)
		}
	}
	return out, nil
}

func FuzzAppendString(f *testing.F) {
	for _, tt := range stringTests {
		f.Add(tt.in)
	}
	f.Add("\\\\'\\'''\x00\x00")
	f.Add("\xf0\x9f\x98\x80\\")
	f.Fuzz(func(t *testing.T, s string) {
		prefix := []byte("v=")
		got := sqlq.AppendString(append([]byte(nil), prefix...), s)
		if !bytes.HasPrefix(got, prefix) {
			t.Fatalf("AppendString(%q, %q)=%q lost the prefix", prefix, s, got)
		}
		lit := got[len(prefix):]
		if lit[0] != '\'' || lit[len(lit)-1] != '\'' {
			t.Fatalf("AppendString(%q)=%q, want it to start and end with a quote", s, lit)
		}
		decoded, err := unquote(lit)
		if err != nil {
			t.Fatalf("AppendString(%q)=%q: %v", s, lit, err)
		}
		if string(decoded) != s {
			t.Errorf("AppendString(%q)=%q decodes to %q", s, lit, decoded)
		}
		if str := sqlq.String(s); str != string(lit) {
			t.Errorf("String(%q)=%q, want AppendString's %q", s, str, lit)
		}
		if b := sqlq.AppendBytes(nil, []byte(s)); string(b) != string(lit) {
			t.Errorf("AppendBytes(%q)=%q, want AppendString's %q", s, b, lit)
		}
		if len(lit) > 2*len(s)+2 {
			t.Errorf("len(AppendString(%q))=%d, want at most %d", s, len(lit), 2*len(s)+2)
		}
	})
}

func TestUnquote(t *testing.T) {
	tests := []struct {
		name    string
		lit     string
		wantErr bool
	}{
		{"ok", `'a\'b'`, false},
		{"unquoted", `abc`, true},
		{"inner quote", `'a'b'`, true},
		{"dangling backslash", `'a\'`, true},
		{"raw nul", "'\x00'", true},
		{"unknown escape", `'\x'`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := unquote([]byte(tt.lit))
			if got := err != nil; got != tt.wantErr {
				t.Errorf("unquote(%q) error=%v, want error %v", tt.lit, err, tt.wantErr)
			}
		})
	}
}
