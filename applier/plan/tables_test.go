package plan

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/vplayer/vplayer/event"
	"github.com/vplayer/vplayer/tabledef"
)

func TestTable_Check(t *testing.T) {
	target := &Table{quoted: "`copy`.`t`", cols: []Column{
		{name: "id", dataType: "int"},
		{name: "name", dataType: "varchar"},
		{name: "at", dataType: "timestamp"},
		{name: "ip", dataType: "inet6"}, // MariaDB's own type: not checked
	}}
	types := []byte{mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_TIMESTAMP2, mysql.MYSQL_TYPE_STRING}
	tests := []struct {
		name string
		bt   event.Table
		want []string // in the error; none: no error
	}{
		{name: "match, names logged", bt: event.Table{ColumnCount: 4, ColumnNames: []string{"id", "NAME", "at", "ip"}, ColumnTypes: types}},
		{name: "match, names not logged", bt: event.Table{ColumnCount: 4, ColumnTypes: types}},
		{name: "datetime into timestamp, bigint into int", bt: event.Table{ColumnCount: 4, ColumnTypes: []byte{mysql.MYSQL_TYPE_LONGLONG, mysql.MYSQL_TYPE_BLOB, mysql.MYSQL_TYPE_DATETIME2, mysql.MYSQL_TYPE_LONG}}},
		// Columns after the shared ones, on either side, replicate as on a native replica.
		{name: "a trailing column fewer on the source, names logged", bt: event.Table{ColumnCount: 3, ColumnNames: []string{"id", "name", "at"}, ColumnTypes: types[:3]}},
		{name: "a trailing column more on the source, names not logged", bt: event.Table{ColumnCount: 5, ColumnTypes: append(types, mysql.MYSQL_TYPE_LONG)}},
		{
			name: "a column fewer on the source, not the last",
			bt:   event.Table{ColumnCount: 3, ColumnNames: []string{"id", "at", "ip"}, ColumnTypes: []byte{mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_TIMESTAMP2, mysql.MYSQL_TYPE_STRING}},
			want: []string{"`copy`.`t`", "source `shop`.`t`", "column 2 is at on the source but name on the target", "3 columns (id, at, ip)", "has 4 (id, name, at, ip)"},
		},
		{
			name: "a column more on the source, not the last, names not logged",
			bt:   event.Table{ColumnCount: 5, ColumnTypes: []byte{mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_TIMESTAMP2, mysql.MYSQL_TYPE_STRING}},
			want: []string{"column 2 (name on the target) holds integer values", "5 columns,", "has 4 (id, name, at, ip)"},
		},
		{
			name: "renamed",
			bt:   event.Table{ColumnCount: 4, ColumnNames: []string{"id", "title", "at", "ip"}, ColumnTypes: types},
			want: []string{"column 2 is title on the source but name on the target"},
		},
		{
			name: "signedness logged and equal",
			bt:   event.Table{ColumnCount: 4, ColumnTypes: types, Unsigned: []bool{false, false, false, false}},
		},
		{
			name: "unsigned on the source, signed on the target",
			bt:   event.Table{ColumnCount: 4, ColumnTypes: types, Unsigned: []bool{true, false, false, false}},
			want: []string{"column 1 (id) is unsigned on the source but signed on the target"},
		},
		{
			name: "swapped, names not logged",
			bt:   event.Table{ColumnCount: 4, ColumnTypes: []byte{mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_TIMESTAMP2, mysql.MYSQL_TYPE_STRING}},
			want: []string{"column 1 (id on the target) holds string values on the source but is int", "column 2 (name on the target) holds integer values on the source but is varchar"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bt := tt.bt
			bt.Schema, bt.Name = "shop", "t"
			err := target.Check(&bt)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("check() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrSchemaDrift) {
				t.Fatalf("check() = %v, want ErrSchemaDrift (terminal: see applier.IsTerminal)", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("check() = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

// TestTypeFamilies: every target type a binlog type can land in is in the same family, so that
// the drift check never refuses a table that matches.
func TestTypeFamilies(t *testing.T) {
	tests := []struct {
		binlog byte
		target []string
	}{
		{mysql.MYSQL_TYPE_TINY, []string{"tinyint"}},
		{mysql.MYSQL_TYPE_LONGLONG, []string{"bigint", "int", "smallint", "mediumint", "tinyint"}},
		{mysql.MYSQL_TYPE_NEWDECIMAL, []string{"decimal"}},
		{mysql.MYSQL_TYPE_FLOAT, []string{"float", "double"}},
		{mysql.MYSQL_TYPE_BIT, []string{"bit"}},
		{mysql.MYSQL_TYPE_YEAR, []string{"year"}},
		{mysql.MYSQL_TYPE_DATE, []string{"date"}},
		{mysql.MYSQL_TYPE_TIME2, []string{"time"}},
		{mysql.MYSQL_TYPE_DATETIME2, []string{"datetime", "timestamp"}},
		{mysql.MYSQL_TYPE_TIMESTAMP2, []string{"datetime", "timestamp"}},
		{mysql.MYSQL_TYPE_STRING, []string{"char", "binary", "enum", "set"}},
		{mysql.MYSQL_TYPE_VARCHAR, []string{"varchar", "varbinary"}},
		{mysql.MYSQL_TYPE_BLOB, []string{"text", "blob", "longtext", "tinyblob", "mediumtext"}},
		{mysql.MYSQL_TYPE_JSON, []string{"json", "longtext"}},
		{mysql.MYSQL_TYPE_GEOMETRY, []string{"geometry", "point", "polygon"}},
	}
	for _, tt := range tests {
		for _, target := range tt.target {
			if got, want := tabledef.TypeFamily(target), binlogFamily(tt.binlog); got != want || got == "" {
				t.Errorf("tabledef.TypeFamily(%s) = %q, binlogFamily(%d) = %q: want the same, not empty", target, got, tt.binlog, want)
			}
		}
	}
	if got := tabledef.TypeFamily("uuid"); got != "" {
		t.Errorf("tabledef.TypeFamily(uuid) = %q, want unknown", got)
	}
}
