package persistence_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// TestMarketDaysOffers: the market's days carry the offers flushed to publisher_offer_hours,
// summed over partners and hours per UTC day, days with offers and no session included
// (with zero sessions), hours before from left out.
func TestMarketDaysOffers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := persistence.Open(ctx, pgtest.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	var pubs []int64
	for _, name := range []string{"A", "B"} {
		p, _, err := db.Accounts.CreatePublisher(ctx, persistence.NewPublisher{Name: name, CurrencyName: "coins", ExchangeRate: 100,
			RevenueShare: 0.5, RedirectURL: "https://partner.example/back", Environment: persistence.EnvStaging})
		if err != nil {
			t.Fatal(err)
		}
		pubs = append(pubs, p.ID)
	}
	day := time.Now().UTC().Truncate(24 * time.Hour)
	from := day.Add(-24 * time.Hour)
	if err := db.Insights.AddPublisherOffers(ctx, []persistence.OfferHour{
		{Publisher: pubs[0], Hour: from.Add(-time.Hour), Offers: 1000}, // before from
		{Publisher: pubs[0], Hour: from, Offers: 3},
		{Publisher: pubs[1], Hour: from.Add(23 * time.Hour), Offers: 4},
		{Publisher: pubs[0], Hour: day.Add(time.Hour), Offers: 5},
		{Publisher: pubs[1], Hour: day.Add(time.Hour), Offers: 6},
	}); err != nil {
		t.Fatal(err)
	}
	days, err := db.Insights.MarketDays(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	want := []persistence.MarketDay{
		{Day: from, Offers: 7, PayoutUSD: "0.0000", OveragePayoutUSD: "0.0000"},
		{Day: day, Offers: 11, PayoutUSD: "0.0000", OveragePayoutUSD: "0.0000"},
	}
	if len(days) != len(want) {
		t.Fatalf("days %+v", days)
	}
	for i, d := range days {
		if d != want[i] { // Day is UTC on both sides
			t.Fatalf("day %d: %+v, want %+v", i, d, want[i])
		}
	}
}
