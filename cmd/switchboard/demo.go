package main

import (
	"context"
	"io"

	"github.com/switchboard/switchboard/cmd/switchboard/app"
	"github.com/switchboard/switchboard/persistence"
)

// Demo credentials are fixed so that the README's walk-through can be pasted as it is. They
// exist only in databases that seed-demo filled.
const (
	demoBuyerEmail     = "demo-buyer@switchboard.test"
	demoBuyerToken     = "demo-buyer-token"
	demoBuyerSecret    = "demo-buyer-secret"
	demoPublisherToken = "demo-publisher-token"
	demoPublisherKey   = "demo-publisher-secret"
)

func runSeedDemo(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("seed-demo")
	var cfg app.Config
	f.StringVar(&cfg.DatabaseURL, "database-url", "", "PostgreSQL URL (default: the project-local cluster)")
	f.StringVar(&cfg.PublicURL, "public-url", "http://127.0.0.1:8080", "public URL the demo publisher's redirect points at")
	if err := f.parse(args); err != nil {
		return err
	}
	db, err := openDB(ctx, cfg.DatabaseURL, newLogger())
	if err != nil {
		return err
	}
	defer db.Close()
	creds, err := seedDemo(ctx, db, cfg, false)
	if err != nil {
		return err
	}
	if creds == nil {
		creds = map[string]any{"seeded": false, "reason": "the database already holds buyers"}
	}
	return printJSON(out, creds)
}

// seedDemo fills an empty database with a demo buyer, publisher, campaigns and panel and
// returns their credentials; it returns nil when the database already holds buyers.
func seedDemo(ctx context.Context, db *persistence.DB, cfg app.Config, _ bool) (map[string]any, error) {
	var n int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM buyers`).Scan(&n); err != nil {
		return nil, err
	}
	if n > 0 {
		return nil, nil
	}
	publicURL := cfg.PublicURL
	if publicURL == "" {
		publicURL = "http://127.0.0.1:8080"
	}
	buyer, _, err := db.CreateBuyerWith(ctx, demoBuyerEmail, "Demo Research", persistence.EnvStaging, demoBuyerToken, demoBuyerSecret)
	if err != nil {
		return nil, err
	}
	pub, _, err := db.CreatePublisherWith(ctx, persistence.NewPublisher{
		Name: "Demo Rewards App", CurrencyName: "coins", ExchangeRate: 100, RevenueShare: 0.6,
		RedirectURL: publicURL + "/demo/partner/return", Environment: persistence.EnvStaging,
	}, demoPublisherToken, demoPublisherKey)
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"seeded": true,
		"buyer": map[string]any{"email": buyer.Email, "api_token": demoBuyerToken, "api_secret": demoBuyerSecret,
			"customer_id": buyer.CustomerID, "environment": persistence.EnvStaging},
		"publisher": map[string]any{"publisher_id": pub.ID, "api_token": demoPublisherToken,
			"api_secret": demoPublisherKey, "environment": persistence.EnvStaging},
	}, nil
}
