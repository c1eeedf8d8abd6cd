package plan

import (
	"github.com/vplayer/vplayer/event"
)

// CutOverUnknown is the terminal error of an online schema-change tool's cut-over whose ALTER
// the reader does not know (event.Event.CutOver): running the RENAME would put a table the target
// does not have in the table's place, and passing over it would leave the table with its old
// definition while the source's rows take the new one.
func CutOverUnknown(e *event.Event) error {
	return &InexactError{Pos: e.Pos,
		What: "the online schema change tool's cut-over " + quoteShape(e.CutOver) + " puts a shadow table in a table's place, " +
			"and vplayer did not see every DDL run on that shadow table (it was created before the workflow's start or before its copy, " +
			"or changed by a statement other than ALTER TABLE)",
		Fix: "run the ALTER the tool ran on its shadow table on the target table yourself, then start the workflow with --on-ddl ignore until it is past the cut-over " +
			"(and with the policy it had from there on), or re-create the workflow so that it copies the table again"}
}

// quoteShape quotes a statement for an error message, cut to 200 bytes.
func quoteShape(q string) string {
	if len(q) > 200 {
		q = q[:200] + "..."
	}
	return "\"" + q + "\""
}
