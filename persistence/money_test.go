package persistence_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/persistence"
)

// TestPublisherMoneyBounds: a publisher's exchange rate and revenue share are held to the
// money bounds (docs/rules.md §7) with an error naming the field; the bounds themselves are
// stored and read back exactly.
func TestPublisherMoneyBounds(t *testing.T) {
	ctx := context.Background()
	db := migratedDB(t)
	cases := []struct {
		name        string
		rate, share float64
		field       string // "" valid
	}{
		{"smallest", 0.0001, 0.0001, ""},
		{"largest", 1e9, 1, ""},
		{"typical", 100, 0.6, ""},
		{"rate 0", 0, 0.5, "exchange_rate"},
		{"rate below 0.0001", 0.00009, 0.5, "exchange_rate"},
		{"rate negative", -1, 0.5, "exchange_rate"},
		{"rate over 1e9", 1e9 + 1, 0.5, "exchange_rate"},
		{"rate NaN", math.NaN(), 0.5, "exchange_rate"},
		{"rate +Inf", math.Inf(1), 0.5, "exchange_rate"},
		{"share 0", 100, 0, "revenue_share"},
		{"share below 0.0001", 100, 0.00009, "revenue_share"},
		{"share over 1", 100, 1.0001, "revenue_share"},
		{"share NaN", 100, math.NaN(), "revenue_share"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pub, _, err := db.Accounts.CreatePublisher(ctx, persistence.NewPublisher{Name: "P", CurrencyName: "coins",
				ExchangeRate: tc.rate, RevenueShare: tc.share, RedirectURL: "https://p.example/back",
				Environment: persistence.EnvStaging})
			if tc.field != "" {
				var f *fault.Error
				if !errors.As(err, &f) || f.Kind != fault.KindInvalid || f.Field != tc.field {
					t.Fatalf("err %v, want invalid %s", err, tc.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := db.Accounts.PublisherByID(ctx, pub.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.ExchangeRate != tc.rate || got.RevenueShare != tc.share {
				t.Errorf("stored rate %v share %v, want %v %v", got.ExchangeRate, got.RevenueShare, tc.rate, tc.share)
			}
		})
	}
}
