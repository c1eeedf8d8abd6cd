package tablekey

import "testing"

func TestPeriod_Columns(t *testing.T) {
	cols := []Column{NewColumn("id", "int", ""), NewColumn("v", "varchar", "utf8mb4")}
	hidden := &Period{Start: NewColumn("row_start", "timestamp", ""), End: NewColumn("row_end", "timestamp", ""), Hidden: true}
	named := &Period{Start: NewColumn("s", "timestamp", ""), End: NewColumn("e", "timestamp", "")}
	tests := []struct {
		name string
		p    *Period
		want string
		from string
	}{
		{"not versioned", nil, "id,v", "`d`.`t`"},
		{"hidden period", hidden, "id,v,row_start,row_end", "`d`.`t` FOR SYSTEM_TIME ALL"},
		{"named period, listed already", named, "id,v", "`d`.`t` FOR SYSTEM_TIME ALL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got string
			for i, c := range tt.p.Columns(cols) {
				if i > 0 {
					got += ","
				}
				got += c.Name
			}
			if got != tt.want {
				t.Errorf("Columns() = %s, want %s", got, tt.want)
			}
			if got := tt.p.AllRows("`d`.`t`"); got != tt.from {
				t.Errorf("AllRows() = %s, want %s", got, tt.from)
			}
		})
	}
	if got := hidden.Columns(cols); len(cols) != 2 || &got[0] == &cols[0] {
		t.Errorf("Columns() changed or shared its argument")
	}
	if !hidden.ByTimestamp() || (&Period{Start: NewColumn("s", "bigint", ""), End: NewColumn("e", "bigint", "")}).ByTimestamp() {
		t.Errorf("ByTimestamp() wrong")
	}
}
