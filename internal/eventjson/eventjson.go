// Package eventjson is the JSON form of event.Event values that the applier's golden tests read
// (testdata/applier/<case>/) and package binlog's capture test writes: one shape for both, so that
// the file the one writes is the file the other reads.
package eventjson

// Event is one event.Event. Its row values are JSON numbers, strings or null, turned back into
// Go values by the target column's type as the reader would have decoded them.
type Event struct {
	Type    string `json:"type"` // event.Type's String
	Pos     string `json:"pos,omitempty"`
	TS      int64  `json:"ts,omitempty"`
	GTID    string `json:"gtid,omitempty"`
	XID     string `json:"xid,omitempty"`
	Table   string `json:"table,omitempty"`
	Columns int    `json:"columns,omitempty"` // the table map's column count
	Kind    string `json:"kind,omitempty"`    // event.RowKind's String
	NoFK    bool   `json:"no_fk_checks,omitempty"`
	Rows    []Row  `json:"rows,omitempty"`
	// BeforeCols and AfterCols list the columns (0-based) a partial image carries; absent for
	// an image that carries every column.
	BeforeCols []int    `json:"before_cols,omitempty"`
	AfterCols  []int    `json:"after_cols,omitempty"`
	Schema     string   `json:"schema,omitempty"`
	Query      string   `json:"query,omitempty"`
	DBRefs     [][2]int `json:"db_refs,omitempty"`
	Size       int      `json:"size,omitempty"`
}

// Row is one row change's images.
type Row struct {
	Before []any `json:"before,omitempty"`
	After  []any `json:"after,omitempty"`
}
