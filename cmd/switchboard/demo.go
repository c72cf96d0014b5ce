package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"

	"github.com/switchboard/switchboard/cmd/switchboard/app"
	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/supply"
)

// Demo credentials are fixed so that the README's walk-through can be pasted as it is and
// end links built once keep working. They exist only in databases that seed-demo filled.
const (
	demoBuyerEmail     = "demo-buyer@switchboard.test"
	demoCustomerID     = "demo-customer"
	demoBuyerToken     = "demo-buyer-token"
	demoBuyerSecret    = "demo-buyer-secret"
	demoPublisherName  = "Demo Rewards App"
	demoPublisherToken = "demo-publisher-token"
	demoPublisherKey   = "demo-publisher-secret"
	demoCurrency       = "coins"
)

// demoPartner is the demo publisher as its return page (serve --demo) knows it.
func demoPartner() *supply.DemoPartner {
	return &supply.DemoPartner{Secret: demoPublisherKey, Currency: demoCurrency}
}

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
		creds = map[string]any{"seeded": false, "reason": "the database holds buyers and no demo buyer"}
	}
	return printJSON(out, creds)
}

// seedDemo fills an empty database with a demo buyer, publisher, campaigns and panel and
// returns their credentials ("seeded": true). On a database seeded before it returns the
// same credentials ("seeded": false), so that every start prints them; it returns nil when
// the database holds other buyers and no demo buyer.
func seedDemo(ctx context.Context, db *persistence.DB, cfg app.Config, _ bool) (map[string]any, error) {
	if seeded, err := db.Accounts.HasBuyers(ctx); err != nil {
		return nil, err
	} else if seeded {
		return seededDemoCredentials(ctx, db)
	}
	publicURL := strings.TrimRight(cfg.PublicURL, "/")
	if publicURL == "" { // serve's default, http://<addr>
		addr := cfg.Addr
		if addr == "" {
			addr = "127.0.0.1:8080"
		}
		publicURL = "http://" + addr
	}
	buyer, _, err := db.Accounts.CreateBuyerWith(ctx, demoBuyerEmail, "Demo Research", persistence.EnvStaging,
		persistence.BuyerCredentials{CustomerID: demoCustomerID, Token: demoBuyerToken, Secret: demoBuyerSecret})
	if err != nil {
		return nil, err
	}
	pub, _, err := db.Accounts.CreatePublisherWith(ctx, persistence.NewPublisher{
		Name: demoPublisherName, CurrencyName: demoCurrency, ExchangeRate: 100, RevenueShare: 0.6,
		RedirectURL: publicURL + supply.DemoPartnerPath, Environment: persistence.EnvStaging,
	}, demoPublisherToken, demoPublisherKey)
	if err != nil {
		return nil, err
	}
	campaigns, err := seedDemoCampaigns(ctx, db, buyer.ID)
	if err != nil {
		return nil, err
	}
	panel, err := seedDemoPanel(ctx, db, pub.ID, demoPanelSize)
	if err != nil {
		return nil, err
	}
	creds := demoCredentials(buyer.CustomerID, pub.ID)
	creds["seeded"] = true
	creds["campaigns"] = campaigns
	creds["panel"] = map[string]any{"participants": panel, "user_identifiers": "demo-user-0001 … demo-user-" + fmt.Sprintf("%04d", panel)}
	return creds, nil
}

