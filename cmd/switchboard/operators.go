package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/switchboard/switchboard/persistence"
)

// runOperatorCreate registers an operator of the web console and prints its token, which is
// shown this once: only its hash is stored.
func runOperatorCreate(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("operator create")
	dbURL := databaseFlag(f)
	name := f.String("name", "", "the operator's name, shown in the console (required)")
	role := f.String("role", persistence.RoleAdmin, "viewer (reads the operator view) or admin (also unblocks)")
	if err := f.parse(args); err != nil {
		return err
	}
	if *name == "" {
		return errors.New("--name is required")
	}
	if !persistence.ValidRole(*role) {
		return errors.New("--role must be viewer or admin")
	}
	db, err := openDB(ctx, *dbURL, newLogger())
	if err != nil {
		return err
	}
	defer db.Close()
	o, token, err := db.Operators.CreateOperatorWithRole(ctx, *name, *role)
	if err != nil {
		return err
	}
	return printJSON(out, map[string]any{"id": o.ID, "name": o.Name, "role": o.Role, "operator_token": token,
		"sign_in": "/console/operator/sign-in"})
}

// runOperatorList prints the web console operators as JSON (id, name, created_at, live
// console sessions), never their tokens.
func runOperatorList(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("operator list")
	dbURL := databaseFlag(f)
	db, err := parseOpenDB(ctx, f, args, dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	list, err := db.Operators.ListOperators(ctx)
	if err != nil {
		return err
	}
	if list == nil {
		list = []persistence.OperatorListing{}
	}
	return printJSON(out, list)
}

// runOperatorRevoke removes an operator: its token stops signing in and its web console
// sessions end at once on every process (sessions are looked up in the database).
func runOperatorRevoke(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("operator revoke")
	dbURL := databaseFlag(f)
	id := f.Int64("id", 0, "the operator's id, as operator list shows it (required)")
	if err := f.parse(args); err != nil {
		return err
	}
	if *id <= 0 {
		return errors.New("--id is required")
	}
	db, err := openDB(ctx, *dbURL, newLogger())
	if err != nil {
		return err
	}
	defer db.Close()
	o, ended, err := db.Operators.RevokeOperator(ctx, *id)
	if err != nil {
		return fmt.Errorf("operator %d: %w", *id, err)
	}
	return printJSON(out, map[string]any{"id": o.ID, "name": o.Name, "revoked": true, "console_sessions_ended": ended})
}
