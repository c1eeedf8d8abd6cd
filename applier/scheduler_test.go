package applier

import (
	"errors"
	"fmt"
	"github.com/vplayer/vplayer/applier/plan"
	"testing"
	"time"
)

// keysWS returns a writeset of table t's primary key values.
func keysWS(t string, values ...int) *plan.Writeset {
	var w plan.Writeset
	for _, v := range values {
		w.Add("`s`.`"+t+"`", "PRIMARY", fmt.Sprint(v))
	}
	return &w
}

// commitStep returns a commit step of a batch of commits source transactions, of size bytes,
// writing ws, ending at pos.
func commitStep(ws *plan.Writeset, commits, bytes int, pos string) *plan.Step {
	var b plan.Batch
	if bytes > 0 {
		b.Add("", string(make([]byte, bytes)))
	}
	return &plan.Step{Kind: plan.StepCommit, Stmts: &b, Writeset: ws, End: plan.Saved{Pos: pos, Commits: commits}}
}

// TestScheduler_place: where each step goes, by the scheduler's state: serial apply puts every
// step on the main session; with workers a plain batch's commit goes to a worker, after the job
// it overlaps (waited for first when the batch is small), and everything else, a batch of hot
// mode and the commit of a batch sent before its commit included, runs on the main session.
func TestScheduler_place(t *testing.T) {
	for _, tc := range []struct {
		name     string
		workers  int
		inflight *plan.Writeset // a job in flight writing these keys; nil for none
		setup    func(*scheduler)
		st       *plan.Step
		want     placement
		wantDep  bool
	}{
		{"serial commit", 1, nil, nil, commitStep(keysWS("t", 1), 1, 10, "p1"), onMain, false},
		{"serial, a job somehow in flight", 0, keysWS("t", 1), nil, commitStep(keysWS("t", 1), 1, 10, "p1"), onMain, false},
		{"commit, nothing in flight", 4, nil, nil, commitStep(keysWS("t", 1), 1, 10, "p1"), onWorker, false},
		{"commit beside a job on other rows", 4, keysWS("t", 2), nil, commitStep(keysWS("t", 1), 1, 10, "p1"), onWorker, false},
		{"small commit overlapping a job", 4, keysWS("t", 1), nil, commitStep(keysWS("t", 1, 5), 1, 10, "p1"), afterDep, true},
		{"large commit overlapping a job (transactions)", 4, keysWS("t", 1), nil, commitStep(keysWS("t", 1), cutTxns, 10, "p1"), onWorker, true},
		{"large commit overlapping a job (bytes)", 4, keysWS("t", 1), nil, commitStep(keysWS("t", 1), 1, cutBytes, "p1"), onWorker, true},
		{"commit of a batch with no writeset", 4, keysWS("u", 1), nil, commitStep(nil, 1, 10, "p1"), afterDep, true},
		{"XA commit", 4, nil, nil, &plan.Step{Kind: plan.StepCommit, XID: "x1", Stmts: &plan.Batch{}}, onMain, false},
		{"send", 4, nil, nil, &plan.Step{Kind: plan.StepSend, Stmts: &plan.Batch{}}, onMain, false},
		{"DDL", 4, nil, nil, &plan.Step{Kind: plan.StepDDL, Stmts: &plan.Batch{}}, onMain, false},
		{"commit of a batch sent before its commit", 4, nil, func(s *scheduler) { s.inlineTx = true }, commitStep(keysWS("t", 1), 1, 10, "p1"), onMain, false},
		{"commit in hot mode", 4, nil, func(s *scheduler) { s.hot = 3 }, commitStep(keysWS("t", 1), 1, 10, "p1"), onMain, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScheduler(tc.workers, "p0")
			var held *job
			if tc.inflight != nil {
				held, _ = s.dispatch(commitStep(tc.inflight, 1, 10, "p0.5"), nil, "g")
			}
			if tc.setup != nil {
				tc.setup(s)
			}
			got, dep := s.place(tc.st)
			if got != tc.want || (dep != nil) != tc.wantDep || (dep != nil && dep != held) {
				t.Errorf("place = %s, dep %p; want %s, dep %v (the job in flight %p)", got, dep, tc.want, tc.wantDep, held)
			}
		})
	}
}

