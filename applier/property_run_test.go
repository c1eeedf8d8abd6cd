package applier

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/vplayer/vplayer/applier/plan"
	"github.com/vplayer/vplayer/event"
	"github.com/vplayer/vplayer/sqlq"
)

// propConfig is how a property run plans and applies.
type propConfig struct {
	mode string // --exec-mode
	// parallel plans as for workers (planConfig.parallel, writesets): each batch is a job, and the
	// jobs of a few fetches run in a random order their writesets allow.
	parallel bool
	// late splits a batch whose rows all folded around the jobs still pending (planConfig.split):
	// its early part may run before them, on a session of its own.
	late bool
	// cut commits at transaction boundaries within a fetch now and then (planner.Cut), as the
	// dispatcher does for a free worker.
	cut      bool
	maxBatch int
	// oneFetch puts every transaction in one fetch, without cuts: a case that needs changes of
	// several transactions planned together.
	oneFetch bool
}

func (c propConfig) String() string {
	s := c.mode
	if c.parallel {
		s += ",parallel"
		if c.late {
			s += ",late"
		}
		if c.cut {
			s += ",cut"
		}
	}
	if c.oneFetch {
		s += ",one fetch"
	}
	return s + ",maxBatch=" + strconv.Itoa(c.maxBatch)
}

// propJob is a batch of a parallel run, held until the order it runs in is drawn.
type propJob struct {
	n                  int // in planned order
	check, stmts, late *plan.Batch
	ws                 *plan.Writeset
	state              int      // jobWaiting, jobOpen (its early part sent on sess), jobDone
	sess               *session // jobOpen: the session its transaction is open on
	// after are the jobs, open when this one met their locks, that must be done before it runs.
	after []*propJob
}

const (
	jobWaiting = iota
	jobOpen
	jobDone
)

// propRun applies a history's events on a real target: the planner's steps run by the
// executor's own code (one session, in order) or, for a parallel run, as jobs in a random order
// their writesets allow.
type propRun struct {
	cfg    propConfig
	r      *rand.Rand // the run's choices: fetch ends, cuts, job order
	shapes []*propShape
	tables []*plan.Table
	bts    []*event.Table
	a      *Applier
	p      *plan.Planner

	extra    []*session // sessions for the early parts of split jobs
	pending  []*propJob
	jobs     int
	mainOpen bool          // a stepSend left a transaction open on the main session
	touched  plan.Writeset // keys the rows planned since the last commit step touch
	retries  int           // jobs rolled back after a lock wait
	trace    []string
}

// newPropRun creates the tables in schema of db (a pool as vplayer opens it) and readies the
// executor and the planner.
func newPropRun(ctx context.Context, db *sql.DB, schema string, cfg propConfig, shapes []*propShape, seed uint64) (*propRun, error) {
	pr := &propRun{cfg: cfg, r: rand.New(rand.NewPCG(seed, 2)), shapes: shapes}
	for _, s := range shapes {
		for _, q := range []string{"DROP TABLE IF EXISTS " + sqlq.Ident(schema) + "." + sqlq.Ident(s.name), s.createSQL()} {
			if _, err := db.ExecContext(ctx, q); err != nil {
				return nil, fmt.Errorf("%s: %w", q, err)
			}
		}
		t, err := loadTable(ctx, db, schema, s.name)
		if err != nil {
			return nil, err
		}
		pr.tables = append(pr.tables, t)
		pr.bts = append(pr.bts, &event.Table{Schema: "src", Name: s.name, ColumnCount: len(s.cols)})
	}
	pr.a = New(Config{DB: db, Record: stubRecord{}, ExecMode: cfg.mode, TargetDB: schema, Logger: slog.New(slog.DiscardHandler)})
	pr.a.maxPacket = 4 << 20
	pr.a.sched = newScheduler(1, "MariaDB/0-1-0") // pr runs the jobs itself, on the main session
	s, err := pr.session(ctx)
	if err != nil {
		return nil, err
	}
	pr.a.main = s
	pc := plan.Config{TargetDB: schema, ExecMode: cfg.mode, MaxBatch: cfg.maxBatch, Writesets: cfg.parallel, Parallel: cfg.parallel}
	pc.Split = cfg.late
	pr.p = plan.New(pc, "MariaDB/0-1-0")
	pr.a.plan = pr.p
	return pr, nil
}

