package workflow_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/vplayer/vplayer/workflow"
)

const mark = " ... [TRUNCATED] ... "

// numbered returns an n-byte message whose every position is distinguishable: the decimal
// offsets of its pieces, so a wrong cut shows as a wrong number.
func numbered(n int) string {
	var b strings.Builder
	for b.Len() < n {
		fmt.Fprintf(&b, "<%d>", b.Len())
	}
	return b.String()[:n]
}

// cutAround finds how got is msg cut in the middle: a start of msg, the mark, an end of msg. Of
// several ways it returns the most balanced.
func cutAround(got, msg string) (head, tail string, ok bool) {
	best := -1
	for i := 0; i+len(mark) <= len(got); i++ {
		if got[i:i+len(mark)] != mark || !strings.HasPrefix(msg, got[:i]) || !strings.HasSuffix(msg, got[i+len(mark):]) {
			continue
		}
		if best < 0 || abs(len(got)-len(mark)-2*i) < abs(len(got)-len(mark)-2*best) {
			best = i
		}
	}
	if best < 0 {
		return "", "", false
	}
	return got[:best], got[best+len(mark):], true
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"empty", ""},
		{"short", "error in stream w: boom"},
		{"949 bytes", numbered(949)},
		{"exactly 950 bytes", numbered(950)},
		{"951 bytes", numbered(951)},
		{"5000 bytes", numbered(5000)},
		{"1 MB", numbered(1 << 20)},
		{"contains the mark already", strings.Repeat(mark, 100)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := workflow.Truncate(tt.in)
			if len(tt.in) <= workflow.MaxMessageBytes {
				if got != tt.in {
					t.Errorf("Truncate(%d bytes)=%q, want it unchanged", len(tt.in), got)
				}
				return
			}
			if got, want := len(got), workflow.MaxMessageBytes; got != want {
				t.Errorf("len(Truncate(%d bytes))=%d, want %d", len(tt.in), got, want)
			}
			head, tail, ok := cutAround(got, tt.in)
			if !ok {
				t.Fatalf("Truncate(%d bytes)=%q, want a start of the message, %q, and its end", len(tt.in), got, mark)
			}
			// Cut in the middle: both ends keep a fair share.
			if len(head) < 400 || len(tail) < 400 {
				t.Errorf("Truncate kept %d bytes of the head and %d of the tail, want at least 400 of each", len(head), len(tail))
			}
		})
	}
}

// TestTruncate_utf8 checks that a cut never splits a multi-byte character: the message is shown
// by status and stored in vreplication_log's text column, where invalid UTF-8 is rejected.
func TestTruncate_utf8(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"2-byte runes, even length", strings.Repeat("é", 2500)},
		{"2-byte runes, odd length", "x" + strings.Repeat("é", 2500)},
		{"3-byte runes", strings.Repeat("€", 2000)},
		{"4-byte runes", strings.Repeat("😀", 1000)},
		{"4-byte runes offset by 1", "a" + strings.Repeat("😀", 1000)},
		{"4-byte runes offset by 2", "ab" + strings.Repeat("😀", 1000)},
		{"4-byte runes offset by 3", "abc" + strings.Repeat("😀", 1000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := workflow.Truncate(tt.in)
			if len(got) > workflow.MaxMessageBytes {
				t.Errorf("len(Truncate(%d bytes))=%d, want at most %d", len(tt.in), len(got), workflow.MaxMessageBytes)
			}
			i := strings.Index(got, mark)
			if i < 4 || len(got)-i-len(mark) < 4 {
				t.Fatalf("Truncate(%d bytes)=%q, want a head, %q and a tail", len(tt.in), got, mark)
			}
			if !utf8.ValidString(got) {
				t.Errorf("Truncate(%d bytes of valid UTF-8) is not valid UTF-8: head ends %q, tail starts %q",
					len(tt.in), got[i-4:i], got[i+len(mark):i+len(mark)+4])
			}
		})
	}
}

func TestNew_defaultSidecar(t *testing.T) {
	tests := []struct {
		name    string
		sidecar string
		want    string
	}{
		{"default", "", "_vt"},
		{"named", "my_vt", "my_vt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := workflow.New(nil, tt.sidecar).Sidecar(); got != tt.want {
				t.Errorf("New(nil, %q).Sidecar()=%q, want %q", tt.sidecar, got, tt.want)
			}
		})
	}
}
