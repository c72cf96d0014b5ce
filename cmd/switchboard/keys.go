package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/switchboard/switchboard/internal/entrytoken"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/supply/partners"
)

// runKeysRotate gives the service key of offer-entry, profiler and support tokens new bytes.
// Every serve process signs with the new key as soon as it hears the rotation (a NOTIFY, or
// its periodic reload) and still accepts tokens of the previous key for their lifetime plus
// partners.KeyGrace, then retires it (docs/operations.md).
func runKeysRotate(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("keys rotate")
	dbURL := databaseFlag(f)
	retireNow := f.Bool("retire-previous", false, "after a leak: also retire every previous key at once, so that tokens signed before the rotation are refused by every process (links handed out in the last 30 minutes stop working)")
	db, err := parseOpenDB(ctx, f, args, dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	at, err := db.Accounts.RotateServiceKey(ctx, persistence.EntryKeyName)
	if err != nil {
		return err
	}
	cur, _, err := db.Accounts.ServiceKeys(ctx, persistence.EntryKeyName, 0)
	if err != nil {
		return err
	}
	retire := at.Add(entrytoken.TTL*time.Second + partners.KeyGrace).UTC()
	if *retireNow {
		if _, err := db.Accounts.RetirePreviousServiceKeys(ctx, persistence.EntryKeyName); err != nil {
			return err
		}
		retire = time.Now().UTC()
	}
	return printJSON(out, map[string]any{"key": persistence.EntryKeyName,
		"key_id": fmt.Sprintf("%08x", entrytoken.KeyID(cur)), "rotated_at": at.UTC(), "previous_retired_at": retire})
}

// runKeysRetire retires every previous offer-token service key at once, without a rotation:
// after a leak of a key already rotated away, tokens signed with it are refused by every
// serve process as soon as it hears the NOTIFY (its periodic reload is the safety net).
func runKeysRetire(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("keys retire")
	dbURL := databaseFlag(f)
	db, err := parseOpenDB(ctx, f, args, dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	n, err := db.Accounts.RetirePreviousServiceKeys(ctx, persistence.EntryKeyName)
	if err != nil {
		return err
	}
	return printJSON(out, map[string]any{"key": persistence.EntryKeyName, "retired": n, "retired_at": time.Now().UTC()})
}
