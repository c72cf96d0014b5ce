package persistence_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// migratedDB opens a fresh database of the test cluster, migrated, closed when t ends.
func migratedDB(t testing.TB) *persistence.DB {
	t.Helper()
	return migratedAt(t, pgtest.URL(t))
}

// migratedAt opens the database at url, migrated, closed when t ends.
func migratedAt(t testing.TB, url string) *persistence.DB {
	t.Helper()
	ctx := context.Background()
	db, err := persistence.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return db
}

// dbBelow opens a database of its own migrated below version (as an older build left it),
// for tests of migration version on a populated database; url reaches the same database.
func dbBelow(t testing.TB, version int) (db *persistence.DB, url string) {
	t.Helper()
	ctx := context.Background()
	url = pgtest.EmptyURL(t)
	db, err := persistence.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if _, err := db.MigrateBelow(ctx, version); err != nil {
		t.Fatal(err)
	}
	return db, url
}

// newCampaign creates a campaign of buyer named name through the buyer API's write path
// (valid required fields, status 5 Paused) and returns its id; tests set the state they need
// with SQL afterwards.
func newCampaign(t testing.TB, db *persistence.DB, buyerID int64, name string) int64 {
	t.Helper()
	inc, loi, cl, link := 50, 10, 1, "https://survey.example/s?tid={ID}"
	c, err := db.Campaigns.CreateCampaign(context.Background(), buyerID, persistence.CampaignFields{Name: &name, Incidence: &inc,
		LengthOfInterview: &loi, CountryLanguageID: &cl, SupplierLink: &link})
	if err != nil {
		t.Fatal(err)
	}
	return c.ID
}

// newActiveCampaign creates a campaign of buyer named name, active (2), with reentry_interval
// reentry (nil: never again) and one non-global quota of 100 respondents, and returns their ids.
func newActiveCampaign(t testing.TB, db *persistence.DB, buyerID int64, name string, reentry any) (id, quota int64) {
	t.Helper()
	id = newCampaign(t, db, buyerID, name)
	if err := db.Pool.QueryRow(context.Background(), `WITH c AS (UPDATE campaigns SET status = 2, reentry_interval = $2 WHERE id = $1)
		INSERT INTO campaign_quotas (campaign_id, name, num_respondents) VALUES ($1, 'all', 100) RETURNING id`, id, reentry).Scan(&quota); err != nil {
		t.Fatal(err)
	}
	return id, quota
}

// newBuyer creates a staging buyer with the given email and returns its id.
func newBuyer(t testing.TB, db *persistence.DB, email string) int64 {
	t.Helper()
	b, _, err := db.Accounts.CreateBuyer(context.Background(), email, "Buyer", persistence.EnvStaging)
	if err != nil {
		t.Fatal(err)
	}
	return b.ID
}

// newPublisher creates a staging publisher (a supply partner paying 100 coins a dollar,
// half the revenue) and returns its id.
func newPublisher(t testing.TB, db *persistence.DB) int64 {
	t.Helper()
	pub, _, err := db.Accounts.CreatePublisher(context.Background(), persistence.NewPublisher{Name: "Partner", CurrencyName: "coins",
		ExchangeRate: 100, RevenueShare: 0.5, RedirectURL: "https://partner.example/back", Environment: persistence.EnvStaging})
	if err != nil {
		t.Fatal(err)
	}
	return pub.ID
}

// randomTID is a fresh transaction id as serve draws them: 32 random hex digits.
func randomTID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// oneConnection returns url with a pool of one connection: every statement of the pool on
// the same backend (its settings, its plans, its statistics counters).
func oneConnection(url string) string {
	if strings.Contains(url, "?") {
		return url + "&pool_max_conns=1"
	}
	return url + "?pool_max_conns=1"
}
