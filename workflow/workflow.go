// Package workflow keeps a workflow's record on the target: the _vt.vreplication row (position,
// state, message, times) and its _vt.vreplication_log history. It knows SQL, not go-mysql.
package workflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vplayer/vplayer/sqlq"
)

// Workflow states.
const (
	StateInit    = "Init"
	StateRunning = "Running"
	StateStopped = "Stopped"
	StateError   = "Error"
)

// StopRequestedMessage is the message vplayer stop records with state Stopped.
const StopRequestedMessage = "Stopped by vplayer stop"

// MaxMessageBytes bounds the stored message; longer ones are cut in the middle.
const MaxMessageBytes = 950

const truncationMark = " ... [TRUNCATED] ... "

// ErrNotFound means the workflow has no record.
var ErrNotFound = errors.New("workflow not found")

// Record is one workflow's row in vreplication.
type Record struct {
	ID       int64
	Workflow string
	// Source is JSON describing the source (address, user, flavor, database, tables); never a
	// password.
	Source  string
	Pos     string
	StopPos string
	// DBName is the target database.
	DBName  string
	State   string
	Message string
	// TimeUpdated, TransactionTimestamp and TimeHeartbeat are unix seconds.
	TimeUpdated          int64
	TransactionTimestamp int64
	TimeHeartbeat        int64
	// Options is JSON of the settings in force.
	Options string
}

// Store reads and writes records in one sidecar database of the target.
type Store struct {
	db      *sql.DB
	sidecar string
}

// New returns a store over db using the sidecar database (default "_vt").
func New(db *sql.DB, sidecar string) *Store {
	if sidecar == "" {
		sidecar = "_vt"
	}
	return &Store{db: db, sidecar: sidecar}
}

// Sidecar returns the sidecar database name.
func (s *Store) Sidecar() string { return s.sidecar }

func (s *Store) table(name string) string {
	return sqlq.Ident(s.sidecar) + "." + sqlq.Ident(name)
}

// Init creates the sidecar database and its tables if they do not exist, and adds the columns
// later versions added to tables an older vplayer created. It refuses, wrapping ErrForeignTable,
// a database holding a table of the same name that vplayer did not create (see owned.go), before
// it creates or alters anything there.
func (s *Store) Init(ctx context.Context) error {
	tables := []sidecarTable{
		{"vreplication", `CREATE TABLE IF NOT EXISTS ` + s.table("vreplication") + ` (
  id int unsigned NOT NULL AUTO_INCREMENT,
  workflow varbinary(255) NOT NULL,
  source mediumblob NOT NULL,
  pos varbinary(10000) NOT NULL DEFAULT '',
  stop_pos varbinary(10000) DEFAULT NULL,
  db_name varbinary(255) NOT NULL DEFAULT '',
  state varbinary(100) NOT NULL DEFAULT 'Init',
  message varbinary(1000) NOT NULL DEFAULT '',
  time_updated bigint NOT NULL DEFAULT 0,
  transaction_timestamp bigint NOT NULL DEFAULT 0,
  time_heartbeat bigint NOT NULL DEFAULT 0,
  options mediumblob NOT NULL,
  owner varbinary(255) NOT NULL DEFAULT '',
  epoch bigint unsigned NOT NULL DEFAULT 0,
  lease_until bigint NOT NULL DEFAULT 0,
  pause_pos varbinary(10000) DEFAULT NULL,
  pause_until bigint NOT NULL DEFAULT 0,
  ddl_pos varbinary(10000) DEFAULT NULL,
  sessions varbinary(10000) DEFAULT NULL,
  source_session varbinary(255) DEFAULT NULL,
  throttle_until bigint NOT NULL DEFAULT 0,
  throttle_reason varbinary(255) NOT NULL DEFAULT '',
  online_ddl mediumblob DEFAULT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY workflow (workflow)
) ENGINE=InnoDB`},
		{"vreplication_log", `CREATE TABLE IF NOT EXISTS ` + s.table("vreplication_log") + ` (
  id bigint NOT NULL AUTO_INCREMENT,
  vrepl_id int unsigned NOT NULL,
  type varbinary(256) NOT NULL,
  state varbinary(100) NOT NULL,
  message blob NOT NULL,
  count bigint NOT NULL DEFAULT 1,
  created_at timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,
  updated_at timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (id),
  KEY vrepl_id (vrepl_id)
) ENGINE=InnoDB`},
		{"copy_state", fmt.Sprintf(copyStateTable, s.table("copy_state"))},
	}
	if _, err := s.db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+sqlq.Ident(s.sidecar)); err != nil {
		return fmt.Errorf("create workflow tables in %s: %w", s.sidecar, err)
	}
	if _, err := s.ownedTables(ctx, tables); err != nil {
		return err
	}
	for _, t := range tables {
		if _, err := s.db.ExecContext(ctx, t.create+" COMMENT="+sqlq.String(tableMarker)); err != nil {
			return fmt.Errorf("create workflow tables in %s: %w", s.sidecar, err)
		}
	}
	// Again, now that every table exists: one of another program's made meanwhile is refused
	// as well, and the columns read are those the upgrade starts from.
	owned, err := s.ownedTables(ctx, tables)
	if err != nil {
		return err
	}
	return s.addMissingColumns(ctx, owned)
}

