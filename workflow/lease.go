package workflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
)

// ErrLeaseHeld means another live process owns the workflow.
var ErrLeaseHeld = errors.New("workflow is owned by another process")

// ErrFenced means a write carrying the lease's epoch found another epoch on the record: the
// write failed and its transaction must be rolled back.
var ErrFenced = errors.New("write fenced: the workflow record has a newer owner")

// FenceError is a write refused by the fence: Err is the server's answer. It matches ErrFenced;
// whether the workflow was really taken over is for Lease.Check to say (a replicated table's own
// NOT NULL column named pos gives the same server error).
type FenceError struct{ Err error }

func (e *FenceError) Error() string { return ErrFenced.Error() + ": " + e.Err.Error() }

// Unwrap makes errors.Is(err, ErrFenced) hold and keeps the server error reachable.
func (e *FenceError) Unwrap() []error { return []error{ErrFenced, e.Err} }

// ErrLostOwnership means the process's lease was taken over (its epoch is no longer the
// record's): nothing more may be written for the workflow.
var ErrLostOwnership = errors.New("lost ownership")

// nowMillis is the target's clock in milliseconds: every lease time is the target's, so that
// the clocks of the competing processes do not matter.
const nowMillis = "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)"

// Holder describes who owns a workflow and until when, on the target's clock.
type Holder struct {
	Owner string
	Epoch uint64
	Until time.Time
}

// Lease is ownership of one workflow record: its epoch is the fencing token that every write of
// the owner carries.
type Lease struct {
	store *Store
	id    int64
	name  string
	owner string
	epoch uint64
	ttl   time.Duration

	// The keepalive: started by Keep, ended by Release or loss, never by a caller's context.
	stop     chan struct{}
	done     chan struct{}
	lostCh   chan struct{}
	lostErr  error
	stopOnce sync.Once
	kept     atomic.Bool
	// keepCtx bounds the keepalive's renewals; Release cancels it so that a renewal stuck behind
	// a locked record row does not hold the stop up.
	keepCtx    context.Context
	keepCancel context.CancelFunc
	// renewed is when (local clock, unix nanos) the last renewal that succeeded started.
	renewed atomic.Int64

	// The previous owner's target sessions Acquire ended, and the error of a kill that failed.
	ended  []int64
	endErr error
	// prevSource is the previous owner's recorded binlog connection on the source, when the lease
	// was taken over from an expired owner.
	prevSource string

	// parts are the owner's target sessions by the part of the process that holds them (see
	// RecordSessionsOf); sessionsMu orders their writes.
	sessionsMu sync.Mutex
	parts      map[string][]int64
}

// Epoch returns the lease's fencing token.
func (l *Lease) Epoch() uint64 { return l.epoch }

// Owner returns the owner identity the lease was taken with.
func (l *Lease) Owner() string { return l.owner }

// TTL returns how long the lease lasts past each renewal.
func (l *Lease) TTL() time.Duration { return l.ttl }

// Acquire takes the lease of record id for owner for ttl when it is free or expired, in one
// conditional UPDATE whose affected-row count decides; the epoch is incremented. When another
// live owner holds it, it returns ErrLeaseHeld and who holds it.
func (s *Store) Acquire(ctx context.Context, id int64, workflow, owner string, ttl time.Duration) (*Lease, Holder, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, Holder{}, fmt.Errorf("acquire workflow %d: %w", id, err)
	}
	defer conn.Close()
	ended, prevSource, endErr := s.endExpiredOwner(ctx, conn, id)
	res, err := conn.ExecContext(ctx, "UPDATE "+s.table("vreplication")+
		" SET owner = ?, epoch = LAST_INSERT_ID(epoch + 1), sessions = NULL, source_session = NULL, lease_until = "+nowMillis+" + ?"+
		" WHERE id = ? AND (owner = '' OR lease_until < "+nowMillis+")", owner, ttl.Milliseconds(), id)
	if err != nil {
		return nil, Holder{}, fmt.Errorf("acquire workflow %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		h, err := s.holder(ctx, id)
		if err != nil {
			return nil, Holder{}, err
		}
		return nil, h, fmt.Errorf("%w %s until %s", ErrLeaseHeld, h.Owner, h.Until.UTC().Format(time.RFC3339Nano))
	}
	var epoch uint64
	if err := conn.QueryRowContext(ctx, "SELECT LAST_INSERT_ID()").Scan(&epoch); err != nil {
		return nil, Holder{}, fmt.Errorf("acquire workflow %d: read epoch: %w", id, err)
	}
	l := &Lease{store: s, id: id, name: workflow, owner: owner, epoch: epoch, ttl: ttl, ended: ended, endErr: endErr, prevSource: prevSource,
		stop: make(chan struct{}), done: make(chan struct{}), lostCh: make(chan struct{})}
	l.renewed.Store(time.Now().UnixNano())
	return l, Holder{Owner: owner, Epoch: epoch}, nil
}

