package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/vplayer/vplayer/workflow"
)

// recordTimeout bounds the round trips of a command that changes one workflow's record.
const recordTimeout = 10 * time.Second

const deleteUsage = `Usage: vplayer delete --target DSN --workflow W [--force]

Removes a workflow's record, its log rows and its copy state from the target's sidecar database,
in one transaction. The target's tables and their rows are left as they are; a vplayer run of the
same name afterwards starts a new workflow (copying first, unless --start-pos).

While a live process holds the workflow's lease (running it, or waiting with
--wait-while-stopped) delete refuses, naming the owner: stop that process first, and its standbys,
which would otherwise start the name afresh. --force deletes anyway: the owner finds its record
gone within a third of its --lease-ttl and stops as having lost the workflow; what it applies
meanwhile is not recorded anywhere.

Exit codes: 0 deleted; 1 refused (a live owner holds it), not found, or the target could not be
read; 2 bad usage.

Flags:
`

// deleteCmd removes a workflow: vplayer delete --workflow W [--force].
func deleteCmd(args []string, stdout, stderr io.Writer) error {
	c := newRecordCommand("vplayer delete", "workflow to delete", stderr)
	force := c.fs.Bool("force", false, "delete even while a live process holds the workflow's lease (that process then stops)")
	c.usage(deleteUsage, stderr)
	store, done, err := c.parse(args)
	if err != nil {
		return err
	}
	defer done()
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	d, err := store.Delete(ctx, *c.workflow, *force)
	if errors.Is(err, workflow.ErrLeaseHeld) {
		return fmt.Errorf("workflow %s is owned by a live process: %s (epoch %d, lease until %s): stop it (and its standbys) first, or pass --force",
			*c.workflow, d.Holder.Owner, d.Holder.Epoch, d.Holder.Until.UTC().Format(time.RFC3339))
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "workflow %s: deleted (id %d, state %s; %d log rows, %d copy state rows)\n", *c.workflow, d.ID, d.State, d.Logs, d.CopyTables)
	if d.Owned {
		fmt.Fprintf(stdout, "workflow %s: its owner %s finds its record gone within a third of its lease ttl and stops\n", *c.workflow, d.Holder.Owner)
	}
	return nil
}

// usage makes --help print text, then the flags.
func (c *recordCommand) usage(text string, stderr io.Writer) {
	c.fs.SortFlags = false
	c.fs.Usage = func() {
		fmt.Fprint(stderr, text)
		c.fs.PrintDefaults()
	}
}
