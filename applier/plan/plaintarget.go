package plan

// SetSourceVersioned tells the planner that the source's table of t is system-versioned. When t
// is not (a plain target table), every rows event of t is an *InexactError: the source logs its
// history rows, and the updates that end its deleted rows, as the rows of the same keys, which a
// plain table cannot tell from its current rows (written as they are, a history row overwrites
// the current row of its key and DELETE HISTORY deletes it; a deleted row stays).
func (t *Table) SetSourceVersioned() { t.sourceVersioned = true }

// Versioned reports whether t is system-versioned on the target.
func (t *Table) Versioned() bool { return t.versioned != nil }

// plainError is the terminal error of a rows event of t, a plain table whose source table is
// system-versioned.
func (p *Planner) plainError(t *Table) error {
	return &InexactError{Table: t.quoted, GTID: p.gtid,
		What: "a change of a table that is system-versioned (WITH SYSTEM VERSIONING) on the source but not on the target: the source logs its history rows and the ends of its deleted rows as rows of the same keys as its current rows, which a plain table cannot tell apart",
		Fix: "make the target table system-versioned like the source's (re-create it from SHOW CREATE TABLE on the source, or ALTER TABLE ... ADD SYSTEM VERSIONING) and re-sync it, " +
			"or leave the table out of the workflow (--tables)"}
}
