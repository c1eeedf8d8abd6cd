package cli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/vplayer/vplayer/internal/tlsconfig"
	"github.com/vplayer/vplayer/workflow"
)

// Exit codes of vplayer status, beside ExitOK (every workflow shown is Running, Copying or Init),
// ExitError (the status could not be read) and ExitUsage. With several workflows the worst one
// decides: Error before Stopped.
const (
	ExitStatusError    = 3 // a workflow shown is in state Error
	ExitStatusStopped  = 4 // a workflow shown is Stopped
	ExitStatusNotFound = 5 // --workflow names a workflow without a record
)

// codedError ends a command with its own exit code, msg (when not empty) printed on stderr.
type codedError struct {
	code int
	msg  string
}

func (e *codedError) Error() string { return e.msg }

// targetStore opens the record store of the --target DSN, with the --target-tls-* flags.
func targetStore(fs *pflag.FlagSet, tf *tlsFlags, target, sidecar string) (*workflow.Store, func(), error) {
	tgt, err := parseDSN("target", target, "VPLAYER_TARGET_PASSWORD")
	if err != nil {
		return nil, nil, err
	}
	st, err := tf.settings(fs, tgt)
	if err != nil {
		return nil, nil, err
	}
	if err := tgt.configureTLS(st); err != nil {
		return nil, nil, err
	}
	pool, err := tgt.pool()
	if err != nil {
		return nil, nil, usagef("--target: %v", err)
	}
	return workflow.New(pool, sidecar), func() { pool.Close() }, nil
}

// watchInterval is how often status --watch refreshes.
const watchInterval = time.Second

// maxStatusLogs bounds --log.
const maxStatusLogs = 1000

const statusUsage = `Usage: vplayer status --target DSN [--source DSN] [--workflow W] [--log N] [--json] [--watch]

Shows each workflow of the target: its state and message, its position and, with --source, the
source's position and the backlog behind it (GTID positions: source transactions not yet
applied; file positions: binary log bytes), lag, the lease's owner, epoch and expiry, any hold
(a vplayer throttle, a vplayer diff pause; automatic holds show in the message), copy progress,
and with --log N the last N rows of the workflow's log. --json prints the same as a documented
JSON document (docs/status-json.md). With --workflow the view is one field per line.

--source is used for the workflows whose record names its host:port as their source, or for the
one --workflow names, whatever its record says. Without it the source's position and the backlog
are left out, and say so.

Exit codes: 0 every workflow shown is Running, Copying or Init (none at all included); 1 the
status could not be read, or a workflow is in a state this vplayer does not know; 2 bad usage; 3 a
workflow shown is in state Error; 4 a workflow shown is Stopped (and none in Error); 5 the
workflow --workflow names does not exist. With --watch, the last refresh's.

Flags:
`