// holder reads who owns record id.
func (s *Store) holder(ctx context.Context, id int64) (Holder, error) {
	var h Holder
	var until int64
	err := s.db.QueryRowContext(ctx, "SELECT owner, epoch, lease_until FROM "+s.table("vreplication")+" WHERE id = ?", id).Scan(&h.Owner, &h.Epoch, &until)
	if err != nil {
		return h, fmt.Errorf("read owner of workflow %d: %w", id, err)
	}
	h.Until = time.UnixMilli(until)
	return h, nil
}

// Renew extends the lease by its ttl from now on the target's clock, if it is still ours.
// It returns an error wrapping ErrLostOwnership when the epoch moved on.
func (l *Lease) Renew(ctx context.Context) error {
	return l.renew(ctx, l.store.db)
}

// execer is a pool or one of its connections.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func (l *Lease) renew(ctx context.Context, db execer) error {
	started := time.Now()
	res, err := db.ExecContext(ctx, "UPDATE "+l.store.table("vreplication")+
		" SET lease_until = "+nowMillis+" + ? WHERE id = ? AND epoch = ?", l.ttl.Milliseconds(), l.id, l.epoch)
	if err != nil {
		return fmt.Errorf("renew lease of workflow %d: %w", l.id, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		l.renewed.Store(started.UnixNano())
		return nil
	}
	if err := l.lost(ctx); err != nil {
		return err
	}
	l.renewed.Store(started.UnixNano()) // found rows not counted: the lease_until was already that
	return nil
}

// lost returns the ownership-loss error naming the new owner, or nil when the record still
// carries our epoch (an update that changed nothing reports no affected row).
func (l *Lease) lost(ctx context.Context) error {
	h, err := l.store.holder(ctx, l.id)
	if errors.Is(err, sql.ErrNoRows) {
		// vplayer delete --force removed the record under this owner: nothing it writes is
		// recorded any more (an UPDATE of no row fails no fence), so it must stop.
		return &LostError{Workflow: l.name, Deleted: true}
	}
	if err != nil {
		return err
	}
	if h.Epoch == l.epoch {
		return nil
	}
	return l.LostTo(h.Owner)
}

// LostTo returns the error for losing the lease to owner.
func (l *Lease) LostTo(owner string) error {
	return &LostError{Workflow: l.name, Owner: owner}
}

// Check returns an error wrapping ErrLostOwnership unless the record still carries our epoch.
func (l *Lease) Check(ctx context.Context) error { return l.lost(ctx) }

// Keep starts the keepalive: one goroutine that renews the lease every third of its ttl until
// Release, or until the lease is lost, which closes Lost. Its lifetime is the lease's: no
// caller's context can end it, so a cancelled request never drops a lease while work goes on.
// A renewal that fails for a reason other than loss (the target unreachable) is retried; the
// lease then simply expires on the target's clock, and the fenced writes keep this process from
// writing after someone else took over.
func (l *Lease) Keep() {
	if !l.kept.CompareAndSwap(false, true) {
		return
	}
	l.keepCtx, l.keepCancel = context.WithCancel(context.Background())
	go func() {
		defer close(l.done)
		r := &renewer{lease: l}
		defer r.close()
		t := time.NewTicker(l.ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(l.keepCtx, l.ttl/3)
			err := r.renew(ctx)
			cancel()
			if errors.Is(err, ErrLostOwnership) {
				l.lostErr = err
				close(l.lostCh)
				return
			}
		}
	}()
}

// Lost is closed when the keepalive found the lease taken over; Err then says by whom.
func (l *Lease) Lost() <-chan struct{} { return l.lostCh }

// Err returns the loss error once Lost is closed, else nil.
func (l *Lease) Err() error {
	select {
	case <-l.lostCh:
		return l.lostErr
	default:
		return nil
	}
}

