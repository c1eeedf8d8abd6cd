package applier

import "context"

// recordSessions records, through the lease, the target sessions that can hold a transaction
// open: the applier's own, its workers' and those of its open XA transactions. A process that takes the
// workflow over from this one kills them, so that a frozen or partitioned applier's locks go at
// once (see workflow.Lease.RecordSession).
func (a *Applier) recordSessions(ctx context.Context) error {
	ids := []int64{a.main.id}
	for _, s := range a.xaSessions {
		ids = append(ids, s.id)
	}
	for _, w := range a.workers() {
		ids = append(ids, w.s.id)
	}
	return a.cfg.Record.RecordSession(ctx, ids...)
}