func statusCmd(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("vplayer status", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.Usage = func() {
		fmt.Fprint(stderr, statusUsage)
		fs.PrintDefaults()
	}
	target := fs.String("target", "", "target DSN (required); VPLAYER_TARGET_PASSWORD overrides the password")
	source := fs.String("source", "", "source DSN, to show the source's position and the backlog; VPLAYER_SOURCE_PASSWORD overrides the password")
	wf := fs.String("workflow", "", "show only this workflow, one field per line")
	logs := fs.Int("log", 0, "also show the last N rows of each workflow's log (_vt.vreplication_log)")
	asJSON := fs.Bool("json", false, "print JSON (docs/status-json.md)")
	watchIt := fs.Bool("watch", false, "refresh every second until interrupted")
	sidecar := fs.String("sidecar-db", "_vt", "target database holding the vreplication record tables")
	var tf, sf tlsFlags
	tf.register(fs, "target")
	sf.register(fs, "source")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if *logs < 0 || *logs > maxStatusLogs {
		return usagef("--log is %d: want 0 to %d rows", *logs, maxStatusLogs)
	}
	for _, t := range []*tlsFlags{&tf, &sf} {
		if _, err := tlsconfig.ParseMode(t.mode); err != nil {
			return usagef("--%s-tls-mode: %v", t.side, err)
		}
	}
	store, done, err := targetStore(fs, &tf, *target, *sidecar)
	if err != nil {
		return err
	}
	defer done()
	var src *statusSource
	if *source != "" {
		if src, err = openStatusSource(fs, &sf, *source); err != nil {
			return err
		}
		defer src.close()
	}
	q := statusQuery{workflow: *wf, logs: *logs, source: src}
	var code int
	show := func(ctx context.Context, w io.Writer) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		rep, err := collectStatus(ctx, store, q)
		if err != nil {
			return err
		}
		code = rep.exitCode()
		switch {
		case *asJSON:
			return renderStatusJSON(w, rep)
		case *wf != "":
			return renderStatusDetail(w, rep)
		}
		return renderStatusTable(w, rep)
	}
	if !*watchIt {
		if err := show(context.Background(), stdout); err != nil {
			return statusError(err, *wf)
		}
		return exitWith(code)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := watch(ctx, stdout, isTerminal(stdout), watchInterval, show); err != nil {
		return statusError(err, *wf)
	}
	return exitWith(code)
}

// statusError is the error of a status that could not be shown: a workflow that does not
// exist (its record, or the sidecar's tables) has its own exit code.
func statusError(err error, name string) error {
	if name != "" && (errors.Is(err, workflow.ErrNotFound) || workflow.IsNoSidecar(err)) {
		return &codedError{code: ExitStatusNotFound, msg: fmt.Sprintf("workflow not found: %s", name)}
	}
	return err
}

// exitWith is the error that ends status with code, nil for ExitOK.
func exitWith(code int) error {
	if code == ExitOK {
		return nil
	}
	return &codedError{code: code}
}

// statusSource is the --source server of vplayer status.
type statusSource struct {
	address string // host:port
	pool    *sql.DB
}

func (s *statusSource) close() { s.pool.Close() }

func (s *statusSource) read(ctx context.Context) *sourceState {
	return readSource(ctx, s.pool, s.address)
}

// openStatusSource opens the --source DSN's pool, with the --source-tls-* flags.
func openStatusSource(fs *pflag.FlagSet, sf *tlsFlags, dsn string) (*statusSource, error) {
	src, err := parseDSN("source", dsn, "VPLAYER_SOURCE_PASSWORD")
	if err != nil {
		return nil, err
	}
	st, err := sf.settings(fs, src)
	if err != nil {
		return nil, err
	}
	if err := src.configureTLS(st); err != nil {
		return nil, err
	}
	pool, err := src.pool()
	if err != nil {
		return nil, usagef("--source: %v", err)
	}
	return &statusSource{address: fmt.Sprintf("%s:%d", src.host, src.port), pool: pool}, nil
}

// statusQuery is what a status shows: one workflow or all, the last logs rows of each, the
// source to compare positions with (nil: none).
type statusQuery struct {
	workflow string
	logs     int
	source   *statusSource
}

// statusReport is one status: every workflow shown, as read at Now.
type statusReport struct {
	// Now is vplayer status's clock; TargetNow the target's, zero when unknown.
	Now, TargetNow time.Time
	// Source is the --source server as read, nil without --source.
	Source    *sourceState
	Workflows []workflowStatus
	// LogsAsked is --log.
	LogsAsked int
}

// workflowStatus is everything status shows of one workflow.
type workflowStatus struct {
	Rec workflow.Record
	// Details are the lease, throttle and pause columns; nil when they could not be read,
	// DetailsReason saying why.
	Details       *workflow.Details
	DetailsReason string
	Backlog       backlog
	// Copy is the copy state; CopyReason says why it is unknown when it is nil.
	Copy       *workflow.CopyProgress
	CopyReason string
	// Logs are the last --log rows of its log, oldest first; LogsReason says why they are
	// unknown.
	Logs       []workflow.LogRow
	LogsReason string
}

// collectStatus reads what q asks for. Only the record itself must be readable: a column, a
// table or a source that cannot be read leaves its part unknown, with the reason.
func collectStatus(ctx context.Context, store *workflow.Store, q statusQuery) (*statusReport, error) {
	recs, err := readRecords(ctx, store, q.workflow)
	if err != nil {
		return nil, err
	}
	rep := &statusReport{Now: time.Now(), LogsAsked: q.logs}
	details, targetNow, derr := store.Details(ctx)
	if derr == nil {
		rep.TargetNow = targetNow
	}
	copies, copyKnown, cerr := store.CopyProgresses(ctx)
	if q.source != nil {
		rep.Source = q.source.read(ctx)
	}
	for _, r := range recs {
		ws := workflowStatus{Rec: r}
		switch d, ok := details[r.ID]; {
		case derr != nil:
			ws.DetailsReason = "not read: " + derr.Error()
		case !ok:
			ws.DetailsReason = "not read: the record was created after the look"
		default:
			ws.Details = &d
		}
		switch {
		case cerr != nil:
			ws.CopyReason = "not read: " + cerr.Error()
		case !copyKnown:
			ws.CopyReason = "unknown: the sidecar has no copy_state table (an older vplayer's)"
		default:
			p := copies[r.ID]
			ws.Copy = &p
		}
		ws.Backlog = backlogOf(r, rep.Source, q.workflow != "")
		if q.logs > 0 {
			logs, ok, err := store.LastLogs(ctx, r.ID, q.logs)
			switch {
			case err != nil:
				ws.LogsReason = "not read: " + err.Error()
			case !ok:
				ws.LogsReason = "unknown: the sidecar has no vreplication_log table"
			default:
				ws.Logs = logs
			}
		}
		rep.Workflows = append(rep.Workflows, ws)
	}
	return rep, nil
}

// backlogOf compares r's position with the source, when the source is r's: the one named by
// --workflow (named: the operator paired them), else one whose address the record names.
func backlogOf(r workflow.Record, src *sourceState, named bool) backlog {
	if src != nil && src.Err == nil && !named {
		if ok, recorded := sourceMatches(r, src.Address); !ok {
			return backlog{Reason: fmt.Sprintf("not read: the workflow's source is %s, --source is %s (name the workflow with --workflow to compare them anyway)", recorded, src.Address)}
		}
	}
	return computeBacklog(r.Pos, src)
}

// exitCode is the status's exit code: the worst of its workflows', Error before Stopped before a
// state this vplayer does not know (ExitError).
func (r *statusReport) exitCode() int {
	code := ExitOK
	for _, w := range r.Workflows {
		switch {
		case w.Rec.State == workflow.StateError:
			return ExitStatusError
		case w.Rec.State == workflow.StateStopped:
			code = ExitStatusStopped
		case !healthy(w.Rec.State) && code == ExitOK:
			code = ExitError
		}
	}
	return code
}

// healthy reports whether a workflow's state is one status exits 0 for.
func healthy(state string) bool {
	switch state {
	case workflow.StateRunning, workflow.StateCopying, workflow.StateInit:
		return true
	}
	return false
}

// readRecords reads one workflow's record, or all of them when name is empty.
func readRecords(ctx context.Context, store *workflow.Store, name string) ([]workflow.Record, error) {
	if name == "" {
		return store.List(ctx)
	}
	rec, err := store.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	return []workflow.Record{rec}, nil
}

func stopCmd(args []string, stdout, stderr io.Writer) error {
	c := newRecordCommand("vplayer stop", "workflow to stop", stderr)
	store, done, err := c.parse(args)
	if err != nil {
		return err
	}
	defer done()
	wf := c.workflow
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec, err := store.Get(ctx, *wf)
	if err != nil {
		return err
	}
	if err := store.SetState(ctx, rec.ID, workflow.StateStopped, workflow.StopRequestedMessage); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "workflow %s: state set to Stopped (was %s); a running vplayer stops within a second\n", *wf, rec.State)
	return nil
}
