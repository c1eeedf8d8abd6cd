package workflow

import (
	"encoding/json"
	"fmt"
)

// Source is the record's source column: where the workflow replicates from, never a password.
type Source struct {
	Address  string   `json:"address"`
	User     string   `json:"user"`
	Flavor   string   `json:"flavor"`
	Database string   `json:"database"`
	Tables   []string `json:"tables"`
}

// JSON returns the column's text.
func (s Source) JSON() string { return mustJSON(s) }

// ParseSource reads a record's source column.
func ParseSource(text string) (Source, error) {
	var s Source
	if err := json.Unmarshal([]byte(text), &s); err != nil {
		return s, fmt.Errorf("the record's source is not the JSON vplayer writes: %w", err)
	}
	return s, nil
}

// Options is the record's options column: the settings in force when the workflow last started,
// durations as Go duration strings, never a DSN or password. A record written by a caller that
// records none holds {}: every field then has its zero value.
type Options struct {
	TargetDB              string   `json:"target_db,omitempty"`
	Tables                []string `json:"tables"`
	StartPos              string   `json:"start_pos"`
	StopPos               string   `json:"stop_pos"`
	ProgressDeadline      string   `json:"vplayer_progress_deadline,omitempty"`
	HeartbeatInterval     string   `json:"heartbeat_update_interval,omitempty"`
	SourceHeartbeatPeriod string   `json:"source_heartbeat_period,omitempty"`
	RelayLogMaxSize       int      `json:"relay_log_max_size,omitempty"`
	RelayLogMaxItems      int      `json:"relay_log_max_items,omitempty"`
	RetryDelay            string   `json:"retry_delay,omitempty"`
	MaxTimeToRetryOnError string   `json:"max_time_to_retry_on_error,omitempty"`
	OnDDL                 string   `json:"on_ddl,omitempty"`
	ExecMode              string   `json:"exec_mode,omitempty"`
	OnlineDDLPatterns     string   `json:"online_ddl_patterns,omitempty"` // empty: the default
	ApplyWorkers          int      `json:"apply_workers,omitempty"`
	AllowTargetTriggers   bool     `json:"allow_target_triggers"`
	ServerID              uint32   `json:"server_id,omitempty"`
	SidecarDB             string   `json:"sidecar_db,omitempty"`
	SourceTLSMode         string   `json:"source_tls_mode,omitempty"`
	TargetTLSMode         string   `json:"target_tls_mode,omitempty"`
	// Holds on purpose: --max-load, the replicas of --throttle-replicas (host:port, never a
	// DSN), --max-replica-lag and --apply-delay.
	MaxLoad          string   `json:"max_load,omitempty"`
	ThrottleReplicas []string `json:"throttle_replicas,omitempty"`
	MaxReplicaLag    string   `json:"max_replica_lag,omitempty"`
	ApplyDelay       string   `json:"apply_delay,omitempty"`
}

// JSON returns the column's text.
func (o Options) JSON() string { return mustJSON(o) }

// ParseOptions reads a record's options column; an empty one is no options.
func ParseOptions(text string) (Options, error) {
	var o Options
	if text == "" {
		return o, nil
	}
	if err := json.Unmarshal([]byte(text), &o); err != nil {
		return o, fmt.Errorf("the record's options are not the JSON vplayer writes: %w", err)
	}
	return o, nil
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only strings, numbers and bools: cannot fail
	}
	return string(b)
}
