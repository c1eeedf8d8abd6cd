package binlog

import (
	"strings"
	"testing"
)

func TestNewFilter_Match(t *testing.T) {
	type probe struct {
		schema, table string
		want          bool
	}
	tests := []struct {
		name    string
		db      string
		tables  []string
		wantAll bool
		probes  []probe
	}{
		{
			name:    "nil list matches every table of the database",
			db:      "shop",
			tables:  nil,
			wantAll: true,
			probes: []probe{
				{"shop", "orders", true},
				{"shop", "customers", true},
				{"shop", "", true},
				{"other", "orders", false},
				{"", "orders", false},
				{"Shop", "orders", false},
			},
		},
		{
			name:    "list of blanks matches every table",
			db:      "shop",
			tables:  []string{"", " ", "\t"},
			wantAll: true,
			probes: []probe{
				{"shop", "orders", true},
				{"other", "orders", false},
			},
		},
		{
			name:   "exact names",
			db:     "shop",
			tables: []string{"orders", " customers "},
			probes: []probe{
				{"shop", "orders", true},
				{"shop", "customers", true},
				{"shop", "orders_archive", false},
				{"shop", "order", false},
				{"shop", "Orders", false},
				{"shop", "items", false},
				{"other", "orders", false},
			},
		},
		{
			name:   "regex anchored to the whole name",
			db:     "shop",
			tables: []string{"/order.*/"},
			probes: []probe{
				{"shop", "orders", true},
				{"shop", "order", true},
				{"shop", "order_items", true},
				{"shop", "old_orders", false},
				{"shop", "xorder", false},
				{"other", "orders", false},
			},
		},
		{
			name:   "regex alternation anchored as a whole",
			db:     "shop",
			tables: []string{"/a|b/"},
			probes: []probe{
				{"shop", "a", true},
				{"shop", "b", true},
				{"shop", "ab", false},
				{"shop", "xa", false},
				{"shop", "bx", false},
			},
		},
		{
			name:   "regex does not match a substring",
			db:     "shop",
			tables: []string{"/t[0-9]+/"},
			probes: []probe{
				{"shop", "t1", true},
				{"shop", "t123", true},
				{"shop", "t1x", false},
				{"shop", "xt1", false},
				{"shop", "t", false},
			},
		},
		{
			name:   "names and regexes together",
			db:     "shop",
			tables: []string{"customers", "/orders_20[0-9]{2}/"},
			probes: []probe{
				{"shop", "customers", true},
				{"shop", "orders_2024", true},
				{"shop", "orders_1999", false},
				{"shop", "orders", false},
				{"other", "customers", false},
				{"other", "orders_2024", false},
			},
		},
		{
			name:   "slash alone is a name",
			db:     "shop",
			tables: []string{"/"},
			probes: []probe{
				{"shop", "/", true},
				{"shop", "orders", false},
			},
		},
		{
			name:   "regex characters in a plain name are literal",
			db:     "shop",
			tables: []string{"a.b"},
			probes: []probe{
				{"shop", "a.b", true},
				{"shop", "axb", false},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := NewFilter(tt.db, tt.tables)
			if err != nil {
				t.Fatalf("NewFilter(%q, %q): %v", tt.db, tt.tables, err)
			}
			if got, want := f.DB(), tt.db; got != want {
				t.Errorf("DB() = %q, want %q", got, want)
			}
			if got, want := f.All(), tt.wantAll; got != want {
				t.Errorf("All() = %v, want %v", got, want)
			}
			for _, p := range tt.probes {
				if got := f.Match(p.schema, p.table); got != p.want {
					t.Errorf("Match(%q, %q) = %v, want %v", p.schema, p.table, got, p.want)
				}
			}
		})
	}
}

func TestNewFilter_Errors(t *testing.T) {
	tests := []struct {
		name      string
		db        string
		tables    []string
		wantInMsg []string
	}{
		{
			name:      "invalid regex names the entry",
			db:        "shop",
			tables:    []string{"orders", "/(unclosed/"},
			wantInMsg: []string{"/(unclosed/", "not a valid regular expression", "--tables"},
		},
		{
			name:      "invalid repetition",
			db:        "shop",
			tables:    []string{"/*/"},
			wantInMsg: []string{"/*/", "not a valid regular expression"},
		},
		{
			name:      "empty database",
			db:        "",
			tables:    []string{"orders"},
			wantInMsg: []string{"source database is empty", "--source-db"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := NewFilter(tt.db, tt.tables)
			if err == nil {
				t.Fatalf("NewFilter(%q, %q) = %+v, want an error", tt.db, tt.tables, f)
			}
			if f != nil {
				t.Errorf("NewFilter(%q, %q) returned a filter with its error", tt.db, tt.tables)
			}
			for _, want := range tt.wantInMsg {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}