// session opens a target session as the applier sets one up, which fails a lock wait at once
// (a parallel run's jobs run one at a time: a wait would never end).
func (pr *propRun) session(ctx context.Context) (*session, error) {
	conn, id, _, err := pr.a.openSession(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = 0"); err != nil {
		conn.Close()
		return nil, err
	}
	return &session{conn: conn, id: id, tr: &tracker{}}, nil
}

// close ends the run's sessions, rolling back what a failure left open: a pool would keep the
// connection, and its locks, for whoever takes it next.
func (pr *propRun) close() {
	for _, s := range append(pr.extra, pr.a.main) {
		if s == nil {
			continue
		}
		s.conn.Raw(func(any) error { return driver.ErrBadConn })
		s.conn.Close()
	}
}

func (pr *propRun) logf(format string, args ...any) {
	pr.trace = append(pr.trace, fmt.Sprintf(format, args...))
}

func (pr *propRun) coin(percent int) bool { return pr.r.IntN(100) < percent }

// apply plans and runs the transactions txns, in fetches of a few transactions (now and then
// ending inside one), and runs every job still pending at the end.
func (pr *propRun) apply(ctx context.Context, txns []propTxn) error {
	fetch := 1
	endFetch := func() error {
		pr.inFlight()
		steps, err := pr.p.EndFetch()
		pr.logf("  end of fetch %d", fetch)
		if rerr := pr.run(ctx, steps); rerr != nil {
			return rerr
		}
		if err != nil {
			return err
		}
		if len(pr.pending) > 0 && (pr.coin(50) || len(pr.pending) > 6) {
			if err := pr.drain(ctx); err != nil {
				return err
			}
		}
		fetch++
		return nil
	}
	for i, tx := range txns {
		gtid := "0-1-" + strconv.Itoa(i+1)
		events := []*event.Event{{Type: event.Begin, GTID: gtid, Timestamp: int64(1_800_000_000 + i)}}
		for j := range tx.stmts {
			st := &tx.stmts[j]
			events = append(events, st.event(pr.shapes[st.table], pr.bts[st.table]))
		}
		events = append(events, &event.Event{Type: event.Commit, Pos: "MariaDB/" + gtid, Timestamp: int64(1_800_000_000 + i)})
		for k, e := range events {
			var t *plan.Table
			if e.Type == event.Rows {
				st := &tx.stmts[k-1]
				pr.logf("  event %s", st.describe(pr.shapes[st.table]))
				t = pr.tables[st.table]
				if pr.cfg.parallel {
					pr.touch(st)
				}
			} else {
				pr.logf("  event %s %s %s%s -> %s", e.Type, e.GTID, e.XID, e.Query, e.Pos)
			}
			pr.inFlight()
			steps, err := pr.p.Event(e, t)
			if rerr := pr.run(ctx, steps); rerr != nil {
				return rerr
			}
			if err != nil {
				return err
			}
			switch {
			case pr.cfg.oneFetch:
			case e.Type == event.Commit && pr.cfg.cut && pr.coin(50):
				pr.inFlight()
				steps, err := pr.p.Cut()
				pr.logf("  cut")
				if rerr := pr.run(ctx, steps); rerr != nil {
					return rerr
				}
				if err != nil {
					return err
				}
			case e.Type == event.Commit && pr.coin(35), e.Type == event.Rows && pr.coin(5):
				if err := endFetch(); err != nil {
					return err
				}
			}
		}
	}
	if err := endFetch(); err != nil {
		return err
	}
	return pr.drain(ctx)
}

// run runs the steps of one planner call: on the main session, in order, by the executor; in a
// parallel run each batch with a writeset is held as a job, every other step runs once the jobs
// pending ran.
func (pr *propRun) run(ctx context.Context, steps []plan.Step) error {
	for i := range steps {
		s := &steps[i]
		pr.logStep(s)
		if !pr.cfg.parallel {
			if err := pr.a.runStep(ctx, s); err != nil {
				return err
			}
			continue
		}
		switch s.Kind {
		case plan.StepBegin:
		case plan.StepSend:
			if err := pr.drain(ctx); err != nil {
				return err
			}
			pr.mainOpen = true
			if err := pr.a.flush(ctx, pr.a.main, s.Stmts); err != nil {
				return err
			}
		case plan.StepCommit:
			if err := pr.covered(s.Writeset); err != nil {
				return err
			}
			if s.Writeset == nil || s.Writeset.Barrier() || pr.mainOpen {
				if err := pr.drain(ctx); err != nil {
					return err
				}
				pr.mainOpen = false
				if err := pr.a.commit(ctx, s); err != nil {
					return err
				}
				continue
			}
			j := &propJob{n: pr.jobs, check: s.Check.Clone(), stmts: s.Stmts.Clone(), late: s.Late.Clone(), ws: s.Writeset}
			pr.jobs++
			pr.logf("    held as job %d", j.n)
			pr.pending = append(pr.pending, j)
		default:
			return fmt.Errorf("unexpected %s step", s.Kind)
		}
	}
	return nil
}

