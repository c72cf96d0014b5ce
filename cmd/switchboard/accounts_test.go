package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// TestPublisherCreateMoneyBounds: `publisher create` holds --exchange-rate and
// --revenue-share to the money bounds (docs/rules.md §7) with an error naming the flag, and
// takes the largest of them.
func TestPublisherCreateMoneyBounds(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	cases := []struct {
		rate, share string
		wantErr     string // "" created
	}{
		{"1000000000", "1", ""},
		{"0.0001", "0.0001", ""},
		{"1000000001", "1", "--exchange-rate must be between 0.0001 and 1000000000"},
		{"0", "0.5", "--exchange-rate must be between"},
		{"100", "1.5", "--revenue-share must be between 0.0001 and 1"},
		{"100", "0", "--revenue-share must be between"},
	}
	for _, tc := range cases {
		var out bytes.Buffer
		err := dispatch(ctx, []string{"publisher", "create", "--database-url", url, "--name", "P", "--currency-name", "gems",
			"--exchange-rate", tc.rate, "--revenue-share", tc.share, "--redirect-url", "https://p.example/back"}, &out)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("rate %s share %s: %v", tc.rate, tc.share, err)
		case tc.wantErr == "":
			var m map[string]any
			if json.Unmarshal(out.Bytes(), &m) != nil || m["publisher_id"] == nil {
				t.Errorf("rate %s share %s: printed %s", tc.rate, tc.share, out.Bytes())
			}
		case err == nil || !strings.HasPrefix(err.Error(), tc.wantErr):
			t.Errorf("rate %s share %s: error %v, want %q…", tc.rate, tc.share, err, tc.wantErr)
		}
	}
}

// cli runs `switchboard args...` in this process against url and decodes its JSON answer.
func cli(t *testing.T, url string, args ...string) (map[string]any, error) {
	t.Helper()
	var out bytes.Buffer
	err := dispatch(context.Background(), append(args, "--database-url", url), &out)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("%v printed %q: %v", args, out.Bytes(), err)
	}
	return m, nil
}

