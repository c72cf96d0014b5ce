package main

import (
	"context"
	"strings"
	"testing"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// TestTokenScopesAndOperatorRoles: `buyer token create --scope read` issues a read token
// (and rotating it keeps the scope), the default scope is write; `operator create --role
// viewer` registers a viewer, the default role is admin; other values are refused.
func TestTokenScopesAndOperatorRoles(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	const email = "scopes@example.com"
	mustCLI(t, url, "buyer", "create", "--email", email, "--environment", "staging")
	read := mustCLI(t, url, "buyer", "token", "create", "--email", email, "--environment", "staging", "--scope", "read")
	write := mustCLI(t, url, "buyer", "token", "create", "--email", email, "--environment", "staging")
	if read["scope"] != "read" || write["scope"] != "write" {
		t.Fatalf("scopes printed %v and %v, want read and write", read["scope"], write["scope"])
	}
	if _, err := cli(t, url, "buyer", "token", "create", "--email", email, "--scope", "admin"); err == nil ||
		!strings.Contains(err.Error(), "--scope") {
		t.Errorf("--scope admin: %v, want an error naming --scope", err)
	}
	rotated := mustCLI(t, url, "buyer", "rotate-token", "--email", email, "--token", read["api_token"].(string))
	db, err := openDB(ctx, url, newLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for token, want := range map[string]string{rotated["api_token"].(string): persistence.ScopeRead, write["api_token"].(string): persistence.ScopeWrite} {
		b, err := db.Accounts.AuthenticateBuyer(ctx, email, token, persistence.EnvStaging)
		if err != nil || b.Scope != want {
			t.Errorf("token %.6s…: scope %q (%v), want %s", token, b.Scope, err, want)
		}
	}

	viewer := mustCLI(t, url, "operator", "create", "--name", "Viewer Vic", "--role", "viewer")
	admin := mustCLI(t, url, "operator", "create", "--name", "Admin Ada")
	for tok, want := range map[string]string{viewer["operator_token"].(string): persistence.RoleViewer, admin["operator_token"].(string): persistence.RoleAdmin} {
		o, err := db.Operators.AuthenticateOperator(ctx, tok)
		if err != nil || o.Role != want {
			t.Errorf("operator %+v (%v), want role %s", o, err, want)
		}
	}
	if _, err := cli(t, url, "operator", "create", "--name", "X", "--role", "root"); err == nil || !strings.Contains(err.Error(), "--role") {
		t.Errorf("--role root: %v, want an error naming --role", err)
	}
}
