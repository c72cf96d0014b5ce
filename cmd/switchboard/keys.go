package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/switchboard/switchboard/internal/entrytoken"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/supply"
)

// runKeysRotate gives the service key of offer-entry, profiler and support tokens new bytes.
// Every serve process signs with the new key as soon as it hears the rotation (a NOTIFY, or
// its periodic reload) and still accepts tokens of the previous key for their lifetime plus
// supply.KeyGrace, then retires it (docs/operations.md).
func runKeysRotate(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("keys rotate")
	dbURL := f.String("database-url", "", "PostgreSQL URL (default: the project-local cluster)")
	if err := f.parse(args); err != nil {
		return err
	}
	db, err := openDB(ctx, *dbURL, newLogger())
	if err != nil {
		return err
	}
	defer db.Close()
	at, err := db.RotateServiceKey(ctx, persistence.EntryKeyName)
	if err != nil {
		return err
	}
	cur, _, err := db.ServiceKeys(ctx, persistence.EntryKeyName, 0)
	if err != nil {
		return err
	}
	retire := at.Add(entrytoken.TTL*time.Second + supply.KeyGrace).UTC()
	return printJSON(out, map[string]any{"key": persistence.EntryKeyName,
		"key_id": fmt.Sprintf("%08x", entrytoken.KeyID(cur)), "rotated_at": at.UTC(), "previous_retired_at": retire})
}
