package mysqld

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrUnsupported is returned (wrapped) by the replica methods on a MySQL server: they use
// MariaDB syntax (master_use_gtid, gtid_slave_pos) only.
var ErrUnsupported = errors.New("not supported for this flavor")

// GTIDPos returns the server's binlog GTID position: @@gtid_binlog_pos on MariaDB ("0-1-42"),
// @@gtid_executed on MySQL. It is empty before the first logged transaction.
func (s *Server) GTIDPos(ctx context.Context) (string, error) {
	q := "SELECT @@GLOBAL.gtid_binlog_pos"
	if s.flavor == FlavorMySQL {
		q = "SELECT @@GLOBAL.gtid_executed"
	}
	db, err := s.DB("")
	if err != nil {
		return "", err
	}
	defer db.Close()
	var pos string
	if err := db.QueryRowContext(ctx, q).Scan(&pos); err != nil {
		return "", fmt.Errorf("read gtid position of %s: %w", s.name, err)
	}
	return pos, nil
}

// ReplicateFrom configures s (MariaDB only) as a replica of src, without starting it: STOP SLAVE
// (a no-op when stopped), SET GLOBAL gtid_slave_pos = gtidPos, then CHANGE MASTER TO src's port
// as root with an empty password and master_use_gtid=slave_pos. Replication then resumes after
// gtidPos, a MariaDB GTID list ("0-1-42,1-2-7"; empty means from the start of src's binlog).
// s and src need distinct server ids.
func (s *Server) ReplicateFrom(ctx context.Context, src *Server, gtidPos string) error {
	if err := s.requireMariaDB(); err != nil {
		return err
	}
	if src.flavor != FlavorMariaDB {
		return fmt.Errorf("replicate from %s: source is %s: %w", src.name, src.flavor, ErrUnsupported)
	}
	if strings.Trim(gtidPos, "0123456789-, ") != "" {
		return fmt.Errorf("replicate from %s: gtid position %q: want a MariaDB GTID list", src.name, gtidPos)
	}
	return s.exec(ctx,
		"STOP SLAVE",
		"SET GLOBAL gtid_slave_pos = '"+gtidPos+"'",
		fmt.Sprintf("CHANGE MASTER TO master_host='127.0.0.1', master_port=%d, "+
			"master_user='root', master_password='', master_use_gtid=slave_pos", src.port),
	)
}

// StartReplica runs START SLAVE on s (MariaDB only); see ReplicateFrom. It does not wait for
// the replication threads to connect.
func (s *Server) StartReplica(ctx context.Context) error {
	if err := s.requireMariaDB(); err != nil {
		return err
	}
	return s.exec(ctx, "START SLAVE")
}

// StopReplica runs STOP SLAVE on s (MariaDB only), which waits for the replication threads to
// stop.
func (s *Server) StopReplica(ctx context.Context) error {
	if err := s.requireMariaDB(); err != nil {
		return err
	}
	return s.exec(ctx, "STOP SLAVE")
}

func (s *Server) requireMariaDB() error {
	if s.flavor != FlavorMariaDB {
		return fmt.Errorf("replica %s is %s: %w", s.name, s.flavor, ErrUnsupported)
	}
	return nil
}

// exec runs statements in order on one connection as root.
func (s *Server) exec(ctx context.Context, stmts ...string) error {
	db, err := s.DB("")
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", s.name, err)
	}
	defer conn.Close()
	for _, q := range stmts {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s on %s: %w", q, s.name, err)
		}
	}
	return nil
}
