package plan

import (
	"strings"
)

// ddlShape describes a DDL statement for a stall message: its first words, never a whole
// statement that could carry values.
func ddlShape(q string) string {
	f := strings.Fields(q)
	if len(f) > 4 {
		f = f[:4]
	}
	return strings.Join(f, " ")
}

// requalify returns the DDL statement q with each byte range of refs (the source database as a
// qualifier, in order) replaced by db, an identifier already quoted.
func requalify(q string, refs [][2]int, db string) string {
	if len(refs) == 0 {
		return q
	}
	out := make([]byte, 0, len(q)+len(refs)*len(db))
	last := 0
	for _, r := range refs {
		if r[0] < last || r[1] > len(q) || r[0] > r[1] {
			return q // not ranges of q: leave the statement as the source ran it
		}
		out = append(out, q[last:r[0]]...)
		out = append(out, db...)
		last = r[1]
	}
	return string(append(out, q[last:]...))
}

// On-DDL policies.
const (
	OnDDLIgnore     = "ignore"
	OnDDLStop       = "stop"
	OnDDLExec       = "exec"
	OnDDLExecIgnore = "exec_ignore"
)