// seededDemoCredentials returns the credentials of the demo buyer and publisher of a
// database seeded before ("seeded": false), or nil when it holds no demo buyer. The
// customer_id is read, not assumed: a database may hold a demo buyer of another id.
func seededDemoCredentials(ctx context.Context, db *persistence.DB) (map[string]any, error) {
	buyer, err := db.Accounts.AuthenticateBuyer(ctx, demoBuyerEmail, demoBuyerToken, persistence.EnvStaging)
	if fault.KindOf(err) == fault.KindUnauthorized {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	pubs, err := db.Accounts.Publishers(ctx)
	if err != nil {
		return nil, err
	}
	var pubID int64
	for _, p := range pubs {
		if p.Name == demoPublisherName && p.Environment == persistence.EnvStaging {
			pubID = p.ID
			break
		}
	}
	creds := demoCredentials(buyer.CustomerID, pubID)
	creds["seeded"] = false
	return creds, nil
}

// demoCredentials are the demo buyer's and publisher's credentials as a start prints them.
func demoCredentials(customerID string, publisherID int64) map[string]any {
	return map[string]any{
		"buyer": map[string]any{"email": demoBuyerEmail, "api_token": demoBuyerToken, "api_secret": demoBuyerSecret,
			"customer_id": customerID, "environment": persistence.EnvStaging},
		"publisher": map[string]any{"publisher_id": publisherID, "api_token": demoPublisherToken,
			"api_secret": demoPublisherKey, "environment": persistence.EnvStaging},
	}
}

// demoPanelSize is how many synthetic participants the demo publisher impanels.
const demoPanelSize = 500

// seedDemoCampaigns creates three active US campaigns through the same persistence calls the
// buyer API uses, and returns their ids.
func seedDemoCampaigns(ctx context.Context, db *persistence.DB, buyerID int64) ([]int64, error) {
	type quota struct {
		name  string
		num   int
		quals []persistence.QualificationInput
	}
	codes := func(q int, vals ...int) persistence.QualificationInput {
		in := persistence.QualificationInput{QuestionID: q}
		for _, v := range vals {
			in.PreCodes = append(in.PreCodes, persistence.PreCode{Text: fmt.Sprint(v), Number: true})
		}
		return in
	}
	ages := func(lo, hi int) persistence.QualificationInput {
		vals := make([]int, 0, hi-lo+1)
		for a := lo; a <= hi; a++ {
			vals = append(vals, a)
		}
		return codes(42, vals...)
	}
	demo := []struct {
		name           string
		loi, incidence int
		quotas         []quota
	}{
		{"Demo: coffee habits", 12, 40, []quota{
			{"Women 25-34", 100, []persistence.QualificationInput{codes(43, 2), ages(25, 34)}},
			{"Men 25-34", 100, []persistence.QualificationInput{codes(43, 1), ages(25, 34)}},
		}},
		{"Demo: streaming services", 8, 60, []quota{
			{"Adults 18-64", 300, []persistence.QualificationInput{ages(18, 64)}},
		}},
		{"Demo: home improvement", 20, 25, []quota{
			{"Home owners 35+", 150, []persistence.QualificationInput{ages(35, 99)}},
		}},
	}
	var ids []int64
	for _, d := range demo {
		name, loi, inc, cl := d.name, d.loi, d.incidence, 1
		link := "https://survey.example.com/s/demo?tid={ID}&rid={RESPONDENT_ID}"
		c, err := db.Campaigns.CreateCampaign(ctx, buyerID, persistence.CampaignFields{Name: &name, LengthOfInterview: &loi,
			Incidence: &inc, CountryLanguageID: &cl, SupplierLink: &link})
		if err != nil {
			return nil, err
		}
		for _, q := range d.quotas {
			n := q.num
			f := persistence.QuotaFields{NumRespondents: &n, Qualifications: q.quals}
			f.Name = persistence.Nullable[string]{Set: true, Valid: true, V: q.name}
			if _, err := db.Campaigns.CreateQuota(ctx, buyerID, c.ID, f); err != nil {
				return nil, err
			}
		}
		active := persistence.StatusActive
		if _, err := db.Campaigns.UpdateCampaign(ctx, buyerID, c.ID, persistence.CampaignFields{Status: &active}); err != nil {
			return nil, err
		}
		ids = append(ids, c.ID)
	}
	return ids, nil
}

// seedDemoPanel impanels n synthetic US participants (demo-user-0001 …) with plausible
// answers to AGE, GENDER, ZIP and REGION, so that the demo offers and feasibility have a
// panel to work from. The generator is seeded: every demo database holds the same panel.
func seedDemoPanel(ctx context.Context, db *persistence.DB, publisherID int64, n int) (int, error) {
	rng := rand.New(rand.NewPCG(42, 7))
	zips := []string{"94105", "10001", "60601", "73301", "98101", "30301", "02108", "33101"}
	for i := 1; i <= n; i++ {
		in := persistence.Impanel{PublisherID: publisherID, User: fmt.Sprintf("demo-user-%04d", i), CountryID: 1,
			Profile: []persistence.ProfileAnswer{
				{QuestionID: 42, Codes: []int32{int32(18 + rng.IntN(60))}},
				{QuestionID: 43, Codes: []int32{int32(1 + rng.IntN(2))}},
				{QuestionID: 45, Texts: []string{zips[rng.IntN(len(zips))]}},
				{QuestionID: 100, Codes: []int32{int32(1 + rng.IntN(9))}},
			}}
		if _, err := db.Participants.ImpanelParticipant(ctx, in, "seed-demo", func() error { return nil }); err != nil {
			return i - 1, err
		}
	}
	return n, nil
}
