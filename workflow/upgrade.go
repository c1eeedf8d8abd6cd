package workflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"

	"github.com/vplayer/vplayer/sqlq"
)

// addedColumns are columns later versions added to the sidecar's tables (table, column,
// definition), so that Init upgrades tables an older vplayer created.
var addedColumns = [][3]string{
	{"vreplication", "owner", "varbinary(255) NOT NULL DEFAULT ''"},
	{"vreplication", "epoch", "bigint unsigned NOT NULL DEFAULT 0"},
	{"vreplication", "lease_until", "bigint NOT NULL DEFAULT 0"},
	{"vreplication", "pause_pos", "varbinary(10000) DEFAULT NULL"},
	{"vreplication", "pause_until", "bigint NOT NULL DEFAULT 0"},
	{"vreplication", "ddl_pos", "varbinary(10000) DEFAULT NULL"},
	{"vreplication", "sessions", "varbinary(10000) DEFAULT NULL"},
	{"vreplication", "source_session", "varbinary(255) DEFAULT NULL"},
	{"vreplication", "throttle_until", "bigint NOT NULL DEFAULT 0"},
	{"vreplication", "throttle_reason", "varbinary(255) NOT NULL DEFAULT ''"},
	{"vreplication", "online_ddl", "mediumblob DEFAULT NULL"},
	{"copy_state", "deferred_keys", "blob DEFAULT NULL"},
}

// addMissingColumns adds addedColumns to the tables of owned (vplayer's, by table, with the
// columns they have) that lack them; it never alters a table owned does not hold.
func (s *Store) addMissingColumns(ctx context.Context, owned map[string]map[string]bool) error {
	for _, c := range addedColumns {
		if has, ok := owned[c[0]]; !ok || has[c[1]] {
			continue
		}
		_, err := s.db.ExecContext(ctx, "ALTER TABLE "+s.table(c[0])+" ADD COLUMN "+sqlq.Ident(c[1])+" "+c[2])
		var me *mysql.MySQLError
		if err != nil && !(errors.As(err, &me) && me.Number == 1060) { // 1060: another process added it since we looked
			return fmt.Errorf("add column %s to %s: %w", c[1], s.table(c[0]), err)
		}
	}
	return nil
}
