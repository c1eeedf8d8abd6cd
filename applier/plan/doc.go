// Package plan is the applier's planner: relay-log events and the target tables' definitions
// in; steps (the exact SQL to send, where to cut it, the record writes' places), the positions
// they end at and their writesets out. It does no I/O and holds no clock: the applier's executor
// runs what it plans.
//
// The applier is a planner (this package) and an executor (package applier). The planner is
// pure: relay-log events and the target tables' definitions in, steps out, with no I/O, no
// database handle and no clock. Its steps hold the exact SQL the executor sends, cut where the
// executor must send it (a transaction that continues in the next fetch, a batch over
// MaxBatchBytes, the checked statements of strict mode before the statement that commits them),
// and, for each target transaction (a batch), the position it ends at and, when asked for, its
// writeset. The executor (Applier) runs each step on its target session and writes what only it
// can: the record's position, DDL mark and fence, which need the lease and the clock, at the
// place the step says.
//
// Steps are planned one event at a time and must be run, in order, before the next call: the
// executor's outcome can change what the planner plans next (an XA transaction found already
// prepared, a DDL that failed under exec_ignore), and the planner reuses the statements of the
// steps it handed out.
package plan
