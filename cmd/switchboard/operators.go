package main

import (
	"context"
	"errors"
	"io"
)

// runOperatorCreate registers an operator of the web console and prints its token, which is
// shown this once: only its hash is stored.
func runOperatorCreate(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("operator create")
	dbURL := f.String("database-url", "", "PostgreSQL URL (default: the project-local cluster)")
	name := f.String("name", "", "the operator's name, shown in the console (required)")
	if err := f.parse(args); err != nil {
		return err
	}
	if *name == "" {
		return errors.New("--name is required")
	}
	db, err := openDB(ctx, *dbURL, newLogger())
	if err != nil {
		return err
	}
	defer db.Close()
	o, token, err := db.CreateOperator(ctx, *name)
	if err != nil {
		return err
	}
	return printJSON(out, map[string]any{"id": o.ID, "name": o.Name, "operator_token": token,
		"sign_in": "/console/operator/sign-in"})
}
