package main

import (
	"strings"
	"testing"

	"github.com/switchboard/switchboard/persistence/pgtest"
	"github.com/switchboard/switchboard/router"
)

// TestBuyerRotateSecret rotates buyers' API secrets under a real serve process. With the
// default grace, a callback signed with the replaced secret still verifies (a correctly
// signed callback of an unknown tid is a 404 "unknown transaction"; a wrongly signed one a
// 403 "invalid tr_sech"), as does one signed with the new secret. With --grace 0 the command
// refuses without --yes and leaves the secret alone; with --yes the old secret's callbacks
// are refused. Other buyers keep their secret; an unknown buyer is an error.
func TestBuyerRotateSecret(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	addr := freeAddr(t)
	startServe(t, "", []string{"DATABASE_URL=" + url}, addr)
	public := "http://" + addr
	graced := mustCLI(t, url, "buyer", "create", "--email", "Graced@Example.com")
	leaked := mustCLI(t, url, "buyer", "create", "--email", "leaked@example.com")
	callback := func(buyer map[string]any, secret string) string {
		t.Helper()
		signed := "/router/customers/" + buyer["customer_id"].(string) + "/cps/complete?tid=no-such-session"
		_, body := get(t, public+signed+"&tr_sech="+router.CallbackHash(public, signed, secret))
		return body
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--email", "leaked@example.com", "--grace", "0"}, "--yes"},
		{[]string{"--email", "leaked@example.com", "--grace", "-1h"}, "--grace"},
		{[]string{"--grace", "1h"}, "--email is required"},
		{[]string{"--email", "nobody@example.com"}, "no buyer with that email"},
	} {
		_, err := cli(t, url, append([]string{"buyer", "rotate-secret"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("rotate-secret %v: %v, want an error naming %q", tc.args, err, tc.want)
		}
	}
	if body := callback(leaked, leaked["api_secret"].(string)); !strings.Contains(body, "unknown transaction") {
		t.Fatalf("a refused rotate-secret changed the secret: %s", body)
	}

	// The router's buyer cache holds a buyer for a minute; graced is not cached yet.
	got := mustCLI(t, url, "buyer", "rotate-secret", "--email", "GRACED@example.com")
	fresh, _ := got["api_secret"].(string)
	old := graced["api_secret"].(string)
	if len(fresh) != len(old) || fresh == old || got["customer_id"] != graced["customer_id"] || got["previous_secret_until"] == nil {
		t.Fatalf("rotate-secret printed %v", got)
	}
	for _, tc := range []struct{ what, secret, want string }{
		{"new secret", fresh, "unknown transaction"},
		{"replaced secret within the grace", old, "unknown transaction"},
		{"another secret", leaked["api_secret"].(string), "invalid tr_sech"},
	} {
		if body := callback(graced, tc.secret); !strings.Contains(body, tc.want) {
			t.Errorf("graced buyer, callback signed with the %s: %s, want %q", tc.what, body, tc.want)
		}
	}

	// After a leak: no grace (a buyer the router has not cached yet, so no minute to wait).
	cut := mustCLI(t, url, "buyer", "create", "--email", "cut@example.com")
	got = mustCLI(t, url, "buyer", "rotate-secret", "--email", "cut@example.com", "--grace", "0", "--yes")
	if got["previous_secret_until"] != nil {
		t.Fatalf("rotate-secret --grace 0 printed %v", got)
	}
	if body := callback(cut, cut["api_secret"].(string)); !strings.Contains(body, "invalid tr_sech") {
		t.Errorf("callback signed with the secret replaced without grace: %s", body)
	}
	if body := callback(cut, got["api_secret"].(string)); !strings.Contains(body, "unknown transaction") {
		t.Errorf("callback signed with the new secret: %s", body)
	}
	if body := callback(leaked, leaked["api_secret"].(string)); !strings.Contains(body, "unknown transaction") {
		t.Errorf("another buyer's secret changed: %s", body)
	}
}
