package tablekey

import (
	"testing"

	"github.com/vplayer/vplayer/tabledef"
)

func TestExprAndLiteral(t *testing.T) {
	tests := []struct {
		name, typ, charset string
		value              string // as Expr reads it
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
			c := tabledef.NewColumn("c", tt.typ, tt.charset)
			if got := Expr(c); got != tt.expr {
				t.Errorf("Expr() = %s, want %s", got, tt.expr)
			}
			if got := Literal(c, tt.value); got != tt.literal {
				t.Errorf("Literal(%q) = %s, want %s", tt.value, got, tt.literal)
			}
		})
	}
}
