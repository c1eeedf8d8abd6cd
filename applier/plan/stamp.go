package plan

import (
	"fmt"
	"strconv"
	"time"
)

// The instants of a system-versioned table's periods (see versioned.go): the TIMESTAMP(6) values
// of its row start and row end columns, and the session timestamp a statement runs at.

// The largest TIMESTAMP, which a current row ends at: MariaDB's before 11.5, and on 64-bit
// systems from 11.5.
const (
	maxTimestamp32 = "2038-01-19 03:14:07.999999"
	maxTimestamp64 = "2106-02-07 06:28:15.999999"
)

// stampLayout is how a TIMESTAMP(6) value arrives from the reader (in UTC).
const stampLayout = "2006-01-02 15:04:05.000000"

// stamp is an instant as the session's timestamp takes it: unix seconds and microseconds.
type stamp string

// unixStamp returns the instant of a TIMESTAMP(6) value as the reader decodes it (UTC).
func unixStamp(s string) (stamp, error) {
	at, err := time.Parse(stampLayout, s)
	if err != nil {
		return "", err
	}
	return stamp(strconv.FormatInt(at.Unix(), 10) + "." + fmt.Sprintf("%06d", at.Nanosecond()/1000)), nil
}

// prefix is what makes a statement run at instant s.
func (s stamp) prefix() string { return "SET STATEMENT timestamp=" + string(s) + " FOR " }

// prefixed returns t inserting at instant s: a copy whose INSERT runs with the session's
// timestamp at s.
func (s stamp) prefixed(t *Table) *Table {
	c := *t
	c.insertHead = append([]byte(s.prefix()), t.insertHead...)
	return &c
}

// stampOf returns column i of a row image, a period column's TIMESTAMP(6) value.
func stampOf(img []any, i int) (string, error) {
	if i >= len(img) {
		return "", fmt.Errorf("the row image has %d columns, not the period's column %d", len(img), i+1)
	}
	s, ok := img[i].(string)
	if !ok || len(s) != len(stampLayout) {
		return "", fmt.Errorf("period column %d holds %T %v, not a TIMESTAMP(6)", i+1, img[i], img[i])
	}
	return s, nil
}

// isCurrent reports whether a row that ends at end is a current row.
func isCurrent(end string) bool { return end == maxTimestamp32 || end == maxTimestamp64 }
