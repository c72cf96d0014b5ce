package main

import (
	"context"
	"strings"
	"testing"

	"github.com/switchboard/switchboard/persistence/pgtest"
)

// TestBuyerWebhookCommand: `buyer webhook` sets a URL under the API's checks (errors name
// --url), the outbound policy's included: a host that is or resolves only to non-public
// addresses is refused with PUT /api/v1/webhook's message unless --outbound-allow-private
// (the server's flag, whose deliveries would reach it); --clear or an empty --url removes it.
func TestBuyerWebhookCommand(t *testing.T) {
	url := pgtest.URL(t)
	const email = "hooks@example.com"
	mustCLI(t, url, "buyer", "create", "--email", email)
	db, err := openDB(context.Background(), url, newLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stored := func() string {
		t.Helper()
		var u *string
		if err := db.Pool.QueryRow(context.Background(), `SELECT webhook_url FROM buyers WHERE email = $1`, email).Scan(&u); err != nil {
			t.Fatal(err)
		}
		if u == nil {
			return ""
		}
		return *u
	}
	if got := mustCLI(t, url, "buyer", "webhook", "--email", email, "--url", "https://buyer.example/hooks"); got["webhook_url"] != "https://buyer.example/hooks" {
		t.Errorf("set printed %v", got)
	}
	if s := stored(); s != "https://buyer.example/hooks" {
		t.Errorf("stored %q", s)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--email", email, "--url", "ftp://buyer.example/h"}, "--url must be an absolute http or https URL"},
		{[]string{"--email", email, "--url", "https://u:p@buyer.example/h"}, "--url must not carry credentials"},
		{[]string{"--email", email, "--url", "https://buyer.example/h", "--clear"}, "give either --url or --clear"},
		{[]string{"--email", email, "--url", "http://127.0.0.1:8080/h"}, "--url must reach a public address"},
		{[]string{"--email", email, "--url", "https://10.1.2.3/h"}, "--url must reach a public address"},
		{[]string{"--email", email, "--url", "http://localhost/h"}, "--url must reach a public address"},
		{[]string{"--url", "https://buyer.example/h"}, "--email is required"},
		{[]string{"--email", "nobody@example.com", "--clear"}, "no buyer with that email"},
	} {
		_, err := cli(t, url, append([]string{"buyer", "webhook"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	if s := stored(); s != "https://buyer.example/hooks" {
		t.Errorf("a refused change altered the URL: %q", s)
	}
	private := "http://127.0.0.1:8080/h"
	if got := mustCLI(t, url, "buyer", "webhook", "--email", email, "--url", private, "--outbound-allow-private"); got["webhook_url"] != private {
		t.Errorf("--outbound-allow-private printed %v", got)
	}
	if s := stored(); s != private {
		t.Errorf("--outbound-allow-private stored %q", s)
	}
	for _, clear := range [][]string{{"--clear"}, {"--url", ""}} {
		mustCLI(t, url, "buyer", "webhook", "--email", email, "--url", "https://buyer.example/again")
		if got := mustCLI(t, url, append([]string{"buyer", "webhook", "--email", email}, clear...)...); got["webhook_url"] != nil {
			t.Errorf("%v printed %v", clear, got)
		}
		if s := stored(); s != "" {
			t.Errorf("%v left %q", clear, s)
		}
	}
}
