// Package plan is the applier's planner: relay-log events and the target tables' definitions
// in; steps out, with no I/O, no database handle and no clock. A step holds the exact SQL the
// executor (package applier) sends, cut where it must be sent (a transaction that continues in
// the next fetch, a batch over MaxBatchBytes, the checked statements of strict mode before the
// statement that commits them), and, for each target transaction (a batch), the position it
// ends at and, when asked for, its writeset. The executor writes what only it can (the record's
// position, DDL mark and fence, which need the lease and the clock) at the place the step says;
// the applier's scheduler decides on which session each step runs.
//
// Steps are planned one event at a time and must be run, in order, before the next call: the
// executor's outcome can change what the planner plans next (an XA transaction found already
// prepared, a DDL that failed under exec_ignore), and the planner reuses the statements of the
// steps it handed out. What the planner must know of the executor's state it is told, never
// asks: the writesets of the batches in flight (Planner.InFlight), an XA transaction found
// prepared (SkipXA), a session whose foreign_key_checks is unknown (ForeignKeysUnknown).
//
// What cannot be applied exactly is an error, never a guess: an InexactError (a statement-logged
// change, a partial image without the row identity), ErrUnsupportedValue, ErrSchemaDrift.
package plan
