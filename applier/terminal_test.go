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