// mustCLI is cli for commands that must succeed.
func mustCLI(t *testing.T, url string, args ...string) map[string]any {
	t.Helper()
	m, err := cli(t, url, args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return m
}

// TestPublisherCommands: `publisher list` shows settings but never a token or secret;
// `publisher update` changes only the flags given, under the registration checks, with
// errors naming the flag; rotate-secret and rotate-token print the new value once and store
// the secret as it is and the token only as its hash.
func TestPublisherCommands(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	created := mustCLI(t, url, "publisher", "create", "--name", "P", "--currency-name", "gems", "--exchange-rate", "100",
		"--revenue-share", "0.5", "--redirect-url", "https://p.example/back", "--postback-url", "https://p.example/pb")
	id := fmt.Sprint(created["publisher_id"])

	list := mustCLI(t, url, "publisher", "list")
	pubs, _ := list["publishers"].([]any)
	if len(pubs) != 1 {
		t.Fatalf("publisher list: %v", list)
	}
	raw, _ := json.Marshal(list)
	for _, secret := range []string{created["api_token"].(string), created["api_secret"].(string), "api_secret", "api_token"} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("publisher list shows %q: %s", secret, raw)
		}
	}

	cases := []struct {
		args    []string
		wantErr string            // "": success
		want    map[string]string // fields after the update
	}{
		{[]string{"--name", "P2", "--postback-url", ""}, "",
			map[string]string{"name": "P2", "postback_url": "", "currency_name": "gems", "redirect_url": "https://p.example/back", "exchange_rate": "100"}},
		{[]string{"--exchange-rate", "2.5", "--revenue-share", "0.25", "--redirect-url", "https://q.example/r", "--currency-name", "coins"}, "",
			map[string]string{"name": "P2", "exchange_rate": "2.5", "revenue_share": "0.25", "redirect_url": "https://q.example/r", "currency_name": "coins"}},
		{[]string{"--exchange-rate", "0"}, "--exchange-rate must be between", nil},
		{[]string{"--redirect-url", "ftp://x"}, "--redirect-url must be an absolute http(s) URL", nil},
		{[]string{"--name", " "}, "--name is required", nil},
		{[]string{"--revenue-share", "half"}, "invalid value \"half\" for flag -revenue-share", nil},
		{nil, "nothing to change", nil},
	}
	for _, tc := range cases {
		got, err := cli(t, url, append([]string{"publisher", "update", "--id", id}, tc.args...)...)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("update %v: error %v, want %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("update %v: %v", tc.args, err)
			continue
		}
		for k, v := range tc.want {
			if fmt.Sprint(got[k]) != v {
				t.Errorf("update %v: %s = %v, want %s", tc.args, k, got[k], v)
			}
		}
	}
	if _, err := cli(t, url, "publisher", "update", "--id", "999", "--name", "x"); err == nil || !strings.Contains(err.Error(), "no publisher") {
		t.Errorf("update of an unknown publisher: %v", err)
	}

	ctx := context.Background()
	db, err := persistence.Open(ctx, url, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	secret := mustCLI(t, url, "publisher", "rotate-secret", "--id", id)["api_secret"].(string)
	token := mustCLI(t, url, "publisher", "rotate-token", "--id", id)["api_token"].(string)
	if secret == created["api_secret"] || token == created["api_token"] || len(secret) != 32 || len(token) != 48 {
		t.Fatalf("rotated secret %q token %q, created %v", secret, token, created)
	}
	stored, hashes, err := db.Accounts.PublishersWithTokenHash(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if stored[0].APISecret != secret || hashes[0] != persistence.TokenHash(token) {
		t.Errorf("stored secret %q and token hash %x after rotation, want %q and the hash of %q", stored[0].APISecret, hashes[0], secret, token)
	}
	var plain int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM publishers WHERE position($1::bytea IN token_hash) > 0`, []byte(token)).Scan(&plain); err != nil || plain != 0 {
		t.Errorf("the plain token is stored: %d %v", plain, err)
	}
	for _, which := range []string{"rotate-secret", "rotate-token"} {
		if _, err := cli(t, url, "publisher", which, "--id", "999"); err == nil {
			t.Errorf("%s of an unknown publisher succeeded", which)
		}
	}
}

// TestRotationReachesServe: against a running `switchboard serve`, a publisher's rotated
// token works at once and its old one no more; a buyer's rotated token works and the
// replaced and revoked ones get 401.
func TestRotationReachesServe(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	addr := freeAddr(t)
	// The test polls with tokens that fail until a reload: the per-address failed-auth
	// limit (tested in cmd/switchboard/app) is off here.
	startServe(t, "", nil, addr, "--database-url", url, "--auth-fail-rate", "-1")
	supply := func(token string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+addr+"/supply_api/v4/countries", nil)
		req.Header.Set("X-Api-Token", token)
		return do(t, req)
	}
	buyer := func(email, token string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+addr+"/api/v1/campaigns", nil)
		req.SetBasicAuth(email, token)
		req.Header.Set("Accept", "application/json")
		return do(t, req)
	}

	pub := mustCLI(t, url, "publisher", "create", "--name", "P", "--currency-name", "gems", "--exchange-rate", "100",
		"--revenue-share", "0.5", "--redirect-url", "https://p.example/back")
	// An unknown token makes supply reload its publishers, at most once a second.
	soon := func(token string) int {
		t.Helper()
		s := supply(token)
		for end := time.Now().Add(3 * time.Second); s != 200 && time.Now().Before(end); s = supply(token) {
			time.Sleep(100 * time.Millisecond)
		}
		return s
	}
	old := pub["api_token"].(string)
	if s := soon(old); s != 200 {
		t.Fatalf("publisher token before rotation: %d", s)
	}
	fresh := mustCLI(t, url, "publisher", "rotate-token", "--id", fmt.Sprint(pub["publisher_id"]))["api_token"].(string)
	if s := soon(fresh); s != 200 {
		t.Errorf("rotated publisher token: %d, want 200", s)
	}
	if s := supply(old); s != 401 {
		t.Errorf("replaced publisher token: %d, want 401", s)
	}

	const email = "b@example.com"
	first := mustCLI(t, url, "buyer", "create", "--email", email)["api_token"].(string)
	second := mustCLI(t, url, "buyer", "token", "--email", email, "--environment", "staging")["api_token"].(string)
	rotated := mustCLI(t, url, "buyer", "rotate-token", "--email", email, "--token", first)
	if rotated["environment"] != "staging" {
		t.Errorf("rotated buyer token's environment: %v", rotated["environment"])
	}
	if got := mustCLI(t, url, "buyer", "revoke-token", "--email", email, "--token", second); got["revoked"] != 1.0 {
		t.Errorf("revoke-token printed %v", got)
	}
	for _, c := range []struct {
		token string
		want  int
	}{{rotated["api_token"].(string), 200}, {first, 401}, {second, 401}} {
		if s := buyer(email, c.token); s != c.want {
			t.Errorf("buyer token %.6s…: %d, want %d", c.token, s, c.want)
		}
	}
	for _, args := range [][]string{
		{"buyer", "revoke-token", "--email", email, "--token", second}, // already gone
		{"buyer", "revoke-token", "--email", "other@example.com", "--token", rotated["api_token"].(string)},
		{"buyer", "rotate-token", "--email", email, "--token", first},
		{"buyer", "revoke-token", "--email", email},
		{"buyer", "revoke-token", "--email", email, "--token", "x", "--all"},
	} {
		if _, err := cli(t, url, args...); err == nil {
			t.Errorf("%v succeeded", args)
		}
	}
	if got := mustCLI(t, url, "buyer", "revoke-token", "--email", email, "--all"); got["revoked"] != 1.0 {
		t.Errorf("revoke-token --all printed %v", got)
	}
}

// do sends req and returns the status.
func do(t *testing.T, req *http.Request) int {
	t.Helper()
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, r.Body) //nolint:errcheck
	r.Body.Close()
	return r.StatusCode
}

// TestPublisherRerouteAttempts: `publisher create` and `publisher update` take
// --reroute-attempts 0 to 5 (docs/rules.md §10; default 0, off), refuse anything else with
// an error naming the flag, and `publisher list` shows it.
func TestPublisherRerouteAttempts(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	base := []string{"publisher", "create", "--name", "P", "--currency-name", "gems", "--exchange-rate", "100",
		"--revenue-share", "0.5", "--redirect-url", "https://p.example/back"}
	off := mustCLI(t, url, base...)
	on := mustCLI(t, url, append(base, "--reroute-attempts", "5")...)
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{append(base, "--reroute-attempts", "6"), "--reroute-attempts must be between 0 (off) and 5"},
		{append(base, "--reroute-attempts", "-1"), "--reroute-attempts must be between 0 (off) and 5"},
		{append(base, "--reroute-attempts", "two"), "invalid value \"two\" for flag -reroute-attempts"},
		{[]string{"publisher", "update", "--id", fmt.Sprint(off["publisher_id"]), "--reroute-attempts", "9"}, "--reroute-attempts must be between 0 (off) and 5"},
		{[]string{"publisher", "update", "--id", fmt.Sprint(off["publisher_id"]), "--reroute-attempts", "x"}, "for flag -reroute-attempts: must be a whole number"},
	} {
		if _, err := cli(t, url, tc.args...); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.wantErr)
		}
	}
	got := mustCLI(t, url, "publisher", "update", "--id", fmt.Sprint(off["publisher_id"]), "--reroute-attempts", "2")
	if fmt.Sprint(got["reroute_attempts"]) != "2" || got["name"] != "P" {
		t.Errorf("update --reroute-attempts 2: %v", got)
	}
	list := mustCLI(t, url, "publisher", "list")
	want := map[string]string{fmt.Sprint(off["publisher_id"]): "2", fmt.Sprint(on["publisher_id"]): "5"}
	pubs, _ := list["publishers"].([]any)
	if len(pubs) != 2 {
		t.Fatalf("publisher list: %v", list)
	}
	for _, p := range pubs {
		m := p.(map[string]any)
		if w := want[fmt.Sprint(m["publisher_id"])]; fmt.Sprint(m["reroute_attempts"]) != w {
			t.Errorf("publisher list: %v, want reroute_attempts %s", m, w)
		}
	}
}