// logStep traces s: its kind, session and statements, its late part's after them.
func (pr *propRun) logStep(s *plan.Step) {
	var w strings.Builder
	fmt.Fprintf(&w, "    %s", s.Kind)
	if s.XID != "" {
		fmt.Fprintf(&w, " on %s", s.XID)
	}
	for _, part := range []struct {
		name string
		b    *plan.Batch
	}{{"check", s.Check}, {"", s.Stmts}, {"late part", s.Late}} {
		if part.b == nil {
			continue
		}
		prefix := ""
		if part.name != "" {
			prefix = part.name + ": "
		}
		for i := range part.b.Len() {
			fmt.Fprintf(&w, "\n      %s%s", prefix, part.b.Stmt(i))
		}
	}
	pr.trace = append(pr.trace, w.String())
}

// touch records the keys the changes of st touch, from the source's whole rows: every unique key
// value of every row before and after them.
func (pr *propRun) touch(st *propStmt) {
	s, t := pr.shapes[st.table], pr.tables[st.table]
	for _, c := range st.changes {
		for _, r := range []propRow{c.before, c.after} {
			if r != nil {
				pr.touched.AddRows(t, []event.Row{{After: s.image(r, nil)}})
			}
		}
	}
}

// covered checks that ws, the writeset of a batch just planned, holds every key its rows
// touched: two batches whose writesets are disjoint run in either order.
func (pr *propRun) covered(ws *plan.Writeset) error {
	defer func() { pr.touched = plan.Writeset{} }()
	if ws == nil || ws.Barrier() {
		return nil
	}
	if missing := ws.Missing(&pr.touched); len(missing) > 0 {
		return fmt.Errorf("the writeset of a batch lacks %s, which its rows touch; it holds %v", missing[0], ws)
	}
	return nil
}

// inFlight tells the planner the writesets of the jobs pending, as the executor tells it those
// of the jobs in flight (planner.InFlight); none, now and then, as when none is.
func (pr *propRun) inFlight() {
	var sets []*plan.Writeset
	for _, j := range pr.pending {
		if j.state != jobDone {
			sets = append(sets, j.ws)
		}
	}
	if pr.coin(20) {
		sets = nil
	}
	pr.p.InFlight(sets)
}

// drain runs the pending jobs in a random order their writesets allow: a job after every earlier
// one it overlaps; a split job's early part at any time, on a session of its own, and its late
// part and commit after the earlier jobs it overlaps. A job that meets a lock of an open one
// rolls back, and so does every open job after it, as the executor's lock watcher does; it runs
// again once the earlier open ones are done.
func (pr *propRun) drain(ctx context.Context) error {
	type unit struct {
		j    *propJob
		part string // whole, early, late
	}
	for guard := 0; ; guard++ {
		if guard > 10000 {
			return errors.New("parallel run makes no progress")
		}
		var ready []unit
		done := true
		for i, j := range pr.pending {
			if j.state == jobDone {
				continue
			}
			done = false
			free := !slices.ContainsFunc(j.after, func(o *propJob) bool { return o.state != jobDone })
			earlier := !slices.ContainsFunc(pr.pending[:i], func(o *propJob) bool {
				return o.state != jobDone && o.ws.OverlapsIndexed(j.ws)
			})
			switch {
			case j.state == jobOpen && earlier:
				ready = append(ready, unit{j, "late"})
			case j.state == jobWaiting && free:
				if earlier {
					ready = append(ready, unit{j, "whole"})
				}
				if j.late != nil && pr.freeSession() {
					ready = append(ready, unit{j, "early"})
				}
			}
		}
		if done {
			pr.pending = pr.pending[:0]
			return nil
		}
		if len(ready) == 0 {
			return errors.New("parallel run: no job can run")
		}
		u := ready[pr.r.IntN(len(ready))]
		err := pr.runUnit(ctx, u.j, u.part)
		var le *lockError
		if !errors.As(err, &le) {
			if err != nil {
				return fmt.Errorf("job %d (%s): %w", u.j.n, u.part, err)
			}
			continue
		}
		pr.retries++
		pr.logf("    job %d (%s) met a lock: %v", u.j.n, u.part, err)
		open := false
		for _, o := range pr.pending {
			if o.state != jobOpen || o == u.j {
				continue
			}
			open = true
			if o.n > u.j.n {
				pr.rollback(ctx, o)
				continue
			}
			u.j.after = append(u.j.after, o)
		}
		pr.rollback(ctx, u.j)
		if !open {
			return fmt.Errorf("job %d (%s) met a lock with no other transaction open: %w", u.j.n, u.part, err)
		}
	}
}

