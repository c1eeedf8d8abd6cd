package cli

import (
	"encoding/json"
	"io"
	"time"
)

// statusSchemaVersion is the version of status --json's schema, docs/status-json.md. Within a
// version fields are only added; a field that changes its meaning or goes away makes a new one.
const statusSchemaVersion = 1

// statusDocJSON is status --json's document. Every key is always present; null is unknown or
// not applicable, as docs/status-json.md says field by field.
type statusDocJSON struct {
	SchemaVersion int          `json:"schema_version"`
	GeneratedAt   int64        `json:"generated_at"`
	TargetTimeMS  *int64       `json:"target_time_ms"`
	Source        *sourceJSON  `json:"source"`
	Workflows     []statusJSON `json:"workflows"`
}

// sourceJSON is the --source server as read.
type sourceJSON struct {
	Address   string  `json:"address"`
	Flavor    *string `json:"flavor"`
	GTIDPos   *string `json:"gtid_pos"`
	End       *string `json:"end"`
	EndReason *string `json:"end_reason"`
	Error     *string `json:"error"`
}

// statusJSON is one workflow.
type statusJSON struct {
	ID                   int64           `json:"id"`
	Workflow             string          `json:"workflow"`
	State                string          `json:"state"`
	Healthy              bool            `json:"healthy"`
	Message              string          `json:"message"`
	Pos                  string          `json:"pos"`
	StopPos              *string         `json:"stop_pos"`
	DBName               string          `json:"db_name"`
	TimeUpdated          int64           `json:"time_updated"`
	TransactionTimestamp int64           `json:"transaction_timestamp"`
	TimeHeartbeat        int64           `json:"time_heartbeat"`
	LagSeconds           *int64          `json:"lag_seconds"`
	UpdatedAgeSeconds    *int64          `json:"updated_age_seconds"`
	HeartbeatAgeSeconds  *int64          `json:"heartbeat_age_seconds"`
	Source               json.RawMessage `json:"source"`
	Options              json.RawMessage `json:"options"`
	Backlog              backlogJSON     `json:"backlog"`
	Lease                leaseJSON       `json:"lease"`
	Throttle             throttleJSON    `json:"throttle"`
	Pause                pauseJSON       `json:"pause"`
	Copy                 copySummaryJSON `json:"copy"`
	Log                  *logJSON        `json:"log"`
}

type backlogJSON struct {
	Known              bool    `json:"known"`
	UnknownReason      *string `json:"unknown_reason"`
	SourcePos          *string `json:"source_pos"`
	SourceEnd          *string `json:"source_end"`
	CaughtUp           *bool   `json:"caught_up"`
	Transactions       *int64  `json:"transactions"`
	TransactionsReason *string `json:"transactions_reason"`
	Bytes              *int64  `json:"bytes"`
	BytesReason        *string `json:"bytes_reason"`
}

type leaseJSON struct {
	Known         bool    `json:"known"`
	UnknownReason *string `json:"unknown_reason"`
	Owner         *string `json:"owner"`
	Epoch         *uint64 `json:"epoch"`
	UntilMS       *int64  `json:"until_ms"`
	Live          *bool   `json:"live"`
	ExpiresInMS   *int64  `json:"expires_in_ms"`
}

type throttleJSON struct {
	Known         bool    `json:"known"`
	UnknownReason *string `json:"unknown_reason"`
	Active        *bool   `json:"active"`
	Forever       *bool   `json:"forever"`
	UntilMS       *int64  `json:"until_ms"`
	LeftMS        *int64  `json:"left_ms"`
	Reason        *string `json:"reason"`
}

type pauseJSON struct {
	Known         bool    `json:"known"`
	UnknownReason *string `json:"unknown_reason"`
	Active        *bool   `json:"active"`
	Request       *string `json:"request"`
	UntilMS       *int64  `json:"until_ms"`
}

