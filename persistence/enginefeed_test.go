package persistence_test

import (
	"context"
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
	buyer, _, err := db.CreateBuyer(ctx, "field@example.test", "Buyer", persistence.EnvStaging)
	if err != nil {
		t.Fatal(err)
	}
	id := newCampaign(t, db, buyer.ID, "field period")
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if _, err := db.Pool.Exec(ctx, `UPDATE campaigns SET status = 2, days_in_field = 12, status_changed_at = $2 WHERE id = $1`,
		id, start); err != nil {
		t.Fatal(err)
	}
	cs, err := db.EngineCampaigns(ctx, []int64{id})
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
