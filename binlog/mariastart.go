package binlog

import (
	"fmt"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
)

// A MariaDB source starts a binlog dump at a GTID position when the connection's
// @slave_connect_state holds it, whatever file and offset COM_BINLOG_DUMP names: that is how
// go-mysql's StartSyncGTID asks for one. But a syncer started that way also keeps the GTID set it
// has streamed, for reconnects vplayer turns off: it copies the whole set at every transaction's
// GTID event. So for a MariaDB GTID position the reader sets the connection state itself, on the
// new connection before the dump (mariaConnectState, from the syncer's Option hook), and starts
// the syncer as for a file position, which keeps no GTID set. The translator tracks the
// position.

// mariaConnectState asks the MariaDB source on c to dump from the GTID position set, as
// go-mysql's GTID start does: @slave_connect_state, and strict mode, so that a position the
// source's history does not hold is an error rather than a silent skip.
func mariaConnectState(c *client.Conn, set mysql.GTIDSet) error {
	state := set.String()
	if _, err := c.Execute("SET @slave_connect_state='" + state + "'"); err != nil {
		return fmt.Errorf("set @slave_connect_state='%s': %w", state, err)
	}
	if _, err := c.Execute("SET @slave_gtid_strict_mode=1"); err != nil {
		return fmt.Errorf("set @slave_gtid_strict_mode=1: %w", err)
	}
	return nil
}

// mariaDumpStart is the file position the syncer's COM_BINLOG_DUMP carries for a MariaDB GTID
// position: the source ignores it (the connection state names the start), and go-mysql asks for
// no offset before 4.
var mariaDumpStart = mysql.Position{Name: "", Pos: 4}
