package persistence_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// TestEngineCampaignsCarryFieldPeriod: the engine's definition of an active campaign carries
// its days in field and the time it went into field, which the balanced allocation paces by
// (docs/allocation.md).
func TestEngineCampaignsCarryFieldPeriod(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := persistence.Open(ctx, pgtest.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	buyer, _, err := db.Accounts.CreateBuyer(ctx, "field@example.test", "Buyer", persistence.EnvStaging)
	if err != nil {
		t.Fatal(err)
	}
	id := newCampaign(t, db, buyer.ID, "field period")
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if _, err := db.Pool.Exec(ctx, `UPDATE campaigns SET status = 2, days_in_field = 12, status_changed_at = $2 WHERE id = $1`,
		id, start); err != nil {
		t.Fatal(err)
	}
	cs, err := db.Feed.EngineCampaigns(ctx, []int64{id})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 {
		t.Fatalf("got %d campaigns, want 1", len(cs))
	}
	if cs[0].DaysInField != 12 || cs[0].FieldStart != start.Unix() {
		t.Errorf("days in field %d, field start %d; want 12, %d", cs[0].DaysInField, cs[0].FieldStart, start.Unix())
	}
}

// TestEngineCampaignsInSlices: the feed read a slice of campaigns per quota query gives the
// same campaigns, quotas and conditions as in one query, whatever the slice.
func TestEngineCampaignsInSlices(t *testing.T) {
	ctx := context.Background()
	db := migratedDB(t)
	buyer := newBuyer(t, db, "slices@example.test")
	var ids []int64
	for i := range 7 {
		id := newCampaign(t, db, buyer, fmt.Sprintf("slice %d", i))
		for j := range i % 3 { // 0, 1 or 2 quotas, of 1 or 2 conditions
			num := 10 + j
			quals := []persistence.QualificationInput{{QuestionID: 43, PreCodes: []persistence.PreCode{{Text: fmt.Sprint(1 + j), Number: true}}}}
			if j == 1 {
				quals = append(quals, persistence.QualificationInput{QuestionID: 45, PreCodes: []persistence.PreCode{{Text: "02139"}, {Text: "10001"}}})
			}
			if _, err := db.Campaigns.CreateQuota(ctx, buyer, id, persistence.QuotaFields{NumRespondents: &num, Qualifications: quals}); err != nil {
				t.Fatal(err)
			}
		}
		ids = append(ids, id)
	}
	if _, err := db.Campaigns.CreateRelationship(ctx, buyer, ids[0], ids[5]); err != nil { // across slices and chunks
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE campaigns SET status = 2 WHERE id = ANY($1)`, ids); err != nil {
		t.Fatal(err)
	}
	whole, err := db.Feed.EngineCampaigns(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(whole); n != 7 || len(whole[2].Quotas) != 2 || len(whole[2].Quotas[1].Conditions) != 2 {
		t.Fatalf("feed of %d campaigns: %+v", n, whole)
	}
	if !slices.Equal(whole[0].Related, []int64{ids[5]}) || !slices.Equal(whole[5].Related, []int64{ids[0]}) {
		t.Fatalf("related: %v and %v", whole[0].Related, whole[5].Related)
	}
	// The same definitions from quota queries of a few campaigns, and from the whole market
	// read a few campaigns per transaction.
	for _, tc := range []struct {
		name string
		set  func(int) func()
		ids  []int64
		ns   []int
	}{
		{"quota slices", persistence.SetFeedSlice, ids, []int{1, 2, 3}},
		{"slabs of codes and conditions", persistence.SetFeedSlabs, ids, []int{1, 2, 3}},
		{"market chunks", persistence.SetFeedChunk, nil, []int{1, 2, 3, 8192}},
	} {
		for _, n := range tc.ns {
			restore := tc.set(n)
			got, err := db.Feed.EngineCampaigns(ctx, tc.ids)
			restore()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, whole) {
				t.Fatalf("%s of %d: %+v, want %+v", tc.name, n, got, whole)
			}
		}
	}
}
