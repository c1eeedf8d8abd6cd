package plan

import (
	"fmt"

	"github.com/vplayer/vplayer/event"
)

// StepKind says what the executor does with a step.
type StepKind uint8

const (
	// StepBegin: a target transaction begins (its BEGIN is among the statements of a later step).
	StepBegin StepKind = iota + 1
	// StepSend: send stmts; the target transaction stays open.
	StepSend
	// StepCommit: send check, then stmts followed by the position write and COMMIT.
	StepCommit
	// StepXAStart: open a session for the XA transaction xid and send stmts (XA START) on it.
	StepXAStart
	// StepXAPrepare: send check, then stmts (rows, XA END, XA PREPARE) with the lease's fence
	// check at slot.
	StepXAPrepare
	// StepXAOnePhase: send check, then stmts (rows, XA END, XA COMMIT ... ONE PHASE) with the
	// position write at slot; the XA transaction's session is then free.
	StepXAOnePhase
	// StepXAEnd: the mark of ev's position (at slot 0), then stmts (XA COMMIT or XA ROLLBACK of a
	// prepared XA transaction), on its own session when this attempt prepared it.
	StepXAEnd
	// StepDDL: the mark of ev's position (at slot 0), then stmts (foreign_key_checks, USE, the DDL).
	StepDDL
	// StepStop: record the state Stopped with msg, and end the attempt.
	StepStop
)

// String names k, for traces and messages.
func (k StepKind) String() string {
	switch k {
	case StepBegin:
		return "begin"
	case StepSend:
		return "send"
	case StepCommit:
		return "commit"
	case StepXAStart:
		return "xa start"
	case StepXAPrepare:
		return "xa prepare"
	case StepXAOnePhase:
		return "xa one phase"
	case StepXAEnd:
		return "xa end"
	case StepDDL:
		return "ddl"
	case StepStop:
		return "stop"
	}
	return fmt.Sprintf("stepKind(%d)", uint8(k))
}

// Step is one thing the executor does, in order.
type Step struct {
	Kind StepKind
	// XID is the XA transaction whose session runs the step; empty for the main session.
	XID string
	// Check, when set, is sent first: in strict mode, the checked statements go in a round trip
	// of their own before the one that commits them (see Planner.checked).
	Check *Batch
	Stmts *Batch
	// Late, when set, holds statements of a commit that the executor sends after the batches
	// they overlap committed, after Check and Stmts and before the position (see
	// Config.Split).
	Late *Batch
	// Slot is the index in Stmts before which the executor's record write goes (xa prepare, xa
	// one phase, xa end, ddl).
	Slot int
	// End is what a step that ends a target transaction saves (commit, xa one phase); Writeset
	// is the writeset of the rows it commits, or prepares (xa prepare).
	End      Saved
	Writeset *Writeset
	Event    *event.Event // the DDL or XA end
	// Msg is the state message of a stop; AtDDL says it stopped at a DDL by --on-ddl=stop.
	Msg   string
	AtDDL bool
}

// Saved is what a committed target transaction saved.
type Saved struct {
	Pos     string
	TxTime  int64 // source commit time of its last transaction, unix seconds
	Commits int   // source transactions it carried
	Rows    int   // row changes it carried
	InTxn   bool  // a source transaction is still open (continues past it)
}
