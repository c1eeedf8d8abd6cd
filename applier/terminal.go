package applier

import (
	"errors"

	"github.com/go-sql-driver/mysql"

	"github.com/vplayer/vplayer/applier/plan"
	"github.com/vplayer/vplayer/workflow"
)

// IsTerminal reports whether err is a target error that retrying cannot fix.
func IsTerminal(err error) bool {
	if errors.Is(err, workflow.ErrFenced) {
		return false
	}
	if errors.Is(err, plan.ErrSchemaDrift) || errors.Is(err, plan.ErrUnsupportedValue) || errors.Is(err, plan.ErrRowMismatch) || errors.Is(err, ErrXA) || errors.Is(err, plan.ErrInexact) || errors.Is(err, ErrPrivilege) {
		return true
	}
	if pe := (*PacketError)(nil); errors.As(err, &pe) {
		return true
	}
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	switch me.Number {
	case 1062, // duplicate entry
		1146, // table doesn't exist
		1054, // unknown column
		1406, // data too long
		1064, // syntax error
		1136, // column count doesn't match
		1366, // incorrect value
		1292, // incorrect value of a type (a UUID, INET6, date...) the target cannot take
		1264, // out of range
		1048, // column cannot be null
		1364, // a column without a default value left out: a target column the source lacks
		1153, // packet bigger than max_allowed_packet
		1301, // result of a function larger than max_allowed_packet
		1451, // a parent row cannot be deleted or updated: a child references it
		1452: // foreign key constraint fails
		return true
	}
	return false
}