type copySummaryJSON struct {
	Known         bool       `json:"known"`
	UnknownReason *string    `json:"unknown_reason"`
	Phase         *string    `json:"phase"`
	TablesTotal   int        `json:"tables_total"`
	TablesDone    int        `json:"tables_done"`
	RowsCopied    int64      `json:"rows_copied"`
	RowsTotal     int64      `json:"rows_total"`
	Percent       *float64   `json:"percent"`
	RowsPerSecond *float64   `json:"rows_per_second"`
	ETASeconds    *int64     `json:"eta_seconds"`
	KeysToBuild   int        `json:"keys_to_build"`
	StartedAt     *int64     `json:"started_at"`
	UpdatedAt     *int64     `json:"updated_at"`
	Tables        []copyJSON `json:"tables"`
}

type logJSON struct {
	Known         bool         `json:"known"`
	UnknownReason *string      `json:"unknown_reason"`
	Rows          []logRowJSON `json:"rows"`
}

type logRowJSON struct {
	ID        int64  `json:"id"`
	Type      string `json:"type"`
	State     string `json:"state"`
	Message   string `json:"message"`
	Count     int64  `json:"count"`
	CreatedAt int64  `json:"created_at"`
	UpdatedAt int64  `json:"updated_at"`
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }

// ptrIf returns a pointer to v when ok, else nil.
func ptrIf[T any](v T, ok bool) *T {
	if !ok {
		return nil
	}
	return &v
}

// nonEmpty returns a pointer to s, nil when it is empty.
func nonEmpty(s string) *string { return ptrIf(s, s != "") }

// rawJSON returns a record column holding JSON as it is, null when it is not JSON.
func rawJSON(s string) json.RawMessage {
	if !json.Valid([]byte(s)) {
		return json.RawMessage("null")
	}
	return json.RawMessage(s)
}

// unixMillis returns t in unix milliseconds, nil for the zero time.
func unixMillis(t time.Time) *int64 { return ptrIf(t.UnixMilli(), !t.IsZero()) }