// TestScheduler_orderLinks: each job commits after the one dispatched before it (prev), starts
// after the latest one it overlaps (dep), and starts from where the one before it ends. Only the
// oldest job is in its turn to commit; a commit notice of any other is refused (the commit path
// checks inTurn before each COMMIT, so it would be a bug), and the oldest's takes it out of
// flight, hands its batches back for reuse, and reports where lag counts from.
func TestScheduler_orderLinks(t *testing.T) {
	s := newScheduler(3, "p0")
	s.begun(100)
	j1, _ := s.dispatch(commitStep(keysWS("t", 1, 2), 2, 10, "p1"), nil, "g1")
	s.begun(101)
	dep, _ := s.place(commitStep(keysWS("t", 9), cutTxns, 10, "p2"))
	if dep != onWorker {
		t.Fatalf("a batch on other rows: %s, want worker", dep)
	}
	j2, _ := s.dispatch(commitStep(keysWS("t", 9), 1, 10, "p2"), nil, "g2")
	s.begun(102)
	_, d := s.place(commitStep(keysWS("t", 2), cutTxns, 10, "p3"))
	j3, _ := s.dispatch(commitStep(keysWS("t", 2), cutTxns, 10, "p3"), d, "g3")
	s.begun(103) // planned, not dispatched

	if j1.prev != nil || j2.prev != j1 || j3.prev != j2 {
		t.Errorf("prev links: %p %p %p, want nil, j1 %p, j2 %p", j1.prev, j2.prev, j3.prev, j1, j2)
	}
	if j1.dep != nil || j2.dep != nil || j3.dep != j1 {
		t.Errorf("dep links: %p %p %p, want nil, nil, j1 %p (the latest job j3 overlaps)", j1.dep, j2.dep, j3.dep, j1)
	}
	if j1.from != "p0" || j2.from != "p1" || j3.from != "p2" {
		t.Errorf("jobs start from %q %q %q, want p0 p1 p2", j1.from, j2.from, j3.from)
	}
	if j1.first != 100 || j2.first != 101 || j3.first != 102 {
		t.Errorf("first transactions' times %d %d %d, want 100 101 102", j1.first, j2.first, j3.first)
	}
	if sets := s.inFlightSets(); len(sets) != 3 || sets[2] != j3.ws {
		t.Errorf("in-flight writesets %v, want the three jobs'", sets)
	}
	for _, j := range []*job{j2, j3} {
		if s.inTurn(j) {
			t.Errorf("job %s is in its turn with j1 in flight", j.end.Pos)
		}
		if err := s.committed(j, func(int64) { t.Errorf("a commit notice out of order was noted") }); !errors.Is(err, errOutOfOrder) {
			t.Errorf("commit notice of %s before j1's: %v, want %v", j.end.Pos, err, errOutOfOrder)
		}
	}
	if !s.inTurn(j1) || s.inTurn(nil) {
		t.Errorf("inTurn(j1) %v, inTurn(main) %v; want true, false", s.inTurn(j1), s.inTurn(nil))
	}
	before := s.inFlightSets()
	woken := false
	s.wake = func() { woken = true }
	for i, tc := range []struct {
		j      *job
		oldest int64
	}{{j1, 101}, {j2, 102}, {j3, 103}} {
		oldest := int64(-1)
		err := s.committed(tc.j, func(o int64) { oldest = o })
		if err != nil || oldest != tc.oldest {
			t.Fatalf("commit %d: oldest %d, %v; want %d", i+1, oldest, err, tc.oldest)
		}
		if woken != (i == 2) {
			t.Errorf("after commit %d the held batch's wake was called: %v", i+1, woken)
		}
	}
	if len(before) != 3 || before[0] != j1.ws {
		t.Error("a writeset slice handed out before the commits was written")
	}
	if !s.inTurn(nil) || s.busy() || s.inFlightSets() != nil {
		t.Errorf("all committed: inTurn(main) %v, busy %v, sets %v", s.inTurn(nil), s.busy(), s.inFlightSets())
	}
	if _, reuse := s.dispatch(commitStep(nil, 1, 10, "p4"), nil, "g4"); len(reuse) != 3 {
		t.Errorf("the next dispatch handed back %d batches of committed jobs, want 3", len(reuse))
	}
}

