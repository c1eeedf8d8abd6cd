package tablekey

import "testing"

func TestColumn_KeyExprAndLiteral(t *testing.T) {
	tests := []struct {
		name, typ, charset string
		value              string // as KeyExpr reads it
		expr, literal      string
	}{
		{"varbinary", "varbinary", "", "00FF", "HEX(`c`)", "X'00FF'"},
		{"utf8mb4 text", "varchar", "utf8mb4", "C3A9", "HEX(`c`)", "_utf8mb4 X'C3A9'"},
		// MariaDB's own types: their bytes, which X'..' gives back as a value of the type, so
		// that the key compares as the column sorts (their text would be bytes under SET NAMES
		// binary).
		{"uuid", "UUID", "", "6CCD780CBABA102695645B8C656024DB", "HEX(`c`)", "X'6CCD780CBABA102695645B8C656024DB'"},
		{"inet6", "inet6", "", "00000000000000000000FFFF0A000001", "HEX(`c`)", "X'00000000000000000000FFFF0A000001'"},
		{"inet4", "inet4", "", "0A000000", "HEX(`c`)", "X'0A000000'"},
		{"int", "int", "", "-5", "`c`", "-5"},
		{"datetime", "datetime", "", "2020-01-02 03:04:05", "`c`", "'2020-01-02 03:04:05'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewColumn("c", tt.typ, tt.charset)
			if got := c.KeyExpr(); got != tt.expr {
				t.Errorf("KeyExpr() = %s, want %s", got, tt.expr)
			}
			if got := c.Literal(tt.value); got != tt.literal {
				t.Errorf("Literal(%q) = %s, want %s", tt.value, got, tt.literal)
			}
		})
	}
}

func TestSharedColumns(t *testing.T) {
	cols := func(names ...string) []Column {
		out := make([]Column, len(names))
		for i, n := range names {
			out[i] = NewColumn(n, "int", "")
		}
		return out
	}
	tests := []struct {
		name     string
		src, dst []Column
		n        int
		differ   string
	}{
		{"same", cols("id", "v"), cols("id", "v"), 2, ""},
		{"target has more", cols("id", "v"), cols("id", "v", "added"), 2, ""},
		{"source has more", cols("id", "v", "extra"), cols("id", "v"), 2, ""},
		{"names compare without case", cols("id", "V"), cols("ID", "v", "added"), 2, ""},
		{"reordered", cols("id", "a", "b"), cols("id", "b", "a"), 3, "column 2 is a on the source but b on the target"},
		{"renamed before a trailing column", cols("id", "a"), cols("id", "x", "a"), 2, "column 2 is a on the source but x on the target"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, differ := SharedColumns(tt.src, tt.dst)
			if n != tt.n || differ != tt.differ {
				t.Errorf("SharedColumns()=%d, %q; want %d, %q", n, differ, tt.n, tt.differ)
			}
		})
	}
}
