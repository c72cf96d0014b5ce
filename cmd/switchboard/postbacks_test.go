package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

func TestPostbacksCommands(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	db, err := openDB(ctx, url, newLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pub, _, err := db.Accounts.CreatePublisher(ctx, persistence.NewPublisher{Name: "P", CurrencyName: "c", ExchangeRate: 1,
		RevenueShare: 0.5, RedirectURL: "https://p.test/back", Environment: persistence.EnvStaging})
	if err != nil {
		t.Fatal(err)
	}
	// Enqueued two days ago: dead after the 24 h window, retrying, delivered.
	row := func(tid, cols string) int64 {
		t.Helper()
		var id int64
		if err := db.Pool.QueryRow(ctx, `INSERT INTO postback_outbox (tid, kind, publisher_id, url, created_at,
			next_attempt_at, attempts, last_error, delivered_at, dead_at)
			VALUES ($1, 'outcome', $2, 'http://127.0.0.1:1/pb', now() - interval '2 days', now() + interval '1 day', `+cols+`) RETURNING id`,
			tid, pub.ID).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	dead1 := row("t-dead-1", `30, 'status 503', NULL, now()`)
	dead2 := row("t-dead-2", `30, 'timeout', NULL, now()`)
	retrying := row("t-retrying", `3, 'status 500', NULL, NULL`)
	row("t-delivered", `1, NULL, now(), NULL`)
	// A buyer's webhook refused at its first attempt: operators see it beside the postbacks.
	buyer, _, err := db.Accounts.CreateBuyer(ctx, "hooks@example.test", "Hooks", persistence.EnvStaging)
	if err != nil {
		t.Fatal(err)
	}
	var hook int64
	if err := db.Pool.QueryRow(ctx, `INSERT INTO postback_outbox (tid, kind, buyer_id, url, body, attempts, last_error, dead_at)
		VALUES ('evt_1', 'webhook', $1, 'http://127.0.0.1:9/hooks', '{}', 1, 'webhook host resolves to a non-public address', now())
		RETURNING id`, buyer.ID).Scan(&hook); err != nil {
		t.Fatal(err)
	}
	buyerArg := strconv.FormatInt(buyer.ID, 10)

	run := func(args ...string) map[string]any {
		t.Helper()
		var out bytes.Buffer
		if err := dispatch(ctx, append(args, "--database-url", url), &out); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		var m map[string]any
		if err := json.Unmarshal(out.Bytes(), &m); err != nil {
			t.Fatalf("%v: %s", args, out.Bytes())
		}
		return m
	}
	ids := func(m map[string]any) []int64 {
		var out []int64
		for _, p := range m["postbacks"].([]any) {
			out = append(out, int64(p.(map[string]any)["id"].(float64)))
		}
		return out
	}
	same := func(a, b []int64) bool { return mustJSONString(a) == mustJSONString(b) }
	pubArg := strconv.FormatInt(pub.ID, 10)
	for _, tc := range []struct {
		args []string
		want []int64
	}{
		{[]string{"postbacks", "list"}, []int64{hook, retrying, dead2, dead1}},
		{[]string{"postbacks", "list", "--status", "dead", "--publisher", pubArg}, []int64{dead2, dead1}},
		{[]string{"postbacks", "list", "--status", "retrying"}, []int64{retrying}},
		{[]string{"postbacks", "list", "--status", "pending,retrying"}, []int64{retrying}},
		{[]string{"postbacks", "list", "--status", "failed"}, []int64{hook, retrying, dead2, dead1}}, // another spelling of retrying,dead
		{[]string{"postbacks", "list", "--buyer", buyerArg}, []int64{hook}},
		{[]string{"postbacks", "list", "--publisher", strconv.FormatInt(pub.ID+1000, 10)}, nil},
		{[]string{"postbacks", "list", "--limit", "1", "--before-id", strconv.FormatInt(retrying, 10)}, []int64{dead2}},
	} {
		if got := ids(run(tc.args...)); !same(got, tc.want) {
			t.Errorf("%v: %v, want %v", tc.args, got, tc.want)
		}
	}

	if p := run("postbacks", "list", "--buyer", buyerArg)["postbacks"].([]any)[0].(map[string]any); p["buyer_id"] != float64(buyer.ID) ||
		p["publisher_id"] != nil || p["tid"] != "evt_1" || p["kind"] != "webhook" || p["status"] != "dead" {
		t.Errorf("the webhook row as listed: %v", p)
	}
	// Retrying a row that is not dead changes nothing; a dead one is owed again (retrying), due now.
	if r := run("postbacks", "retry", "--id", strconv.FormatInt(retrying, 10)); r["count"] != 0.0 {
		t.Fatalf("retry of a retrying row: %v", r)
	}
	if r := run("postbacks", "retry", "--id", strconv.FormatInt(dead1, 10)); r["count"] != 1.0 {
		t.Fatalf("retry: %v", r)
	}
	if got := ids(run("postbacks", "list", "--status", "dead")); !same(got, []int64{hook, dead2}) {
		t.Fatalf("dead after retry %v", got)
	}
	claimed, err := db.Outbox.ClaimPostbacks(ctx, 10, time.Minute)
	if err != nil || len(claimed) != 1 || claimed[0].ID != dead1 || claimed[0].Attempts != 31 {
		t.Fatalf("claim after retry: %+v %v", claimed, err)
	}
	if r := run("postbacks", "retry", "--all", "--buyer", buyerArg); r["count"] != 1.0 || r["retried"].([]any)[0] != float64(hook) {
		t.Fatalf("retry --buyer: %v", r)
	}
	// The retry window counts from the retry, not from the enqueue two days ago.
	dead, err := db.Outbox.MarkPostbackFailed(ctx, claimed[0], time.Second, 24*time.Hour, "status 502", false)
	if err != nil || dead {
		t.Fatalf("a retried postback failing once more: dead %v, %v", dead, err)
	}
	if r := run("postbacks", "retry", "--all", "--publisher", pubArg); r["count"] != 1.0 {
		t.Fatalf("retry --all: %v", r)
	}
	if got := ids(run("postbacks", "list", "--status", "dead")); got != nil {
		t.Fatalf("dead after retry --all %v", got)
	}

	for _, bad := range [][]string{
		{"postbacks", "retry"},
		{"postbacks", "retry", "--all", "--id", "1"},
		{"postbacks", "retry", "--id", "x"},
		{"postbacks", "list", "--status", "delivered"},
		{"postbacks", "list", "--limit", "0"},
		{"postbacks", "list", "--publisher", "1", "--buyer", "1"},
		{"postbacks", "retry", "--all", "--publisher", "1", "--buyer", "1"},
	} {
		if err := dispatch(ctx, append(bad, "--database-url", url), &bytes.Buffer{}); err == nil {
			t.Errorf("%v succeeded", bad)
		}
	}
}

func mustJSONString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
