package plan

import (
	"strings"

	"github.com/vplayer/vplayer/event"
	"github.com/vplayer/vplayer/sqlq"
)

// ddl plans a schema change by the OnDDL policy, after committing the open target transaction.
func (p *Planner) ddl(e *event.Event) error {
	if err := p.commit(); err != nil {
		return err
	}
	p.pos, p.txTime = e.Pos, e.Timestamp
	switch p.cfg.OnDDL {
	case OnDDLStop:
		if err := p.savePos(); err != nil {
			return err
		}
		p.emit(Step{Kind: StepStop, Msg: "Stopped at DDL " + e.Query, AtDDL: true})
		p.stopped = true
		return nil
	case OnDDLExec, OnDDLExecIgnore:
		// Run in the target database, with the names that qualify the source database pointed at
		// the target database too, after the executor's mark (slot 0).
		if p.cfg.Parallel {
			p.fkUnknown = true // the planned state followed batches that workers ran
		}
		p.foreignKeys(true) // a DDL's references need not exist yet, nor its rows match them
		p.cur.Add("", "USE "+sqlq.Ident(p.cfg.TargetDB))
		p.cur.Add(ddlShape(e.Query), requalify(e.Query, e.DBRefs, sqlq.Ident(p.cfg.TargetDB)))
		p.emit(Step{Kind: StepDDL, Stmts: p.take(), Event: e, Writeset: &Writeset{barrier: true}})
	}
	return p.savePos()
}

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
