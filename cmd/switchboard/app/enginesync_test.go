package app

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// The safety check re-reads the campaigns changed since its last look, as their lost
// notification would have, without a full load; it does nothing while nothing changed, and
// is a full load once fullEvery has passed.
func TestSafetyCheckRereadsChangedCampaigns(t *testing.T) {
	ctx := context.Background()
	db, err := persistence.Open(ctx, pgtest.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	buyer, _, err := db.Accounts.CreateBuyer(ctx, "safety@example.test", "Buyer", persistence.EnvStaging)
	if err != nil {
		t.Fatal(err)
	}
	name, inc, loi, cl, link, num := "safety", 50, 10, 1, "https://survey.example/s?tid={ID}", 100
	c, err := db.Campaigns.CreateCampaign(ctx, buyer.ID, persistence.CampaignFields{Name: &name, Incidence: &inc,
		LengthOfInterview: &loi, CountryLanguageID: &cl, SupplierLink: &link})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Campaigns.CreateQuota(ctx, buyer.ID, c.ID, persistence.QuotaFields{NumRespondents: &num}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE campaigns SET status = 2, cpi_cents = 100 WHERE id = $1`, c.ID); err != nil {
		t.Fatal(err)
	}
	s := newEngineSync(db, engine.New(nil), zap.NewNop(), time.Hour)
	if err := s.full(ctx); err != nil {
		t.Fatal(err)
	}
	cpi := func() int64 {
		got, ok := s.eng.Snapshot().Campaign(c.ID)
		if !ok {
			t.Fatal("campaign not in the snapshot")
		}
		return got.CPICents
	}
	if cpi() != 100 {
		t.Fatalf("cpi %d after the full load", cpi())
	}
	// A change whose notification was lost: the campaign's epoch moved, no NOTIFY.
	lost := func(cents int) {
		if _, err := db.Pool.Exec(ctx, `UPDATE campaigns SET cpi_cents = $2, engine_epoch = nextval('engine_epoch_seq') WHERE id = $1`,
			c.ID, cents); err != nil {
			t.Fatal(err)
		}
	}
	fullAt := s.fullAt.Load()
	if err := s.safetyRebuild(ctx); err != nil || s.fullAt.Load() != fullAt {
		t.Fatalf("nothing changed: err %v, full load %v", err, s.fullAt.Load() != fullAt)
	}
	lost(250)
	if err := s.safetyRebuild(ctx); err != nil {
		t.Fatal(err)
	}
	if cpi() != 250 || s.fullAt.Load() != fullAt {
		t.Fatalf("after the check: cpi %d, full load %v; want 250 without one", cpi(), s.fullAt.Load() != fullAt)
	}
	// Past fullEvery, a change makes the check a full load.
	s.fullAt.Store(time.Now().Add(-fullEvery).UnixNano())
	lost(300)
	if err := s.safetyRebuild(ctx); err != nil {
		t.Fatal(err)
	}
	if cpi() != 300 || time.Since(time.Unix(0, s.fullAt.Load())) > time.Minute {
		t.Fatalf("after fullEvery: cpi %d, full load at %v", cpi(), time.Unix(0, s.fullAt.Load()))
	}
}