const recordColumns = `id, workflow, source, pos, COALESCE(stop_pos, ''), db_name, state, message,
  time_updated, transaction_timestamp, time_heartbeat, options`

func scanRecord(row interface{ Scan(...any) error }) (Record, error) {
	var r Record
	err := row.Scan(&r.ID, &r.Workflow, &r.Source, &r.Pos, &r.StopPos, &r.DBName, &r.State, &r.Message,
		&r.TimeUpdated, &r.TransactionTimestamp, &r.TimeHeartbeat, &r.Options)
	return r, err
}

// Get returns the record of workflow, or ErrNotFound.
func (s *Store) Get(ctx context.Context, workflow string) (Record, error) {
	row := s.db.QueryRowContext(ctx, "SELECT "+recordColumns+" FROM "+s.table("vreplication")+" WHERE workflow = ?", workflow)
	r, err := scanRecord(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Record{}, fmt.Errorf("%w: %s", ErrNotFound, workflow)
	}
	if err != nil {
		return Record{}, fmt.Errorf("read workflow %s: %w", workflow, err)
	}
	return r, nil
}

// List returns every record, by id.
func (s *Store) List(ctx context.Context) ([]Record, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+recordColumns+" FROM "+s.table("vreplication")+" ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("list workflows: %w", err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, fmt.Errorf("list workflows: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Create inserts r unless a record for r.Workflow exists, and returns the workflow's record as it
// stands afterwards (the existing one when there was one) and whether it was created. The new
// record's state is r.State, StateInit when empty.
func (s *Store) Create(ctx context.Context, r Record) (Record, bool, error) {
	state := r.State
	if state == "" {
		state = StateInit
	}
	var stop any
	if r.StopPos != "" {
		stop = r.StopPos
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Record{}, false, fmt.Errorf("create workflow %s: %w", r.Workflow, err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, "INSERT IGNORE INTO "+s.table("vreplication")+
		" (workflow, source, pos, stop_pos, db_name, state, message, time_updated, options) VALUES (?, ?, ?, ?, ?, ?, '', ?, ?)",
		r.Workflow, r.Source, r.Pos, stop, r.DBName, state, time.Now().Unix(), r.Options)
	if err != nil {
		return Record{}, false, fmt.Errorf("create workflow %s: %w", r.Workflow, err)
	}
	n, _ := res.RowsAffected()
	if n == 1 {
		id, err := res.LastInsertId()
		if err != nil {
			return Record{}, false, fmt.Errorf("create workflow %s: %w", r.Workflow, err)
		}
		// Copy state left by a record deleted by hand, whose id a restarted server gave again,
		// is not this workflow's.
		if _, err := tx.ExecContext(ctx, "DELETE FROM "+s.table("copy_state")+" WHERE vrepl_id = ?", id); err != nil {
			return Record{}, false, fmt.Errorf("create workflow %s: %w", r.Workflow, err)
		}
		if state == StateCopying {
			// The copy to come is marked with the record, so that it is planned whatever the
			// record's state says by then (see copyMarker).
			if _, err := tx.ExecContext(ctx, "INSERT INTO "+s.table("copy_state")+" (vrepl_id, table_name) VALUES (?, ?)", id, copyMarker); err != nil {
				return Record{}, false, fmt.Errorf("create workflow %s: mark its copy: %w", r.Workflow, err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return Record{}, false, fmt.Errorf("create workflow %s: %w", r.Workflow, err)
	}
	got, err := s.Get(ctx, r.Workflow)
	return got, n == 1, err
}

// Configure records the settings of a (re)started run: source description, options and stop
// position.
func (s *Store) Configure(ctx context.Context, id int64, source, options, stopPos string) error {
	var stop any
	if stopPos != "" {
		stop = stopPos
	}
	_, err := s.db.ExecContext(ctx, "UPDATE "+s.table("vreplication")+" SET source = ?, options = ?, stop_pos = ? WHERE id = ?", source, options, stop, id)
	if err != nil {
		return fmt.Errorf("configure workflow %d: %w", id, err)
	}
	return nil
}

// SetState sets state and message (cut to MaxMessageBytes).
func (s *Store) SetState(ctx context.Context, id int64, state, message string) error {
	_, err := s.db.ExecContext(ctx, "UPDATE "+s.table("vreplication")+" SET state = ?, message = ?, time_updated = ? WHERE id = ?",
		state, Truncate(message), time.Now().Unix(), id)
	if err != nil {
		return fmt.Errorf("set workflow %d state %s: %w", id, state, err)
	}
	return nil
}

// SetMessage sets the message (cut to MaxMessageBytes) without touching the state.
func (s *Store) SetMessage(ctx context.Context, id int64, message string) error {
	_, err := s.db.ExecContext(ctx, "UPDATE "+s.table("vreplication")+" SET message = ? WHERE id = ?", Truncate(message), id)
	if err != nil {
		return fmt.Errorf("set workflow %d message: %w", id, err)
	}
	return nil
}

// StateOf returns the workflow's state as stored now.
func (s *Store) StateOf(ctx context.Context, id int64) (string, error) {
	var state string
	err := s.db.QueryRowContext(ctx, "SELECT state FROM "+s.table("vreplication")+" WHERE id = ?", id).Scan(&state)
	if err != nil {
		return "", fmt.Errorf("read workflow %d state: %w", id, err)
	}
	return state, nil
}

// AddLog appends a history row to vreplication_log; a repeat of the workflow's last row (same
// type, state and message) increments that row's count instead.
func (s *Store) AddLog(ctx context.Context, id int64, typ, state, message string) error {
	message = Truncate(message)
	res, err := s.db.ExecContext(ctx, "UPDATE "+s.table("vreplication_log")+" l JOIN (SELECT MAX(id) AS id FROM "+s.table("vreplication_log")+
		" WHERE vrepl_id = ?) last ON l.id = last.id SET l.count = l.count + 1 WHERE l.type = ? AND l.state = ? AND l.message = ?",
		id, typ, state, message)
	if err != nil {
		return fmt.Errorf("add workflow %d log: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return nil
	}
	_, err = s.db.ExecContext(ctx, "INSERT INTO "+s.table("vreplication_log")+" (vrepl_id, type, state, message) VALUES (?, ?, ?, ?)", id, typ, state, message)
	if err != nil {
		return fmt.Errorf("add workflow %d log: %w", id, err)
	}
	return nil
}

// PositionSQL returns the statement that records pos, to run inside the applier's transaction
// just before COMMIT. now and txTime are unix seconds. It clears the message of a Running
// workflow: the stream is making progress.
func (s *Store) PositionSQL(id int64, pos string, now, txTime int64) string {
	return s.positionSQL(id, pos, now, txTime, 0)
}

// positionSQL is PositionSQL fenced by epoch when epoch is not zero: on a record whose epoch
// moved on, the statement fails (it would set the NOT NULL pos to NULL) and so aborts the batch
// it is in before that batch's COMMIT, in the same round trip.
func (s *Store) positionSQL(id int64, pos string, now, txTime int64, epoch uint64) string {
	var b strings.Builder
	b.WriteString("UPDATE ")
	b.WriteString(s.table("vreplication"))
	b.WriteString(" SET message = " + clearWhileRunning + ", ddl_pos = NULL, pos = ")
	b.WriteString(fenced(sqlq.String(pos), epoch))
	b.WriteString(", time_updated = ")
	b.WriteString(strconv.FormatInt(now, 10))
	if txTime > 0 {
		b.WriteString(", transaction_timestamp = ")
		b.WriteString(strconv.FormatInt(txTime, 10))
	}
	b.WriteString(" WHERE id = ")
	b.WriteString(strconv.FormatInt(id, 10))
	return b.String()
}

// DDLMarkSQL returns the statement that marks the DDL ending at pos as started (pos "": clears
// the mark), to run in the applier's session just before the DDL, whose implicit commit makes the
// mark durable first. The next position write clears it too. After a crash between the DDL and
// that write, the mark says the DDL may already have run (see DDLStarted). epoch, when not 0,
// fences it: on a record with another epoch it sets the NOT NULL pos to NULL and fails.
func (s *Store) DDLMarkSQL(id int64, pos string, epoch uint64) string {
	mark := "NULL"
	if pos != "" {
		mark = sqlq.String(pos)
	}
	return "UPDATE " + s.table("vreplication") + " SET pos = " + fenced("pos", epoch) + ", ddl_pos = " + mark +
		" WHERE id = " + strconv.FormatInt(id, 10)
}

// DDLStarted returns the position of the DDL marked started and not followed by a position
// write (see DDLMarkSQL), or "" when there is none.
func (s *Store) DDLStarted(ctx context.Context, id int64) (string, error) {
	var pos string
	err := s.db.QueryRowContext(ctx, "SELECT COALESCE(ddl_pos, '') FROM "+s.table("vreplication")+" WHERE id = ?", id).Scan(&pos)
	if err != nil {
		return "", fmt.Errorf("read workflow %d DDL mark: %w", id, err)
	}
	return pos, nil
}

// fenced wraps value so that it is NULL unless the record's epoch is epoch (0: no fence).
func fenced(value string, epoch uint64) string {
	if epoch == 0 {
		return value
	}
	return "IF(epoch = " + strconv.FormatUint(epoch, 10) + ", " + value + ", NULL)"
}

// Truncate cuts msg in the middle to at most MaxMessageBytes, so that its start and its tail
// survive, marking the cut.
func Truncate(msg string) string {
	if len(msg) <= MaxMessageBytes {
		return msg
	}
	keep := MaxMessageBytes - len(truncationMark)
	head := keep / 2
	tail := len(msg) - (keep - head)
	// Cut on character boundaries: a message is text, and a broken UTF-8 sequence is rejected by
	// text columns and garbles every reader.
	for head > 0 && !utf8.RuneStart(msg[head]) {
		head--
	}
	for tail < len(msg) && !utf8.RuneStart(msg[tail]) {
		tail++
	}
	return msg[:head] + truncationMark + msg[tail:]
}

// HeartbeatSQL returns the statement that records a heartbeat at now (unix seconds). It clears the
// message of a Running workflow: recording a heartbeat is progress.
func (s *Store) HeartbeatSQL(id int64, now int64) string {
	return s.heartbeatSQL(id, now, 0)
}

func (s *Store) heartbeatSQL(id int64, now int64, epoch uint64) string {
	n := strconv.FormatInt(now, 10)
	return "UPDATE " + s.table("vreplication") + " SET message = " + clearWhileRunning + ", time_heartbeat = " + fenced(n, epoch) + ", time_updated = " + n + " WHERE id = " + strconv.FormatInt(id, 10)
}

// clearWhileRunning is the message a position or heartbeat write leaves: none while the workflow
// is Running (it makes progress, so the error that message was about is over); otherwise what a
// vplayer stop or a terminal error recorded since, which an in-flight write must not erase.
const clearWhileRunning = "IF(state = '" + StateRunning + "' AND " + notHoldMessage + ", '', message)"

func (s *Store) DB() *sql.DB { return s.db }
