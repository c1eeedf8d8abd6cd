package applier

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Lock errors a job can run again after (see parallel.go).
const (
	errLockWaitTimeout = 1205 // ER_LOCK_WAIT_TIMEOUT: the statement was rolled back
	errDeadlock        = 1213 // ER_LOCK_DEADLOCK: the transaction was rolled back
	errInterrupted     = 1317 // ER_QUERY_INTERRUPTED: KILL QUERY
)

// lockError is a round trip that ended on a lock conflict or a killed statement.
type lockError struct {
	shape string
	err   error
}

func (e *lockError) Error() string { return fmt.Sprintf("apply %s: %v", e.shape, e.err) }
func (e *lockError) Unwrap() error { return e.err }

func (e *lockError) number() uint16 {
	var me *mysql.MySQLError
	if errors.As(e.err, &me) {
		return me.Number
	}
	return 0
}

// retryable reports whether err is a lock conflict or a killed statement.
func retryable(err error) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	switch me.Number {
	case errLockWaitTimeout, errDeadlock, errInterrupted:
		return true
	}
	return false
}

// Lock waits of one session: MariaDB (and MySQL 5.7) list them in information_schema, MySQL 8.0
// in performance_schema.
const (
	lockWaitsIS = "SELECT b.trx_mysql_thread_id FROM information_schema.INNODB_LOCK_WAITS w" +
		" JOIN information_schema.INNODB_TRX r ON r.trx_id = w.requesting_trx_id" +
		" JOIN information_schema.INNODB_TRX b ON b.trx_id = w.blocking_trx_id" +
		" WHERE r.trx_mysql_thread_id = "
	lockWaitsPS = "SELECT b.trx_mysql_thread_id FROM performance_schema.data_lock_waits w" +
		" JOIN information_schema.INNODB_TRX r ON r.trx_id = w.REQUESTING_ENGINE_TRANSACTION_ID" +
		" JOIN information_schema.INNODB_TRX b ON b.trx_id = w.BLOCKING_ENGINE_TRANSACTION_ID" +
		" WHERE r.trx_mysql_thread_id = "
)

// watchLocks is the lock watcher: see parallel.go. It returns when ctx ends.
func (a *Applier) watchLocks(ctx context.Context) error {
	t := time.NewTicker(lockCheckEvery)
	defer t.Stop()
	query := lockWaitsIS
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		query = a.checkLocks(ctx, query)
	}
}

// checkLocks looks once at what the oldest job waits for, when its round trip has been in flight
// for lockCheckAfter, and rolls back the later jobs that hold it. query is the lock waits' query
// the target answered last; it returns the one to use next time.
func (a *Applier) checkLocks(ctx context.Context, query string) string {
	head, later := a.sched.headAndLater()
	if head == nil || len(later) == 0 {
		return query
	}
	hw := head.worker.Load()
	if hw == nil {
		return query
	}
	since := hw.s.tr.since.Load()
	if since == 0 || a.cfg.Now().Sub(time.Unix(0, since)) < lockCheckAfter {
		return query
	}
	blockers, err := a.blockers(ctx, query, hw.s.id)
	if err != nil && query == lockWaitsIS && unknownTable(err) {
		query = lockWaitsPS
		blockers, err = a.blockers(ctx, query, hw.s.id)
	}
	if ctx.Err() != nil {
		return query
	}
	for _, j := range later {
		w := j.worker.Load()
		if w == nil {
			continue
		}
		// Without the server's answer, every later job may be what the oldest waits for.
		if err == nil && !blockers[w.s.id] {
			continue
		}
		a.abortJob(j, w)
	}
	if err != nil {
		a.cfg.Logger.Debug("could not read the target's lock waits; rolled back every later batch", "error", err)
	}
	return query
}

// blockers returns the connection ids of the transactions that hold a lock session id waits for.
func (a *Applier) blockers(ctx context.Context, query string, id int64) (map[int64]bool, error) {
	qctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	rows, err := a.cfg.DB.QueryContext(qctx, query+strconv.FormatInt(id, 10))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	ids := map[int64]bool{}
	for rows.Next() {
		var b int64
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		ids[b] = true
	}
	return ids, rows.Err()
}

// abortJob rolls j, a later job that may hold what the oldest waits for, back: told to when it
// waits for its turn, its statement killed when one runs.
func (a *Applier) abortJob(j *job, w *worker) {
	switch j.state.Load() {
	case jobHolding:
		select {
		case j.abort <- struct{}{}:
		default:
		}
	case jobRunning:
		// The kill may reach the worker's next job instead: whichever it ends runs again.
		w.killed.Store(true)
		kctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := a.cfg.DB.ExecContext(kctx, "KILL QUERY "+strconv.FormatInt(w.s.id, 10)); err != nil {
			a.cfg.Logger.Debug("could not kill a later batch's statement", "worker", w.n, "error", err)
		}
	}
}

// unknownTable reports whether err is ER_UNKNOWN_TABLE or ER_NO_SUCH_TABLE.
func unknownTable(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1109 || me.Number == 1146)
}