// freeSession reports whether another job may open its early part: two at most.
func (pr *propRun) freeSession() bool {
	n := 0
	for _, j := range pr.pending {
		if j.state == jobOpen {
			n++
		}
	}
	return n < 2
}

// takeSession returns an extra session no open job holds, opening one if need be.
func (pr *propRun) takeSession(ctx context.Context) (*session, error) {
	for _, s := range pr.extra {
		if !slices.ContainsFunc(pr.pending, func(j *propJob) bool { return j.state == jobOpen && j.sess == s }) {
			return s, nil
		}
	}
	s, err := pr.session(ctx)
	if err != nil {
		return nil, err
	}
	pr.extra = append(pr.extra, s)
	return s, nil
}

// runUnit runs part of job j: whole (on the main session), early (its check and statements, on
// an extra session, left open) or late (the rest and the commit, on that session).
func (pr *propRun) runUnit(ctx context.Context, j *propJob, part string) error {
	pr.logf("    run job %d (%s)", j.n, part)
	var sends []*plan.Batch
	s := pr.a.main
	switch part {
	case "whole":
		sends = []*plan.Batch{j.check, j.stmts, j.late}
	case "early":
		var err error
		if s, err = pr.takeSession(ctx); err != nil {
			return err
		}
		j.sess, j.state = s, jobOpen
		sends = []*plan.Batch{j.check, j.stmts}
	case "late":
		s = j.sess
		sends = []*plan.Batch{j.late}
	}
	if part == "whole" {
		j.sess = s
	}
	for _, b := range sends {
		if b == nil {
			continue
		}
		if err := pr.a.sendAll(ctx, s, b); err != nil {
			return err
		}
	}
	if part == "early" {
		return nil
	}
	if _, err := s.conn.ExecContext(ctx, "COMMIT"); err != nil {
		return err
	}
	pr.a.countCommitted(s)
	j.state, j.sess = jobDone, nil
	return nil
}

// rollback rolls back j's open transaction: it runs again whole, or its early part again.
func (pr *propRun) rollback(ctx context.Context, j *propJob) {
	if s := j.sess; s != nil {
		if _, err := s.conn.ExecContext(ctx, "ROLLBACK"); err != nil {
			pr.logf("    rollback of job %d: %v", j.n, err)
		}
		s.dropUnsaved()
	}
	j.state, j.sess = jobWaiting, nil
}

// readRows returns the rows of table s in schema, as propRow.String renders the model's, sorted.
func readRows(ctx context.Context, conn *sql.Conn, schema string, s *propShape) ([]string, error) {
	names := make([]string, len(s.cols))
	for i, c := range s.cols {
		names[i] = sqlq.Ident(c.name)
	}
	rows, err := conn.QueryContext(ctx, "SELECT "+strings.Join(names, ",")+" FROM "+sqlq.Ident(schema)+"."+sqlq.Ident(s.name))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(s.cols))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		r := make(propRow, len(vals))
		for i, v := range vals {
			switch {
			case !v.Valid:
			case s.cols[i].kind == propInt:
				n, err := strconv.ParseInt(v.String, 10, 64)
				if err != nil {
					return nil, err
				}
				r[i] = n
			default:
				r[i] = v.String
			}
		}
		out = append(out, r.String())
	}
	slices.Sort(out)
	return out, rows.Err()
}

// modelRows returns the rows of st as readRows renders them.
func modelRows(st *propState) []string {
	out := make([]string, len(st.rows))
	for i, r := range st.rows {
		out[i] = r.String()
	}
	slices.Sort(out)
	return out
}

// diffRows describes how got differs from want, both sorted.
func diffRows(got, want []string) string {
	var b strings.Builder
	for _, w := range want {
		if !slices.Contains(got, w) {
			fmt.Fprintf(&b, "\n    missing %s", w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			fmt.Fprintf(&b, "\n    extra   %s", g)
		}
	}
	if b.Len() == 0 {
		fmt.Fprintf(&b, "\n    got %d rows, want %d (duplicates differ)", len(got), len(want))
	}
	return b.String()
}
