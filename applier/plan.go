package applier

import "github.com/vplayer/vplayer/applier/plan"

// The planner is package plan (applier/plan): events and table definitions in, steps out. These
// are the names of it the applier's importers use, kept here so that they import the applier
// alone.

// On-DDL policies (--on-ddl).
const (
	OnDDLIgnore     = plan.OnDDLIgnore
	OnDDLStop       = plan.OnDDLStop
	OnDDLExec       = plan.OnDDLExec
	OnDDLExecIgnore = plan.OnDDLExecIgnore
)

// Exec modes (--exec-mode): see plan.ExecModeStrict and plan.ExecModeIdempotent.
const (
	ExecModeStrict     = plan.ExecModeStrict
	ExecModeIdempotent = plan.ExecModeIdempotent
)

// Mismatch is the kind of a row change that does not match the target: see plan.Mismatch.
type Mismatch = plan.Mismatch

// The kinds of Mismatch.
const (
	UpdateMissing = plan.UpdateMissing
	DeleteMissing = plan.DeleteMissing
	InsertExists  = plan.InsertExists
)

// MismatchError is a row change that does not match the target, in strict mode: see
// plan.MismatchError.
type MismatchError = plan.MismatchError

// InexactError is a change that cannot be applied exactly: see plan.InexactError.
type InexactError = plan.InexactError

var (
	// ErrRowMismatch is matched by every *MismatchError.
	ErrRowMismatch = plan.ErrRowMismatch
	// ErrInexact is matched by every *InexactError.
	ErrInexact = plan.ErrInexact
	// ErrUnsupportedValue means the binlog carried a value the applier cannot write exactly.
	ErrUnsupportedValue = plan.ErrUnsupportedValue
	// ErrSchemaDrift means the binlog's description of a table does not match the target's.
	ErrSchemaDrift = plan.ErrSchemaDrift
)