// Release stops the keepalive and gives the lease up, if it is still ours. It uses its own short
// deadline: releasing must not depend on the context of whatever is stopping.
func (l *Lease) Release() error {
	l.stopOnce.Do(func() { close(l.stop) })
	if l.kept.Load() {
		l.keepCancel()
		<-l.done
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := l.store.db.ExecContext(ctx, "UPDATE "+l.store.table("vreplication")+
		" SET owner = '', lease_until = 0, sessions = NULL, source_session = NULL WHERE id = ? AND epoch = ?", l.id, l.epoch)
	if err != nil {
		return fmt.Errorf("release lease of workflow %d: %w", l.id, err)
	}
	return nil
}

// DDLMarkSQL is Store.DDLMarkSQL fenced by the lease's epoch: on a record another owner took
// over it fails, so a DDL after it in the same multi-statement never runs.
func (l *Lease) DDLMarkSQL(pos string) string {
	return l.store.DDLMarkSQL(l.id, pos, l.epoch)
}

// LostError says who took a workflow over.
type LostError struct {
	Workflow string
	Owner    string
	// Deleted says the workflow's record was deleted (vplayer delete --force): nobody owns it.
	Deleted bool
}

func (e *LostError) Error() string {
	if e.Deleted {
		return fmt.Sprintf("lost ownership of workflow %s: its record was deleted (vplayer delete --force)", e.Workflow)
	}
	return fmt.Sprintf("lost ownership of workflow %s to %s", e.Workflow, e.Owner)
}

// Unwrap makes errors.Is(err, ErrLostOwnership) hold.
func (e *LostError) Unwrap() error { return ErrLostOwnership }

// PositionSQL is Store.PositionSQL fenced by the lease's epoch: on a record another owner took
// over, the statement fails, aborting its batch before COMMIT.
func (l *Lease) PositionSQL(pos string, now, txTime int64) string {
	return l.store.positionSQL(l.id, pos, now, txTime, l.epoch)
}

// HeartbeatSQL is Store.HeartbeatSQL fenced by the lease's epoch.
func (l *Lease) HeartbeatSQL(now int64) string {
	return l.store.heartbeatSQL(l.id, now, l.epoch)
}

// FenceCheckSQL returns a statement that fails unless the record's epoch is still the lease's,
// and takes no lock: for the inside of an XA transaction just before its XA PREPARE, where a
// fenced write of the record would hold the record's row until the XA COMMIT. It reads the
// record consistently, so it must be the transaction's first consistent read (the row changes
// before it are current reads, which open no read view).
func (l *Lease) FenceCheckSQL() string {
	return "SELECT 1 INTO @_vplayer_fence FROM (SELECT 1 UNION ALL SELECT 2) fence WHERE NOT EXISTS (SELECT 1 FROM " +
		l.store.table("vreplication") + " WHERE id = " + strconv.FormatInt(l.id, 10) + " AND epoch = " + strconv.FormatUint(l.epoch, 10) + ")"
}

// IsFenceViolation reports whether err is the server's answer to a fenced write on a record
// whose epoch moved on: the NOT NULL pos or time_heartbeat set to NULL, or FenceCheckSQL's
// two rows into one variable.
func IsFenceViolation(err error) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	switch me.Number {
	case 1048: // column cannot be null
		return strings.Contains(me.Message, "'pos'") || strings.Contains(me.Message, "'time_heartbeat'")
	case 1172: // result consisted of more than one row
		return true
	}
	return false
}

// SetState sets the record's state and message if the lease is still ours. Stopped with no
// message (a stop by signal) keeps the reason of a record already Stopped: a vplayer stop that
// landed just before the signal still says so, and keeps standbys off.
func (l *Lease) SetState(ctx context.Context, state, message string) error {
	if state == StateStopped && message == "" {
		// Assignments run left to right: message is decided from the state before this update.
		return l.update(ctx, "message = IF(state = '"+StateStopped+"', message, ''), state = ?, time_updated = UNIX_TIMESTAMP()", state)
	}
	return l.update(ctx, "state = ?, message = ?, time_updated = UNIX_TIMESTAMP()", state, Truncate(message))
}

// SetMessage sets the record's message if the lease is still ours and the workflow is Running:
// the message of a running stream (an error it retries, a stall) never overwrites what an
// operator's vplayer stop, or the stream's own stop or terminal error, recorded meanwhile.
func (l *Lease) SetMessage(ctx context.Context, message string) error {
	return l.update(ctx, "message = IF(state = '"+StateRunning+"', ?, message)", Truncate(message))
}

func (l *Lease) update(ctx context.Context, set string, args ...any) error {
	res, err := l.store.db.ExecContext(ctx, "UPDATE "+l.store.table("vreplication")+" SET "+set+" WHERE id = ? AND epoch = ?", append(args, l.id, l.epoch)...)
	if err != nil {
		return fmt.Errorf("update workflow %s: %w", l.name, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	if err := l.lost(ctx); err != nil {
		return err
	}
	return nil
}
