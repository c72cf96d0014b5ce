package main

import (
	"context"
	"fmt"
	"io"
	"time"
)

// runMigrateStatus prints every migration, applied or pending, one line each, and a last
// line comparing the database's schema with this binary's. It changes nothing.
func runMigrateStatus(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("migrate status")
	dbURL := databaseFlag(f)
	if err := f.parse(args); err != nil {
		return err
	}
	db, err := connectDB(ctx, *dbURL, newLogger())
	if err != nil {
		return err
	}
	defer db.Close()
	states, err := db.MigrationStatus(ctx)
	if err != nil {
		return err
	}
	var dbTop, binTop, pending int
	for _, s := range states {
		status := "pending"
		if s.Applied() {
			status = "applied " + s.AppliedAt.UTC().Format(time.RFC3339)
			dbTop = max(dbTop, s.Version)
		} else {
			pending++
		}
		if s.Embedded {
			binTop = max(binTop, s.Version)
		} else {
			status += " (not in this binary)"
		}
		if _, err := fmt.Fprintf(out, "%-40s %s\n", s.Name, status); err != nil {
			return err
		}
	}
	switch {
	case dbTop > binTop:
		_, err = fmt.Fprintf(out, "schema %04d is newer than this binary's %04d: serve and migrate refuse to run\n", dbTop, binTop)
	case pending > 0:
		_, err = fmt.Fprintf(out, "schema %04d, binary %04d: %d pending (applied by migrate or serve)\n", dbTop, binTop, pending)
	default:
		_, err = fmt.Fprintf(out, "schema %04d, binary %04d: up to date\n", dbTop, binTop)
	}
	return err
}
