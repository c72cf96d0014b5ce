package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/switchboard/switchboard/persistence"
)

// runSessionsPartitions creates the partitions of sessions the policy asks for above the id
// sequence (what every serve process's sweeper does every 10 minutes), then lists them with
// the time each covers: an operator's view before archiving old months (docs/operations.md,
// "A year of sessions").
func runSessionsPartitions(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("sessions partitions")
	dbURL := databaseFlag(f)
	var p persistence.PartitionPolicy
	f.DurationVar(&p.Period, "period", 30*24*time.Hour, "time one new partition should hold at the current entry rate")
	f.IntVar(&p.Ahead, "ahead", 2, "empty partitions to keep above the id sequence")
	f.Int64Var(&p.MinIDs, "min-ids", 1<<20, "fewest ids a new partition spans (2^20, a tid block: partitions of a block or more end where a block ends)")
	db, err := parseOpenDB(ctx, f, args, dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	if p.Period <= 0 || p.Ahead <= 0 || p.MinIDs <= 0 {
		return errors.New("--period, --ahead and --min-ids must be positive")
	}
	made, err := db.Maintenance.EnsureSessionPartitions(ctx, p)
	if err != nil {
		return err
	}
	for _, name := range made {
		fmt.Fprintf(out, "created %s\n", name)
	}
	list, err := db.Maintenance.SessionPartitions(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%-24s %20s %20s %12s %10s  %s\n", "partition", "ids from", "ids to", "rows (est.)", "MB", "entered")
	for _, s := range list {
		span := "empty"
		if !s.FirstEnteredAt.IsZero() {
			span = s.FirstEnteredAt.UTC().Format(time.RFC3339) + " .. " + s.LastEnteredAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(out, "%-24s %20d %20d %12d %10d  %s\n", s.Name, s.IDFrom, s.IDTo, max(s.Rows, 0), s.Bytes>>20, span)
	}
	return nil
}