// TestScheduler_cut: at a transaction boundary the batch planned so far is cut for a free
// worker once it is large; one that overlaps a job in flight grows to its fetch's end and starts
// hot mode, unless few of its keys overlap and its rows all folded (it is split instead); one on
// the rows the main session ran last, with nothing in flight, is still hot.
func TestScheduler_cut(t *testing.T) {
	big := func(ws *plan.Writeset) openBatch {
		return openBatch{txOpen: true, commits: cutTxns, bytes: 100, ws: ws}
	}
	many := make([]int, 20)
	for i := range many {
		many[i] = 100 + i
	}
	for _, tc := range []struct {
		name     string
		workers  int
		inflight *plan.Writeset
		last     *plan.Writeset
		b        openBatch
		free     bool
		want     cutVerdict
	}{
		{"serial", 1, nil, nil, big(keysWS("t", 1)), true, keepPlanning},
		{"large, nothing in flight", 4, nil, nil, big(keysWS("t", 1)), true, cutNow},
		{"large by bytes", 4, nil, nil, openBatch{txOpen: true, commits: 1, bytes: cutBytes, ws: keysWS("t", 1)}, true, cutNow},
		{"small", 4, nil, nil, openBatch{txOpen: true, commits: cutTxns - 1, bytes: cutBytes - 1, ws: keysWS("t", 1)}, true, keepPlanning},
		{"no free worker", 4, nil, nil, big(keysWS("t", 1)), false, keepPlanning},
		{"inside a source transaction", 4, nil, nil, openBatch{inTxn: true, txOpen: true, commits: cutTxns, ws: keysWS("t", 1)}, true, keepPlanning},
		{"nothing planned", 4, nil, nil, openBatch{commits: cutTxns}, true, keepPlanning},
		{"overlapping a job in flight", 4, keysWS("t", 1), nil, big(keysWS("t", 1)), true, growToEnd},
		{"beside a job in flight", 4, keysWS("t", 2), nil, big(keysWS("t", 1)), true, cutNow},
		{"lightly overlapping, folded", 4, keysWS("t", 100), nil, openBatch{txOpen: true, commits: cutTxns, ws: keysWS("t", many...), splittable: true}, true, cutNow},
		{"lightly overlapping, not folded", 4, keysWS("t", 100), nil, openBatch{txOpen: true, commits: cutTxns, ws: keysWS("t", many...)}, true, growToEnd},
		{"heavily overlapping, folded", 4, keysWS("t", many[:10]...), nil, openBatch{txOpen: true, commits: cutTxns, ws: keysWS("t", many...), splittable: true}, true, growToEnd},
		{"the rows run last on the main session", 4, nil, keysWS("t", 1, 2), big(keysWS("t", 1, 2, 3)), true, growToEnd},
		{"other rows than the main session's last", 4, nil, keysWS("t", 7), big(keysWS("t", 1, 2, 3)), true, cutNow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScheduler(tc.workers, "p0")
			if tc.inflight != nil {
				s.dispatch(commitStep(tc.inflight, 1, 10, "p0.5"), nil, "g")
			}
			s.last = tc.last
			got := s.cut(tc.b, tc.free)
			if got != tc.want {
				t.Fatalf("cut = %d, want %d", got, tc.want)
			}
			if (got == growToEnd) != (s.grow && s.hot == hotFetches) {
				t.Errorf("verdict %d with grow %v, hot %d", got, s.grow, s.hot)
			}
			if got == growToEnd && s.cut(big(keysWS("u", 1)), true) != keepPlanning {
				t.Error("a batch that grew: the next boundary of its fetch cut a batch on other rows")
			}
		})
	}
}

// TestScheduler_hotModeCountsDownByFetch: hot mode lasts hotFetches fetches: every batch runs on
// the main session and the dispatcher drains before each fetch, and the one after tries cutting
// again.
func TestScheduler_hotModeCountsDownByFetch(t *testing.T) {
	s := newScheduler(4, "p0")
	s.dispatch(commitStep(keysWS("t", 1), 1, 10, "p1"), nil, "g")
	if s.cut(openBatch{txOpen: true, commits: cutTxns, ws: keysWS("t", 1)}, true) != growToEnd {
		t.Fatal("a batch overlapping the job in flight did not grow")
	}
	for i := range hotFetches - 1 {
		s.fetchStarting()
		if !s.drainsBeforeFetch() {
			t.Fatalf("fetch %d after the batch grew: no drain before it", i+1)
		}
		if p, _ := s.place(commitStep(keysWS("u", i), 1, 10, "p")); p != onMain {
			t.Fatalf("fetch %d after the batch grew: its commit placed on %s", i+1, p)
		}
	}
	s.fetchStarting()
	if s.drainsBeforeFetch() || s.hot != 0 {
		t.Fatalf("fetch %d after the batch grew is still hot (%d)", hotFetches, s.hot)
	}
}

// TestScheduler_holdOpen: the small batch a fetch ends with is held while jobs are in flight,
// for idleWait at most; never a large one, one inside a source transaction, an XA transaction's,
// the stop's, or one of serial apply.
func TestScheduler_holdOpen(t *testing.T) {
	t0 := time.Unix(1000, 0)
	small := openBatch{txOpen: true, commits: 2, bytes: 100}
	for _, tc := range []struct {
		name    string
		workers int
		busy    bool
		b       openBatch
		want    bool
	}{
		{"small, a job in flight", 4, true, small, true},
		{"small, nothing in flight", 4, false, small, false},
		{"serial", 1, true, small, false},
		{"large", 4, true, openBatch{txOpen: true, commits: cutTxns}, false},
		{"large by bytes", 4, true, openBatch{txOpen: true, commits: 1, bytes: cutBytes}, false},
		{"inside a source transaction", 4, true, openBatch{txOpen: true, inTxn: true, commits: 1}, false},
		{"an XA transaction's", 4, true, openBatch{txOpen: true, onXA: true, commits: 1}, false},
		{"stopped", 4, true, openBatch{txOpen: true, stopped: true, commits: 1}, false},
		{"nothing planned", 4, true, openBatch{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScheduler(tc.workers, "p0")
			if tc.busy {
				s.inflight = append(s.inflight, &job{})
			}
			if got := s.holdOpen(tc.b, t0, time.Second); got != tc.want || s.held != tc.want {
				t.Fatalf("holdOpen = %v (held %v), want %v", got, s.held, tc.want)
			}
			if !tc.want {
				return
			}
			if !s.holdOpen(tc.b, t0.Add(999*time.Millisecond), time.Second) {
				t.Error("released before idleWait")
			}
			if s.holdOpen(tc.b, t0.Add(time.Second), time.Second) {
				t.Error("held for idleWait and still held")
			}
			s.released()
			if s.held || s.wake != nil {
				t.Error("released, and still held")
			}
		})
	}
}
