package applier

import (
	"fmt"
	"testing"

	"github.com/vplayer/vplayer/applier/plan"
)

// TestIsTerminal_plannerErrors: every error the planner returns for a change no retry can apply
// (its package's sentinels, wrapped as the planner wraps them, and its typed errors) is terminal.
func TestIsTerminal_plannerErrors(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("%w: column c of `s`.`t`", plan.ErrUnsupportedValue),
		fmt.Errorf("%w: `s`.`t` has 2 columns", plan.ErrSchemaDrift),
		fmt.Errorf("%w: versioned by transaction ids", plan.ErrInexact),
		&plan.InexactError{Pos: "MariaDB/0-1-1", What: "a statement-logged change"},
		&plan.MismatchError{Kind: plan.UpdateMissing, Table: "`s`.`t`"},
	} {
		if !IsTerminal(err) {
			t.Errorf("IsTerminal(%v) = false, want true", err)
		}
	}
}

// TestIsTerminal_privilege: a privilege the target user lacks (the DELETE HISTORY that a
// system-versioned table's DELETE HISTORY needs) is terminal: a GRANT fixes it, a retry does not.
func TestIsTerminal_privilege(t *testing.T) {
	if err := fmt.Errorf("%w: DELETE HISTORY FROM `s`.`t`: GRANT DELETE HISTORY ON `s`.* TO 'u'@'%%'", ErrPrivilege); !IsTerminal(err) {
		t.Errorf("IsTerminal(%v) = false, want true", err)
	}
}