// renderStatusJSON prints rep as status --json's document.
func renderStatusJSON(w io.Writer, rep *statusReport) error {
	doc := statusDocJSON{SchemaVersion: statusSchemaVersion, GeneratedAt: rep.Now.Unix(), TargetTimeMS: unixMillis(rep.TargetNow),
		Workflows: make([]statusJSON, 0, len(rep.Workflows))}
	if s := rep.Source; s != nil {
		doc.Source = &sourceJSON{Address: s.Address}
		if s.Err != nil {
			doc.Source.Error = ptr(s.Err.Error())
		} else {
			doc.Source.Flavor = ptr(s.Flavor)
			if !s.GTID.IsZero() {
				doc.Source.GTIDPos = ptr(s.GTID.String())
			}
			if end, ok := s.End(); ok {
				doc.Source.End = ptr(end.String())
			} else if s.LogsErr != nil {
				doc.Source.EndReason = ptr(s.LogsErr.Error())
			}
		}
	}
	for _, ws := range rep.Workflows {
		doc.Workflows = append(doc.Workflows, toStatusJSON(ws, rep))
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

func toStatusJSON(ws workflowStatus, rep *statusReport) statusJSON {
	r, now := ws.Rec, rep.Now
	s := statusJSON{ID: r.ID, Workflow: r.Workflow, State: r.State, Healthy: healthy(r.State), Message: r.Message, Pos: r.Pos,
		StopPos: nonEmpty(r.StopPos), DBName: r.DBName, TimeUpdated: r.TimeUpdated, TransactionTimestamp: r.TransactionTimestamp,
		TimeHeartbeat: r.TimeHeartbeat, Source: rawJSON(r.Source), Options: rawJSON(r.Options)}
	s.LagSeconds = ptrIf(lagOf(ws, now))
	s.UpdatedAgeSeconds = ptrIf(age(r.TimeUpdated, now))
	s.HeartbeatAgeSeconds = ptrIf(age(r.TimeHeartbeat, now))
	s.Backlog = toBacklogJSON(ws.Backlog)
	s.Lease, s.Throttle, s.Pause = detailsJSON(ws, rep.TargetNow)
	s.Copy = toCopySummaryJSON(ws)
	if rep.LogsAsked > 0 {
		l := &logJSON{Known: ws.LogsReason == "", UnknownReason: nonEmpty(ws.LogsReason), Rows: []logRowJSON{}}
		for _, row := range ws.Logs {
			l.Rows = append(l.Rows, logRowJSON{ID: row.ID, Type: row.Type, State: row.State, Message: row.Message, Count: row.Count,
				CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt})
		}
		s.Log = l
	}
	return s
}

func toBacklogJSON(b backlog) backlogJSON {
	out := backlogJSON{Known: b.Known, SourcePos: nonEmpty(b.SourcePos), SourceEnd: nonEmpty(b.SourceEnd), CaughtUp: b.CaughtUp,
		Transactions: b.Transactions, TransactionsReason: nonEmpty(b.TransactionsReason), Bytes: b.Bytes, BytesReason: nonEmpty(b.BytesReason)}
	if !b.Known {
		out.UnknownReason = ptr(b.Reason)
	}
	return out
}

// detailsJSON is the lease, throttle and pause of a workflow at now, the target's clock.
func detailsJSON(ws workflowStatus, now time.Time) (leaseJSON, throttleJSON, pauseJSON) {
	var l leaseJSON
	var t throttleJSON
	var p pauseJSON
	d := ws.Details
	unknown := func(has bool, what string) *string {
		switch {
		case d == nil:
			return ptr(ws.DetailsReason)
		case !has:
			return ptr("unknown: the sidecar has no " + what + " columns (an older vplayer's)")
		case now.IsZero():
			return ptr("unknown: the target's clock was not read")
		}
		return nil
	}
	if l.UnknownReason = unknown(d != nil && d.HasLease, "lease"); l.UnknownReason == nil {
		live := d.Leased(now)
		l.Known, l.Owner, l.Epoch, l.UntilMS, l.Live = true, ptr(d.Owner), ptr(d.Epoch), unixMillis(d.LeaseUntil), &live
		if live {
			l.ExpiresInMS = ptr(d.LeaseUntil.Sub(now).Milliseconds())
		}
	}
	if t.UnknownReason = unknown(d != nil && d.HasThrottle, "throttle"); t.UnknownReason == nil {
		active := d.Throttled(now)
		t.Known, t.Active, t.Forever = true, &active, ptr(d.ThrottleForever)
		if active {
			t.Reason = ptr(d.ThrottleReason)
			if !d.ThrottleForever {
				t.UntilMS, t.LeftMS = unixMillis(d.ThrottleUntil), ptr(d.ThrottleUntil.Sub(now).Milliseconds())
			}
		}
	}
	if p.UnknownReason = unknown(d != nil && d.HasPause, "pause"); p.UnknownReason == nil {
		active := d.Paused(now)
		p.Known, p.Active = true, &active
		if active {
			p.Request, p.UntilMS = ptr(d.Pause), unixMillis(d.PauseUntil)
		}
	}
	return l, t, p
}

func toCopySummaryJSON(ws workflowStatus) copySummaryJSON {
	if ws.Copy == nil {
		return copySummaryJSON{UnknownReason: ptr(ws.CopyReason), Tables: []copyJSON{}}
	}
	s := summarizeCopy(*ws.Copy)
	out := copySummaryJSON{Known: true, Phase: ptr(s.Phase), TablesTotal: s.TablesTotal, TablesDone: s.TablesDone,
		RowsCopied: s.RowsCopied, RowsTotal: s.RowsTotal, Percent: s.Percent, RowsPerSecond: s.RowsPerSecond, ETASeconds: s.ETASeconds,
		KeysToBuild: s.KeysToBuild, StartedAt: ptrIf(s.StartedAt, s.StartedAt > 0), UpdatedAt: ptrIf(s.UpdatedAt, s.UpdatedAt > 0),
		Tables: []copyJSON{}}
	for _, c := range ws.Copy.Tables {
		out.Tables = append(out.Tables, toCopyJSON(c))
	}
	return out
}

// lagOf is a workflow's lag at now in whole seconds: 0 when the source was read and the recorded
// position contains the source's (nothing is behind, as Seconds_Behind_Master reads 0 there),
// else recordLag's. ok is false when neither says.
func lagOf(ws workflowStatus, now time.Time) (int64, bool) {
	if c := ws.Backlog.CaughtUp; c != nil && *c {
		return 0, true
	}
	return recordLag(ws.Rec, now)
}
