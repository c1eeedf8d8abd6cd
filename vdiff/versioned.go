package vdiff

import (
	"context"
	"fmt"

	"github.com/vplayer/vplayer/tablekey"
)

// withPeriods returns the columns of a table to compare, scols on the source and dcols on the
// target as tablekey.Columns reads them, with the period's columns of a system-versioned table
// whose period is hidden: its current rows' row start (and row end) are compared too, as any
// column. The comparison reads current rows only (a plain SELECT): the history is not compared.
func withPeriods(ctx context.Context, src, dst Querier, srcDB, dstDB, name string, scols, dcols []tablekey.Column) ([]tablekey.Column, []tablekey.Column, error) {
	sp, err := tablekey.ReadPeriod(ctx, src, srcDB, name)
	if err != nil {
		return nil, nil, fmt.Errorf("source: %w", err)
	}
	dp, err := tablekey.ReadPeriod(ctx, dst, dstDB, name)
	if err != nil {
		return nil, nil, fmt.Errorf("target: %w", err)
	}
	return sp.Columns(scols), dp.Columns(dcols), nil
}
