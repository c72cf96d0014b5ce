package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/switchboard/switchboard/internal/quality"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

func TestQualityCommands(t *testing.T) {
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
	p, err := db.Participants.ImpanelParticipant(ctx, persistence.Impanel{PublisherID: pub.ID, User: "u-1", CountryID: 1}, "test", func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	age := func(n int32) *int32 { return &n }
	for _, a := range []int32{30, 27} {
		if _, err := db.Quality.RecordImpanelQuality(ctx, quality.Policy{}, persistence.ImpanelQuality{
			ParticipantID: p.ID, PublisherID: pub.ID, CountryID: 1, Age: age(a)}); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) map[string]any {
		t.Helper()
		var out bytes.Buffer
		if err := dispatch(ctx, append(args, "--database-url", url, "--publisher", strconv.FormatInt(pub.ID, 10), "--user", "u-1"), &out); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		var m map[string]any
		if err := json.Unmarshal(out.Bytes(), &m); err != nil {
			t.Fatalf("%v: %s", args, out.Bytes())
		}
		return m
	}
	show := run("quality", "show")
	block, _ := show["active_block"].(map[string]any)
	if show["blocked"] != true || block["rule_class"] != "implausible_profile" || len(show["signals"].([]any)) != 1 {
		t.Fatalf("show: %v", show)
	}
	if un := run("quality", "unblock"); un["unblocked"] != true {
		t.Fatalf("unblock: %v", un)
	}
	if show = run("quality", "show"); show["blocked"] != false || len(show["blocks"].([]any)) != 1 {
		t.Fatalf("show after unblock: %v", show)
	}
	if err := dispatch(ctx, []string{"quality", "show", "--database-url", url, "--publisher", "1"}, &bytes.Buffer{}); err == nil {
		t.Fatal("show without --user succeeded")
	}
}
