package main

import (
	"context"
	"fmt"
	"io"
	"time"
)

// runLedgerCheck recomputes the ledger's figures from the outcomes and the postbacks
// (persistence.DB.CheckLedger, docs/payouts.md "Ledger"), of one month or of everything,
// prints what it found as JSON and fails when any figure differs.
func runLedgerCheck(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("ledger check")
	dbURL := databaseFlag(f)
	month := f.String("month", "", "only the events of this month, YYYY-MM (UTC); empty: every event")
	if err := f.parse(args); err != nil {
		return err
	}
	var m time.Time
	if *month != "" {
		var err error
		if m, err = time.Parse("2006-01", *month); err != nil {
			return fmt.Errorf("--month must be YYYY-MM, not %q", *month)
		}
	}
	db, err := openDB(ctx, *dbURL, newLogger())
	if err != nil {
		return err
	}
	defer db.Close()
	c, err := db.CheckLedger(ctx, m)
	if err != nil {
		return err
	}
	if err := printJSON(out, c); err != nil {
		return err
	}
	if n := len(c.Differences); n > 0 {
		return fmt.Errorf("ledger check: %d differences", n)
	}
	return nil
}
