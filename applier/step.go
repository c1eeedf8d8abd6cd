package applier

import (
	"fmt"

	"github.com/vplayer/vplayer/event"
)

// stepKind says what the executor does with a step.
type stepKind uint8

const (
	// stepBegin: a target transaction begins (its BEGIN is among the statements of a later step).
	stepBegin stepKind = iota + 1
	// stepSend: send stmts; the target transaction stays open.
	stepSend
	// stepCommit: send check, then stmts followed by the position write and COMMIT.
	stepCommit
	// stepXAStart: open a session for the XA transaction xid and send stmts (XA START) on it.
	stepXAStart
	// stepXAPrepare: send check, then stmts (rows, XA END, XA PREPARE) with the lease's fence
	// check at slot.
	stepXAPrepare
	// stepXAOnePhase: send check, then stmts (rows, XA END, XA COMMIT ... ONE PHASE) with the
	// position write at slot; the XA transaction's session is then free.
	stepXAOnePhase
	// stepXAEnd: the mark of ev's position (at slot 0), then stmts (XA COMMIT or XA ROLLBACK of a
	// prepared XA transaction), on its own session when this attempt prepared it.
	stepXAEnd
	// stepDDL: the mark of ev's position (at slot 0), then stmts (foreign_key_checks, USE, the DDL).
	stepDDL
	// stepStop: record the state Stopped with msg, and end the attempt.
	stepStop
)

func (k stepKind) String() string {
	switch k {
	case stepBegin:
		return "begin"
	case stepSend:
		return "send"
	case stepCommit:
		return "commit"
	case stepXAStart:
		return "xa start"
	case stepXAPrepare:
		return "xa prepare"
	case stepXAOnePhase:
		return "xa one phase"
	case stepXAEnd:
		return "xa end"
	case stepDDL:
		return "ddl"
	case stepStop:
		return "stop"
	}
	return fmt.Sprintf("stepKind(%d)", uint8(k))
}

// step is one thing the executor does, in order.
type step struct {
	kind stepKind
	// xid is the XA transaction whose session runs the step; empty for the main session.
	xid string
	// check, when set, is sent first: in strict mode, the checked statements go in a round trip
	// of their own before the one that commits them (see checkBeforeCommit).
	check *batch
	stmts *batch
	// late, when set, holds statements of a commit that the executor sends after the batches
	// they overlap committed, after check and stmts and before the position (see
	// planConfig.split).
	late *batch
	// slot is the index in stmts before which the executor's record write goes (xa prepare, xa
	// one phase, xa end, ddl).
	slot int
	// end is what a step that ends a target transaction saves (commit, xa one phase); ws is the
	// writeset of the rows it commits, or prepares (xa prepare).
	end saved
	ws  *writeset
	ev  *event.Event // the DDL or XA end
	// msg is the state message of a stop; atDDL says it stopped at a DDL by --on-ddl=stop.
	msg   string
	atDDL bool
}

// saved is what a committed target transaction saved.
type saved struct {
	pos     string
	txTime  int64 // source commit time of its last transaction, unix seconds
	commits int   // source transactions it carried
	rows    int   // row changes it carried
	inTxn   bool  // a source transaction is still open (continues past it)
}
