package persistence_test

import (
	"context"
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
		n, err := db.CampaignEpoch(ctx)
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
