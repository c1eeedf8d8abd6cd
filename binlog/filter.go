package binlog

import (
	"fmt"
	"regexp"
	"strings"
)

// Filter selects the replicated tables: those of one source database whose names match one of
// the patterns, or all of them when there are none, less the tables of online schema-change
// tools (SetOnlineDDL).
type Filter struct {
	db     string
	names  map[string]bool
	regexp []*regexp.Regexp
	online *OnlineDDL
}

// NewFilter returns a filter for database db and the comma-separated table list tables, whose
// entries are exact names or /regular expressions/ matched against the whole name.
func NewFilter(db string, tables []string) (*Filter, error) {
	if db == "" {
		return nil, fmt.Errorf("source database is empty: set --source-db or name it in --source")
	}
	f := &Filter{db: db, names: map[string]bool{}}
	for _, t := range tables {
		t = strings.TrimSpace(t)
		switch {
		case t == "":
			continue
		case len(t) >= 2 && strings.HasPrefix(t, "/") && strings.HasSuffix(t, "/"):
			re, err := regexp.Compile("^(?:" + t[1:len(t)-1] + ")$")
			if err != nil {
				return nil, fmt.Errorf("--tables entry %s is not a valid regular expression: %v", t, err)
			}
			f.regexp = append(f.regexp, re)
		default:
			f.names[t] = true
		}
	}
	return f, nil
}

// DB returns the source database.
func (f *Filter) DB() string { return f.db }

// All reports whether every table of the database is replicated.
func (f *Filter) All() bool { return len(f.names) == 0 && len(f.regexp) == 0 }

// Match reports whether table of schema is replicated: its name is selected, and it is no
// shadow or trash table of an online schema-change tool for a selected table.
func (f *Filter) Match(schema, table string) bool {
	if !f.matchName(schema, table) {
		return false
	}
	k, _ := f.onlineKind(schema, table)
	return k == plainTable
}

// matchName reports whether the name of table of schema is selected.
func (f *Filter) matchName(schema, table string) bool {
	if schema != f.db {
		return false
	}
	if f.All() || f.names[table] {
		return true
	}
	for _, re := range f.regexp {
		if re.MatchString(table) {
			return true
		}
	}
	return false
}
