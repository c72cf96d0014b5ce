package main

import (
	"context"
	"errors"
	"io"
)

// errSecretBreaksLinks is the refusal of `buyer rotate-secret` without --yes: the operator
// must acknowledge that the buyer's issued links and callbacks stop verifying.
var errSecretBreaksLinks = errors.New("buyer rotate-secret breaks every entry link and callback URL signed with the current secret " +
	"(within a minute on every server; there is no overlap): agree on the switch with the buyer, then run again with --yes")

// runBuyerRotateSecret gives a buyer a new API secret (the key of its signed entry links and
// callbacks) and prints it once. There is a single secret per buyer, so the old one stops
// verifying as soon as serve processes reload the buyer (the router's 1-minute cache):
// --yes is required to acknowledge that break (docs/operations.md, Key rotation).
func runBuyerRotateSecret(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("buyer rotate-secret")
	dbURL := f.String("database-url", "", "PostgreSQL URL (default: the project-local cluster)")
	email := f.String("email", "", "the buyer's e-mail address (required)")
	yes := f.Bool("yes", false, "acknowledge that every link and callback signed with the current secret stops working within a minute (required)")
	if err := f.parse(args); err != nil {
		return err
	}
	if *email == "" {
		return errors.New("--email is required")
	}
	if !*yes {
		return errSecretBreaksLinks
	}
	db, err := openDB(ctx, *dbURL, newLogger())
	if err != nil {
		return err
	}
	defer db.Close()
	b, err := db.RotateBuyerSecret(ctx, *email)
	if err != nil {
		return err
	}
	return printJSON(out, map[string]any{"customer_id": b.CustomerID, "email": b.Email, "api_secret": b.APISecret,
		"note": "links and callbacks signed with the previous secret stop verifying within a minute"})
}
