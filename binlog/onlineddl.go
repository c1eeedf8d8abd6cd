package binlog

import (
	"fmt"
	"strings"
)

// DefaultOnlineDDLPatterns are the names gh-ost and pt-online-schema-change give the tables they
// create beside a table t: gh-ost's ghost table _t_gho (altered, filled, renamed to t at the
// cut-over), its changelog _t_ghc and the table t is renamed to, _t_del; pt-online-schema-change's
// new table _t_new and old table _t_old.
const DefaultOnlineDDLPatterns = "shadow=_{table}_gho,shadow=_{table}_new,trash=_{table}_ghc,trash=_{table}_del,trash=_{table}_old"

// NoOnlineDDLPatterns turns the recognition of online schema-change tools' tables off.
const NoOnlineDDLPatterns = "none"

// OnlineDDL recognises the tables an online schema-change tool creates beside a table by their
// names. A shadow table is created with the table's definition, altered, filled with the
// table's rows, and renamed in its place at the cut-over; a trash table is every other table of
// the tool (its changelog, the table renamed away at the cut-over). The zero value recognises
// nothing.
type OnlineDDL struct {
	shadow, trash []namePattern
}

// namePattern is a table name around the name of the table it belongs to: prefix{table}suffix.
// A prefix that starts with an underscore also matches with more underscores in front, as
// pt-online-schema-change names its tables when the first name is taken (__t_new).
type namePattern struct{ prefix, suffix string }

// ParseOnlineDDLPatterns parses --online-ddl-patterns: comma-separated entries kind=pattern,
// kind shadow or trash, pattern a table name with {table} standing for the name of the table it
// belongs to (shadow=_{table}_gho). Empty is DefaultOnlineDDLPatterns; "none" recognises
// nothing.
func ParseOnlineDDLPatterns(s string) (*OnlineDDL, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "":
		s = DefaultOnlineDDLPatterns
	case NoOnlineDDLPatterns:
		return &OnlineDDL{}, nil
	}
	o := &OnlineDDL{}
	for _, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		kind, pattern, ok := strings.Cut(entry, "=")
		if !ok {
			return nil, fmt.Errorf("--online-ddl-patterns entry %q: want shadow=<pattern> or trash=<pattern>, e.g. shadow=_{table}_gho", entry)
		}
		prefix, suffix, ok := strings.Cut(strings.TrimSpace(pattern), "{table}")
		switch {
		case !ok || strings.Contains(suffix, "{table}"):
			return nil, fmt.Errorf("--online-ddl-patterns entry %q: the pattern must hold {table} once", entry)
		case prefix == "" && suffix == "":
			return nil, fmt.Errorf("--online-ddl-patterns entry %q: the pattern must add something to {table}", entry)
		case strings.ContainsAny(prefix+suffix, "`./"):
			return nil, fmt.Errorf("--online-ddl-patterns entry %q: the pattern is a table name, without quotes, dots or slashes", entry)
		}
		p := namePattern{prefix: prefix, suffix: suffix}
		switch strings.TrimSpace(kind) {
		case "shadow":
			o.shadow = append(o.shadow, p)
		case "trash":
			o.trash = append(o.trash, p)
		default:
			return nil, fmt.Errorf("--online-ddl-patterns entry %q: kind %q, want shadow or trash", entry, kind)
		}
	}
	return o, nil
}

// bases returns the names of the tables name could belong to by p, fewest added underscores
// first.
func (p namePattern) bases(name string, out []string) []string {
	if !strings.HasSuffix(name, p.suffix) {
		return out
	}
	rest := name[:len(name)-len(p.suffix)]
	for extra := 0; extra <= len(rest); extra++ {
		if extra > 0 && (!strings.HasPrefix(p.prefix, "_") || rest[extra-1] != '_') {
			break
		}
		if after, ok := strings.CutPrefix(rest[extra:], p.prefix); ok && after != "" {
			out = append(out, after)
		}
	}
	return out
}

// is reports whether name is by p a table of base.
func (p namePattern) is(name, base string) bool {
	rest, ok := strings.CutSuffix(name, p.suffix)
	if !ok {
		return false
	}
	rest, ok = strings.CutSuffix(rest, base)
	if !ok {
		return false
	}
	for {
		if rest == p.prefix {
			return true
		}
		if !strings.HasPrefix(p.prefix, "_") || !strings.HasPrefix(rest, "_") {
			return false
		}
		rest = rest[1:]
	}
}

// tableKind is what a table is to the online schema-change tools.
type tableKind uint8

const (
	plainTable tableKind = iota
	shadowTable
	trashTable
)

// kindOf says whether name is a shadow or trash table of a table that replicated accepts, and
// of which.
func (o *OnlineDDL) kindOf(name string, replicated func(string) bool) (tableKind, string) {
	if o == nil {
		return plainTable, ""
	}
	var buf [4]string
	for _, k := range []struct {
		kind     tableKind
		patterns []namePattern
	}{{shadowTable, o.shadow}, {trashTable, o.trash}} {
		for _, p := range k.patterns {
			for _, base := range p.bases(name, buf[:0]) {
				if replicated(base) {
					return k.kind, base
				}
			}
		}
	}
	return plainTable, ""
}

// isShadowOf reports whether name is a shadow table of base by its name.
func (o *OnlineDDL) isShadowOf(name, base string) bool {
	return o != nil && anyIs(o.shadow, name, base)
}

// isTrashOf reports whether name is a trash table of base by its name.
func (o *OnlineDDL) isTrashOf(name, base string) bool {
	return o != nil && anyIs(o.trash, name, base)
}

func anyIs(ps []namePattern, name, base string) bool {
	for _, p := range ps {
		if p.is(name, base) {
			return true
		}
	}
	return false
}

// SetOnlineDDL makes the filter recognise the tables of online schema-change tools: a shadow or
// trash table of a replicated table is not replicated itself (its rows are never applied), and
// the reader carries the ALTER run on a shadow table over to the table at the cut-over. Set it
// before the filter is used.
func (f *Filter) SetOnlineDDL(o *OnlineDDL) { f.online = o }

// onlineKind says whether table of schema is a shadow or trash table of a replicated table, and
// of which.
func (f *Filter) onlineKind(schema, table string) (tableKind, string) {
	if schema != f.db || f.online == nil {
		return plainTable, ""
	}
	return f.online.kindOf(table, func(base string) bool { return f.matchName(schema, base) })
}

// IsOnlineDDLTable reports whether table of schema is the shadow or trash table of an online
// schema-change tool for a replicated table: Match is false for it.
func (f *Filter) IsOnlineDDLTable(schema, table string) bool {
	k, _ := f.onlineKind(schema, table)
	return k != plainTable
}
