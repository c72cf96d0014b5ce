package persistence_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// The engine's safety rebuild is skipped while the campaign epoch stands still, so every
// campaign notification must advance it, and nothing else needs to.
func TestCampaignEpochAdvancesWithNotifications(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := persistence.Open(ctx, pgtest.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	epoch := func() int64 {
		n, err := db.Feed.CampaignEpoch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	notify := func(ids ...int64) {
		if err := db.Tx(ctx, func(tx pgx.Tx) error { return persistence.NotifyCampaigns(ctx, tx, ids...) }); err != nil {
			t.Fatal(err)
		}
	}
	e0 := epoch()
	if e1 := epoch(); e1 != e0 {
		t.Fatalf("reading the epoch moved it: %d → %d", e0, e1)
	}
	notify()
	if e := epoch(); e != e0 {
		t.Fatalf("a notification of no campaign moved the epoch: %d → %d", e0, e)
	}
	notify(7)
	e1 := epoch()
	if e1 <= e0 {
		t.Fatalf("a campaign notification did not advance the epoch: %d → %d", e0, e1)
	}
	notify(7, 8)
	if e2 := epoch(); e2 <= e1 {
		t.Fatalf("a second notification did not advance the epoch: %d → %d", e1, e2)
	}
}

// Every notification records its epoch on the campaigns it names, so that the safety check
// re-reads exactly the campaigns changed since its last look.
func TestCampaignsChangedSince(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migratedDB(t)
	buyer := newBuyer(t, db, "epochs@example.test")
	a, b, c := newCampaign(t, db, buyer, "a"), newCampaign(t, db, buyer, "b"), newCampaign(t, db, buyer, "c")
	notify := func(ids ...int64) {
		if err := db.Tx(ctx, func(tx pgx.Tx) error { return persistence.NotifyCampaigns(ctx, tx, ids...) }); err != nil {
			t.Fatal(err)
		}
	}
	since := func(epoch int64) []int64 {
		ids, err := db.Feed.CampaignsChangedSince(ctx, epoch)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	e0, err := db.Feed.CampaignEpoch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := since(e0); len(got) != 0 {
		t.Fatalf("changed since now: %v", got)
	}
	notify(b, a)
	e1, _ := db.Feed.CampaignEpoch(ctx)
	notify(c, 1<<40) // a campaign that does not exist: the epoch advances all the same
	e2, _ := db.Feed.CampaignEpoch(ctx)
	if e2 <= e1 || e1 <= e0 {
		t.Fatalf("epochs %d, %d, %d", e0, e1, e2)
	}
	for _, tc := range []struct {
		epoch int64
		want  []int64
	}{{e0, []int64{a, b, c}}, {e1, []int64{c}}, {e2, nil}} {
		if got := since(tc.epoch); !slices.Equal(got, tc.want) {
			t.Fatalf("changed since %d: %v, want %v", tc.epoch, got, tc.want)
		}
	}
}
