package copier

import "testing"

// TestTable_versioned: a versioned table's first chunk clears its history too, its later chunks
// only the rows above their last key, and every chunk inserts history rows as they are.
func TestTable_versioned(t *testing.T) {
	plain := &table{dst: "`d`.`t`"}
	v := &table{dst: "`d`.`t`", dstAll: "`d`.`t` FOR SYSTEM_TIME ALL", versioned: true}
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"plain, first chunk", plain.clear(nil), "DELETE FROM `d`.`t`"},
		{"versioned, first chunk", v.clear(nil), "DELETE FROM `d`.`t`;DELETE HISTORY FROM `d`.`t`"},
		{"versioned, later chunk", v.clear([]string{"1"}), "DELETE FROM `d`.`t`"}, // no key: no condition
		{"plain rows", plain.allRows(), "`d`.`t`"},
		{"versioned rows", v.allRows(), "`d`.`t` FOR SYSTEM_TIME ALL"},
		{"plain session", plain.insertHistory(), ""},
		{"versioned session", v.insertHistory(), "SET SESSION system_versioning_insert_history = 1;"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}
