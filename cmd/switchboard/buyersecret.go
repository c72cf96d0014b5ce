package main

import (
	"context"
	"errors"
	"io"
	"time"
)

// errSecretBreaksCallbacks is the refusal of `buyer rotate-secret --grace 0` without --yes:
// the operator must acknowledge that the buyer's callbacks signed with the current secret
// stop verifying.
var errSecretBreaksCallbacks = errors.New("buyer rotate-secret --grace 0 breaks every callback signed with the current secret " +
	"(within a minute on every server, no overlap): run again with --yes, or give a --grace")

// runBuyerRotateSecret gives a buyer a new API secret (the key of its signed links and
// callbacks) and prints it once. The replaced secret still verifies the buyer's callbacks
// for --grace (default 24 h), so callbacks signed before the buyer switched keep working;
// the links the server signs use the new secret as soon as processes reload the buyer (the
// router's 1-minute cache). --grace 0 (after a leak) needs --yes (docs/operations.md).
func runBuyerRotateSecret(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("buyer rotate-secret")
	dbURL := databaseFlag(f)
	email := f.String("email", "", "the buyer's e-mail address (required)")
	grace := f.Duration("grace", 24*time.Hour, "how long the replaced secret still verifies the buyer's callbacks; 0 (after a leak) refuses them within a minute and needs --yes")
	yes := f.Bool("yes", false, "with --grace 0: acknowledge that callbacks signed with the current secret stop working within a minute")
	if err := f.parse(args); err != nil {
		return err
	}
	if *email == "" {
		return errors.New("--email is required")
	}
	if *grace < 0 {
		return errors.New("--grace must not be negative")
	}
	if *grace < time.Second && !*yes {
		return errSecretBreaksCallbacks
	}
	db, err := openDB(ctx, *dbURL, newLogger())
	if err != nil {
		return err
	}
	defer db.Close()
	b, err := db.Accounts.RotateBuyerSecret(ctx, *email, *grace)
	if err != nil {
		return err
	}
	m := map[string]any{"customer_id": b.CustomerID, "email": b.Email, "api_secret": b.APISecret, "previous_secret_until": nil}
	if !b.PreviousUntil.IsZero() {
		m["previous_secret_until"] = b.PreviousUntil.UTC()
	}
	return printJSON(out, m)
}
