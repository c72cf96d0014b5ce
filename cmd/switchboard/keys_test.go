package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
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
		k, err := db.ServiceKey(context.Background(), persistence.EntryKeyName)
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
		k, err := db.ServiceKey(context.Background(), persistence.EntryKeyName)
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
