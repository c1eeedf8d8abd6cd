package cli

import (
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/vplayer/vplayer/stream"
	"github.com/vplayer/vplayer/throttle"
)

// holdFlags are vplayer run's flags for holding back on purpose (SPEC 4.5).
type holdFlags struct {
	maxLoad    string
	replicas   []string
	maxLag     time.Duration
	applyDelay time.Duration
}

func (h *holdFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&h.maxLoad, "max-load", "", "hold back while a status variable of the target is above its maximum: NAME=VALUE[,NAME=VALUE], or a number for Threads_running (default: off)")
	fs.StringSliceVar(&h.replicas, "throttle-replicas", nil, "DSNs of the target's own replicas: hold back while one lags more than --max-replica-lag, is stopped or unreachable; VPLAYER_REPLICA_PASSWORD overrides their passwords")
	fs.DurationVar(&h.maxLag, "max-replica-lag", 10*time.Second, "with --throttle-replicas: the most a replica of the target may lag")
	fs.DurationVar(&h.applyDelay, "apply-delay", 0, "apply each source transaction no earlier than its commit time plus this delay, as SOURCE_DELAY does (default: 0, off)")
}

// thresholds parses --max-load: a bare number is Threads_running's maximum.
func (h *holdFlags) thresholds() ([]throttle.Threshold, error) {
	s := strings.TrimSpace(h.maxLoad)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		s = "Threads_running=" + strconv.FormatInt(n, 10)
	}
	th, err := throttle.ParseMaxLoad(s)
	if err != nil {
		return nil, usagef("--max-load %v", err)
	}
	return th, nil
}

// validate checks the flags without connecting: --max-load's form, the replicas' DSNs, the
// durations.
func (h *holdFlags) validate() error {
	if _, err := h.thresholds(); err != nil {
		return err
	}
	for _, dsn := range h.replicas {
		if _, err := parseDSN("throttle-replicas", dsn, "VPLAYER_REPLICA_PASSWORD"); err != nil {
			return err
		}
	}
	if len(h.replicas) > 0 && h.maxLag <= 0 {
		return usagef("--max-replica-lag is %v: it must be positive with --throttle-replicas", h.maxLag)
	}
	if h.applyDelay < 0 {
		return usagef("--apply-delay is %v: it must not be negative (0: off)", h.applyDelay)
	}
	return nil
}

// apply puts the holds into cfg, opening a pool per replica; closeAll closes them.
func (h *holdFlags) apply(cfg *stream.Config) (closeAll func(), err error) {
	var pools []*sql.DB
	closeAll = func() {
		for _, p := range pools {
			p.Close()
		}
	}
	if cfg.MaxLoad, err = h.thresholds(); err != nil {
		return closeAll, err
	}
	cfg.MaxReplicaLag, cfg.ApplyDelay = h.maxLag, h.applyDelay
	for _, dsn := range h.replicas {
		e, err := parseDSN("throttle-replicas", dsn, "VPLAYER_REPLICA_PASSWORD")
		if err != nil {
			return closeAll, err
		}
		p, err := e.pool()
		if err != nil {
			return closeAll, usagef("--throttle-replicas: %v", err)
		}
		p.SetMaxOpenConns(1)
		pools = append(pools, p)
		cfg.ThrottleReplicas = append(cfg.ThrottleReplicas, throttle.Replica{Name: fmt.Sprintf("%s:%d", e.host, e.port), DB: p})
	}
	return closeAll, nil
}

// replicaNames names the replicas of --throttle-replicas as host:port, for the record: never a DSN.
func (h *holdFlags) replicaNames() []string {
	var out []string
	for _, dsn := range h.replicas {
		if e, err := parseDSN("throttle-replicas", dsn, "VPLAYER_REPLICA_PASSWORD"); err == nil {
			out = append(out, fmt.Sprintf("%s:%d", e.host, e.port))
		}
	}
	return out
}
