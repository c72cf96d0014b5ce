package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard/switchboard/internal/entrytoken"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// TestKeysRotateAcrossProcesses runs two serve processes on one database and rotates the
// offer-token key with `switchboard keys rotate` while they run: both pick the new key up
// without a restart (a token under it verifies on each), tokens signed before the rotation
// still verify on each, and a token under a key no process holds is refused as a forged one.
// A token that verifies reaches the publisher lookup ("unknown publisher": the test signs for
// a publisher that does not exist); one that does not is an "invalid token".
func TestKeysRotateAcrossProcesses(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	env := []string{"DATABASE_URL=" + url}
	a, b := freeAddr(t), freeAddr(t)
	startServe(t, "", env, a)
	startServe(t, "", env, b)
	db, err := persistence.Open(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sign := func(secret []byte) string {
		return entrytoken.NewKey(secret).Sign(entrytoken.Claims{Kind: entrytoken.KindOffer, PublisherID: 999999,
			ParticipantID: 1, CampaignID: 1, Expires: time.Now().Unix() + entrytoken.TTL, Nonce: entrytoken.NewNonce()})
	}
	key := func() []byte {
		k, err := db.Accounts.ServiceKey(context.Background(), persistence.EntryKeyName)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	answer := func(addr, token string) string {
		_, body := get(t, "http://"+addr+"/supply_api/v4/entry?token="+token)
		return body
	}
	reloads := func(addr string) float64 {
		_, body := get(t, "http://"+addr+"/metrics")
		for line := range strings.Lines(body) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), `switchboard_mirror_reloads_total{mirror="service keys"} `); ok {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatal(err)
				}
				return f
			}
		}
		t.Fatalf("%s/metrics has no reloads of the service keys' mirror:\n%s", addr, body)
		return 0
	}
	reloadsBefore := reloads(a)
	if !strings.Contains(func() string { _, b := get(t, "http://"+a+"/metrics"); return b }(), `switchboard_mirror_listen_connected{mirror="service keys"} 1`) {
		t.Error("the service keys' mirror is not connected")
	}
	before := sign(key())
	for _, addr := range []string{a, b} {
		if body := answer(addr, before); !strings.Contains(body, "unknown publisher") {
			t.Fatalf("before rotation: %s", body)
		}
	}
	out, stderr, err := run(t, "", env, "keys", "rotate")
	if err != nil {
		t.Fatalf("keys rotate: %v\n%s", err, stderr)
	}
	var got struct {
		KeyID   string    `json:"key_id"`
		Retired time.Time `json:"previous_retired_at"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	newKey := key()
	if got.KeyID != fmt.Sprintf("%08x", entrytoken.KeyID(newKey)) || time.Until(got.Retired) < 30*time.Minute {
		t.Fatalf("keys rotate printed %s", out)
	}
	after := sign(newKey)
	forged := sign([]byte("a key no process has ever held.."))
	for _, addr := range []string{a, b} {
		deadline := time.Now().Add(10 * time.Second) // the NOTIFY, not the 1-minute reload
		for !strings.Contains(answer(addr, after), "unknown publisher") {
			if time.Now().After(deadline) {
				t.Fatalf("%s did not pick up the rotation: %s", addr, answer(addr, after))
			}
			time.Sleep(50 * time.Millisecond)
		}
		if body := answer(addr, before); !strings.Contains(body, "unknown publisher") {
			t.Errorf("%s refuses a token of the previous key: %s", addr, body)
		}
		if body := answer(addr, forged); !strings.Contains(body, "invalid token") {
			t.Errorf("%s: token of an unknown key: %s", addr, body)
		}
	}
	if r := reloads(a); r <= reloadsBefore {
		t.Errorf("service keys reloads %v after the rotation, %v before", r, reloadsBefore)
	}
}

// TestKeysRetireAfterLeak checks the leak procedure on a running serve process: `keys
// retire` cuts a previous key's tokens promptly (the NOTIFY, not the 1-minute reload), and
// `keys rotate --retire-previous` rotates and cuts the key it replaced in one command, while
// tokens of the new key keep verifying.
func TestKeysRetireAfterLeak(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	env := []string{"DATABASE_URL=" + url}
	addr := freeAddr(t)
	startServe(t, "", env, addr)
	db, err := persistence.Open(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sign := func() string {
		k, err := db.Accounts.ServiceKey(context.Background(), persistence.EntryKeyName)
		if err != nil {
			t.Fatal(err)
		}
		return entrytoken.NewKey(k).Sign(entrytoken.Claims{Kind: entrytoken.KindOffer, PublisherID: 999999,
			ParticipantID: 1, CampaignID: 1, Expires: time.Now().Unix() + entrytoken.TTL, Nonce: entrytoken.NewNonce()})
	}
	// wait polls until the token gets the answer want ("unknown publisher": it verified;
	// "invalid token": refused), within the time a NOTIFY takes, far below the reload.
	wait := func(what, token, want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, body := get(t, "http://"+addr+"/supply_api/v4/entry?token="+token)
			if strings.Contains(body, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s, want %q", what, body, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	first := sign()
	wait("first key", first, "unknown publisher")
	if _, stderr, err := run(t, "", env, "keys", "rotate"); err != nil {
		t.Fatalf("keys rotate: %v\n%s", err, stderr)
	}
	second := sign()
	wait("second key", second, "unknown publisher")
	wait("first key after a plain rotation", first, "unknown publisher")

	out, stderr, err := run(t, "", env, "keys", "retire")
	if err != nil || !strings.Contains(out, `"retired": 1`) {
		t.Fatalf("keys retire: %v\n%s%s", err, out, stderr)
	}
	wait("first key after keys retire", first, "invalid token")
	wait("second key after keys retire", second, "unknown publisher")

	out, stderr, err = run(t, "", env, "keys", "rotate", "--retire-previous")
	if err != nil {
		t.Fatalf("keys rotate --retire-previous: %v\n%s", err, stderr)
	}
	var got struct {
		Retired time.Time `json:"previous_retired_at"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || time.Since(got.Retired) > time.Minute || time.Until(got.Retired) > 0 {
		t.Fatalf("keys rotate --retire-previous printed %s (%v)", out, err)
	}
	third := sign()
	wait("third key", third, "unknown publisher")
	wait("second key after rotate --retire-previous", second, "invalid token")
}

// TestKeysRotationNotYetHeard: a process that has not applied a rotation's notification yet
// (its LISTEN connection down, or the NOTIFY still on its way) accepts an offer link signed
// with the new key by a process that has: it looks the unknown key id up in the database
// before refusing. Process B serves the demo market; the key is rotated without a
// notification, so that B cannot hear it; process A starts after the rotation and hands out
// offers under the new key; B admits their entry links at once (302 to the survey) instead
// of answering 403 "invalid token" until its 1-minute reload. Links under key ids no process
// holds stay refused, and they cost B a bounded number of look-ups: at most one per 100 ms
// whatever their number, and none for an id just looked up in vain.
func TestKeysRotationNotYetHeard(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	env := []string{"DATABASE_URL=" + url}
	a, b := freeAddr(t), freeAddr(t)
	startServe(t, "", env, b, "--demo")
	db, err := persistence.Open(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fresh := make([]byte, 32)
	rand.Read(fresh) //nolint:errcheck
	if _, err := db.Pool.Exec(context.Background(), `WITH prev AS (
		INSERT INTO service_keys_previous (name, key) SELECT name, key FROM service_keys WHERE name = $1)
		UPDATE service_keys SET key = $2, created_at = now() WHERE name = $1`, persistence.EntryKeyName, fresh); err != nil {
		t.Fatal(err)
	}
	startServe(t, "", env, a)

	req, _ := http.NewRequest("GET", "http://"+a+"/supply_api/v4/campaigns?user_ip=73.15.20.9&device_type=1", nil)
	req.Header.Set("X-Api-Token", demoPublisherToken)
	req.Header.Set("X-User-Identifier", "demo-user-0001")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var offers struct {
		Surveys []struct {
			EntryURL string `json:"offer_entry_url"`
		} `json:"surveys"`
	}
	err = json.NewDecoder(resp.Body).Decode(&offers)
	resp.Body.Close()
	if err != nil || len(offers.Surveys) == 0 {
		t.Fatalf("offers from A: %d %v %+v", resp.StatusCode, err, offers)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	entry := strings.Replace(offers.Surveys[0].EntryURL, "http://"+a, "http://"+b, 1)
	resp, err = noFollow.Get(entry)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("B, on A's offer link under the new key: %d %s, want 302 to the survey", resp.StatusCode, body)
	}

	lookups := func() float64 {
		_, body := get(t, "http://"+b+"/metrics")
		return metricValue(t, body, "switchboard_service_key_lookups_total")
	}
	forge := func(secret []byte) string {
		return entrytoken.NewKey(secret).Sign(entrytoken.Claims{Kind: entrytoken.KindOffer, PublisherID: 1,
			ParticipantID: 1, CampaignID: 1, Expires: time.Now().Unix() + entrytoken.TTL, Nonce: entrytoken.NewNonce()})
	}
	answer := func(token string) string {
		_, body := get(t, "http://"+b+"/supply_api/v4/entry?token="+token)
		return body
	}
	before, start := lookups(), time.Now()
	var wg sync.WaitGroup
	var accepted atomic.Int64
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				key := make([]byte, 32)
				rand.Read(key) //nolint:errcheck
				if !strings.Contains(answer(forge(key)), "invalid token") {
					accepted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	n := lookups() - before
	t.Logf("200 links under random key ids in %v: %v look-ups", elapsed.Round(time.Millisecond), n)
	if accepted.Load() != 0 {
		t.Errorf("%d links under unknown keys accepted", accepted.Load())
	}
	if most := float64(elapsed/(100*time.Millisecond)) + 2; n < 1 || n > most {
		t.Errorf("%v look-ups for 200 unknown key ids in %v, want 1 to %v", n, elapsed, most)
	}
	forged := forge([]byte("a key no process has ever held.."))
	answer(forged)
	before = lookups()
	for range 20 {
		if body := answer(forged); !strings.Contains(body, "invalid token") {
			t.Fatalf("a link under an unknown key: %s", body)
		}
	}
	if n := lookups() - before; n != 0 {
		t.Errorf("%v look-ups for an unknown key id looked up just before", n)
	}
}
