package plan

import (
	"slices"
)

// Batch accumulates the SQL of one round trip: statements separated by ';', sent in one
// multi-statement exec. It also remembers the shapes of what it holds (kind and table, never
// values) so that a stall can say what the applier was doing.
type Batch struct {
	buf    []byte
	n      int      // statements
	starts []int    // offset in buf where each statement starts
	shapes []string // distinct shapes, first few
	checks []Check  // what checked statements must affect, in statement order
}

const maxShapes = 3

// Reset empties b, keeping its memory.
func (b *Batch) Reset() {
	b.buf = b.buf[:0]
	b.n = 0
	b.starts = b.starts[:0]
	b.shapes = b.shapes[:0]
	clear(b.checks)
	b.checks = b.checks[:0]
}

// End returns the offset in buf where statement i ends.
func (b *Batch) End(i int) int {
	if i+1 < b.n {
		return b.starts[i+1]
	}
	return len(b.buf)
}

// ShapeOf describes statement i for a message: the shape of the batch when it has one.
func (b *Batch) ShapeOf(i int) string {
	s := b.Shape()
	if s == "" || s == "COMMIT" {
		q := string(b.buf[b.starts[i]:b.End(i)])
		return ddlShape(q)
	}
	return s
}

// ChecksIn returns the checks of statements [first, last).
func (b *Batch) ChecksIn(first, last int) []Check {
	lo := 0
	for lo < len(b.checks) && b.checks[lo].Stmt < first {
		lo++
	}
	hi := lo
	for hi < len(b.checks) && b.checks[hi].Stmt < last {
		hi++
	}
	return b.checks[lo:hi]
}

// begin starts a statement of the given shape and returns the buffer to append it to.
func (b *Batch) begin(shape string) {
	if b.n > 0 {
		b.buf = append(b.buf, ';')
	}
	b.starts = append(b.starts, len(b.buf))
	b.n++
	if shape == "" {
		return
	}
	for _, s := range b.shapes {
		if s == shape {
			return
		}
	}
	if len(b.shapes) < maxShapes {
		b.shapes = append(b.shapes, shape)
	}
}

// Add appends a whole statement.
func (b *Batch) Add(shape, stmt string) {
	b.begin(shape)
	b.buf = append(b.buf, stmt...)
}

// Insert puts stmt, a statement without a shape (a record write), before statement i, or at the
// end when i is b.n. The checks of the statements after it move with them.
func (b *Batch) Insert(i int, stmt string) {
	if i >= b.n {
		b.Add("", stmt)
		return
	}
	at, size := b.starts[i], len(stmt)+1 // stmt and its ';'
	b.buf = append(b.buf, make([]byte, size)...)
	copy(b.buf[at+size:], b.buf[at:])
	copy(b.buf[at:], stmt)
	b.buf[at+len(stmt)] = ';'
	b.starts = append(b.starts, 0)
	copy(b.starts[i+1:], b.starts[i:])
	for j := i + 1; j < len(b.starts); j++ {
		b.starts[j] += size
	}
	b.n++
	for j := range b.checks {
		if b.checks[j].Stmt >= i {
			b.checks[j].Stmt++
		}
	}
}

// Stmt returns the text of statement i.
func (b *Batch) Stmt(i int) string {
	s := string(b.buf[b.starts[i]:b.End(i)])
	if i+1 < b.n {
		s = s[:len(s)-1] // its ';'
	}
	return s
}

// Shape describes the batch for a stall message: the data statements it holds, else COMMIT.
func (b *Batch) Shape() string {
	switch len(b.shapes) {
	case 0:
		if b.n == 0 {
			return ""
		}
		return "COMMIT"
	case 1:
		return b.shapes[0]
	}
	s := b.shapes[0]
	for _, o := range b.shapes[1:] {
		s += ", " + o
	}
	return s
}

// Size is the bytes of SQL b holds.
func (b *Batch) Size() int { return len(b.buf) }

// Truncate keeps the first n statements of b (and their checks): it takes back what a caller
// added after them.
func (b *Batch) Truncate(n int) {
	if n >= b.n {
		return
	}
	end := 0
	if n > 0 {
		end = b.starts[n] - 1 // the ';' before statement n
	}
	b.buf = b.buf[:end]
	b.starts = b.starts[:n]
	b.n = n
	k := len(b.checks)
	for k > 0 && b.checks[k-1].Stmt >= n {
		k--
	}
	clear(b.checks[k:])
	b.checks = b.checks[:k]
}

// Len returns the number of statements in b.
func (b *Batch) Len() int { return b.n }

// Start returns the offset in b's text where statement i starts.
func (b *Batch) Start(i int) int { return b.starts[i] }

// SQL returns the text of statements [first, last), separated by ';', as one multi-statement
// round trip sends it (a trailing ';' included when last < Len). It is b's: read it before b
// changes.
func (b *Batch) SQL(first, last int) []byte { return b.buf[b.starts[first]:b.End(last-1)] }

// Checks returns what b's checked statements must affect, in statement order. It is b's.
func (b *Batch) Checks() []Check { return b.checks }

// Clone returns a copy of b that shares nothing with it; nil for a nil b.
func (b *Batch) Clone() *Batch {
	if b == nil {
		return nil
	}
	return &Batch{buf: slices.Clone(b.buf), n: b.n, starts: slices.Clone(b.starts), shapes: slices.Clone(b.shapes), checks: slices.Clone(b.checks)}
}
