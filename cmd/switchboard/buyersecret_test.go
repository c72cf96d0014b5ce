package main

import (
	"context"
	"strings"
	"testing"

	"github.com/switchboard/switchboard/persistence/pgtest"
	"github.com/switchboard/switchboard/router"
)

// TestBuyerRotateSecret: without --yes the command refuses and names the break, leaving the
// secret as it was; with --yes it stores a new secret and prints it once, after which a
// callback signed with the old secret no longer verifies and one signed with the new does.
// An unknown buyer is an error; other buyers keep their secret.
func TestBuyerRotateSecret(t *testing.T) {
	url := pgtest.URL(t)
	created := mustCLI(t, url, "buyer", "create", "--email", "Rot@Example.com")
	other := mustCLI(t, url, "buyer", "create", "--email", "other@example.com")
	old := created["api_secret"].(string)
	db, err := openDB(context.Background(), url, newLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	secret := func(email string) string {
		var s string
		if err := db.Pool.QueryRow(context.Background(), `SELECT api_secret FROM buyers WHERE email = $1`, email).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--email", "rot@example.com"}, "--yes"},
		{[]string{"--yes"}, "--email is required"},
		{[]string{"--email", "nobody@example.com", "--yes"}, "no buyer with that email"},
	} {
		_, err := cli(t, url, append([]string{"buyer", "rotate-secret"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("rotate-secret %v: %v, want an error naming %q", tc.args, err, tc.want)
		}
	}
	if secret("rot@example.com") != old {
		t.Fatal("a refused rotate-secret changed the secret")
	}
	got := mustCLI(t, url, "buyer", "rotate-secret", "--email", "ROT@example.com", "--yes")
	fresh, _ := got["api_secret"].(string)
	if len(fresh) != len(old) || fresh == old || secret("rot@example.com") != fresh || got["customer_id"] != created["customer_id"] {
		t.Fatalf("rotate-secret printed %v; stored %q, old %q", got, secret("rot@example.com"), old)
	}
	if secret("other@example.com") != other["api_secret"].(string) {
		t.Fatal("another buyer's secret changed")
	}
	// The stored secret is what the router verifies callbacks with.
	const public = "https://sb.example"
	signed := "/callback/complete?tid=abc"
	for _, tc := range []struct {
		key  string
		want bool
	}{{fresh, true}, {old, false}} {
		uri := signed + "&tr_sech=" + router.CallbackHash(public, signed, tc.key)
		if router.VerifyCallback(public, uri, secret("rot@example.com")) != tc.want {
			t.Errorf("callback signed with the %s secret: verified %v", map[bool]string{true: "new", false: "old"}[tc.want], !tc.want)
		}
	}
}
