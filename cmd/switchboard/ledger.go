package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/persistence"
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
		if m, err = persistence.ParseMonth(*month); err != nil {
			return fmt.Errorf("--month must be YYYY-MM, not %q", *month)
		}
	}
	db, err := openDB(ctx, *dbURL, newLogger())
	if err != nil {
		return err
	}
	defer db.Close()
	c, err := db.Ledger.CheckLedger(ctx, m)
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

// runLedgerBackfill writes the ledger of every session decided without it
// (persistence.DB.BackfillLedger, docs/payouts.md "History"), logging each batch, and
// prints what it did as JSON.
func runLedgerBackfill(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("ledger backfill")
	dbURL := databaseFlag(f)
	batch := f.Int("batch", 1000, "sessions per batch (one short transaction each)")
	if err := f.parse(args); err != nil {
		return err
	}
	if *batch < 1 || *batch > 100_000 {
		return fmt.Errorf("--batch must be from 1 to 100000, not %d", *batch)
	}
	log := newLogger()
	db, err := openDB(ctx, *dbURL, log)
	if err != nil {
		return err
	}
	defer db.Close()
	h, err := db.Ledger.BackfillLedger(ctx, *batch, func(h persistence.LedgerHistory) {
		if h.Batches%100 == 0 {
			log.Info("ledger backfill", zap.Int("batches", h.Batches), zap.Int("sessions", h.Sessions),
				zap.Int("events", h.Events), zap.Int64("next_id", h.NextID))
		}
	})
	if err != nil {
		return err
	}
	return printJSON(out, h)
}

// runStatementsClose closes a month (persistence.DB.CloseMonth, docs/operations.md
// "Closing a month") and prints it with its totals as JSON; closing it again prints the same.
func runStatementsClose(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("statements close")
	dbURL := databaseFlag(f)
	month := f.String("month", "", "the month to close, YYYY-MM (UTC); it must have ended")
	if err := f.parse(args); err != nil {
		return err
	}
	m, err := persistence.ParseMonth(*month)
	if err != nil {
		return fmt.Errorf("--month must be YYYY-MM, not %q", *month)
	}
	db, err := openDB(ctx, *dbURL, newLogger())
	if err != nil {
		return err
	}
	defer db.Close()
	c, _, err := db.Ledger.CloseMonth(ctx, m)
	if err != nil {
		return err
	}
	return printJSON(out, c)
}
