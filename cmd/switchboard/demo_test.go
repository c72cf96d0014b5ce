package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app"
	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/persistence/pgtest"
	"github.com/switchboard/switchboard/router"
	"github.com/switchboard/switchboard/supply"
)

// demoBuyerOf returns the "buyer" object of printed demo credentials.
func demoBuyerOf(t *testing.T, creds map[string]any) map[string]any {
	t.Helper()
	b, ok := creds["buyer"].(map[string]any)
	if !ok {
		t.Fatalf("demo credentials without a buyer: %v", creds)
	}
	return b
}

// TestDemoSeed: the demo's quotas keep their names, and the credentials it prints (the
// customer_id that end links need included) are the same on every database and printed on
// every start, as the README says.
func TestDemoSeed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := apptest.Start(t, apptest.Options{})
	cfg := app.Config{PublicURL: s.PublicURL}
	first, err := seedDemo(ctx, s.DB, cfg, false)
	if err != nil || first == nil {
		t.Fatalf("seedDemo on an empty database: %v %v", first, err)
	}
	buyer := demoBuyerOf(t, first)

	// Every demo quota has its name, through the buyer API.
	var named []string
	for _, id := range first["campaigns"].([]int64) {
		req := s.NewRequest(t, "GET", fmt.Sprintf("/api/v1/campaigns/%d", id), nil)
		req.SetBasicAuth(demoBuyerEmail, demoBuyerToken)
		var c struct {
			Quotas []struct {
				Name *string `json:"name"`
			} `json:"campaign_quotas"`
		}
		s.Send(t, req).Expect(t, 200).Decode(t, &c)
		for _, q := range c.Quotas {
			if q.Name == nil {
				t.Errorf("campaign %d has a quota without a name", id)
				continue
			}
			named = append(named, *q.Name)
		}
	}
	if got := strings.Join(named, ", "); got != "Women 25-34, Men 25-34, Adults 18-64, Home owners 35+" {
		t.Errorf("demo quota names: %s", got)
	}

	// A second start on the same database prints the same credentials.
	again, err := seedDemo(ctx, s.DB, cfg, false)
	if err != nil || again == nil {
		t.Fatalf("seedDemo on a seeded database printed %v (%v), want the demo credentials", again, err)
	}
	if b := demoBuyerOf(t, again); b["customer_id"] != buyer["customer_id"] || b["api_secret"] != demoBuyerSecret {
		t.Errorf("second start printed buyer %v, want %v", b, buyer)
	}
	if again["seeded"] != false {
		t.Errorf("second start reports seeded %v", again["seeded"])
	}

	// Another database gets the same customer_id, the one the README gives.
	db, err := openDB(ctx, pgtest.URL(t), newLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	other, err := seedDemo(ctx, db, cfg, false)
	if err != nil || other == nil {
		t.Fatalf("seedDemo on a second database: %v %v", other, err)
	}
	id, _ := buyer["customer_id"].(string)
	if got := demoBuyerOf(t, other)["customer_id"]; got != id {
		t.Errorf("customer_id %v on one database, %v on another", id, got)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if id == "" || !strings.Contains(string(readme), "`"+id+"`") {
		t.Errorf("README.md does not give the demo customer_id %q", id)
	}
}

// TestDemoPartnerReturn: with the demo on, a demo participant who completes a survey lands
// on the demo partner's page (not a 404), which says what the redirect carried and that its
// signature is valid; a hosted page under the strict policy, with no script. Without the
// demo the route does not exist.
func TestDemoPartnerReturn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := apptest.Start(t, apptest.Options{Configure: func(c *app.Config) { c.DemoPartner = demoPartner() }})
	creds, err := seedDemo(ctx, s.DB, app.Config{PublicURL: s.PublicURL}, false)
	if err != nil || creds == nil {
		t.Fatalf("seedDemo: %v %v", creds, err)
	}
	if err := s.App.Supply.ReloadPublishers(ctx); err != nil { // as serve --demo does
		t.Fatal(err)
	}
	customerID := demoBuyerOf(t, creds)["customer_id"].(string)

	// The first demo participant offered a survey enters it.
	var entry string
	for end := time.Now().Add(15 * time.Second); entry == "" && time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		for i := 1; i <= 20 && entry == ""; i++ {
			req := s.NewRequest(t, "GET", "/supply_api/v4/campaigns?user_ip=73.15.20.9&device_type=1", nil)
			req.Header.Del("Authorization")
			req.Header.Set("X-Api-Token", demoPublisherToken)
			req.Header.Set("X-User-Identifier", fmt.Sprintf("demo-user-%04d", i))
			var offers struct {
				Surveys []struct {
					Identifier    string `json:"identifier"`
					OfferEntryURL string `json:"offer_entry_url"`
				} `json:"surveys"`
			}
			s.Send(t, req).Expect(t, 200).Decode(t, &offers)
			for _, o := range offers.Surveys {
				if o.Identifier != "profile" {
					entry = o.OfferEntryURL
					break
				}
			}
		}
	}
	if entry == "" {
		t.Fatal("no demo participant was offered a demo survey")
	}
	in := s.Send(t, s.NewRequest(t, "GET", strings.TrimPrefix(entry, s.PublicURL), nil)).Expect(t, http.StatusFound)
	survey, err := url.Parse(in.Header.Get("Location"))
	if err != nil || survey.Query().Get("tid") == "" {
		t.Fatalf("entry went to %q", in.Header.Get("Location"))
	}
	signed := "/router/customers/" + customerID + "/cps/complete?tid=" + url.QueryEscape(survey.Query().Get("tid"))
	end := signed + "&tr_sech=" + router.CallbackHash(s.PublicURL, signed, demoBuyerSecret)
	back := s.Send(t, s.NewRequest(t, "GET", end, nil)).Expect(t, http.StatusFound).Header.Get("Location")
	if !strings.HasPrefix(back, s.PublicURL+supply.DemoPartnerPath+"?") {
		t.Fatalf("the end link sent the participant to %q, want the demo partner's page", back)
	}

	page := s.Send(t, s.NewRequest(t, "GET", strings.TrimPrefix(back, s.PublicURL), nil)).Expect(t, 200)
	body := string(page.Body)
	q := survey.Query()
	for _, want := range []string{`<dd id="status">complete</dd>`, `<strong id="sech">valid</strong>`,
		`<dd id="tid" class="wrap">` + q.Get("tid") + `</dd>`, " coins</dd>"} {
		if !strings.Contains(body, want) {
			t.Errorf("demo partner page lacks %s:\n%s", want, body)
		}
	}
	if strings.Contains(body, "<script") {
		t.Error("demo partner page carries a script")
	}
	if ct := page.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if csp := page.Header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'none'; style-src 'sha256-") ||
		!strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}

	// A redirect whose query was changed does not verify.
	forged := strings.Replace(back, "status=complete", "status=disqualified", 1)
	page = s.Send(t, s.NewRequest(t, "GET", strings.TrimPrefix(forged, s.PublicURL), nil)).Expect(t, 200)
	if !strings.Contains(string(page.Body), `<strong id="sech">NOT valid</strong>`) {
		t.Errorf("a changed redirect's page:\n%s", page.Body)
	}

	// Without the demo there is no such page.
	plain := apptest.Start(t, apptest.Options{})
	resp := plain.Send(t, plain.NewRequest(t, "GET", supply.DemoPartnerPath+"?status=complete", nil))
	if resp.Status != http.StatusNotFound {
		t.Errorf("without --demo: %d %s", resp.Status, resp.Body)
	}
	var e map[string]any
	if json.Unmarshal(resp.Body, &e) != nil {
		t.Errorf("without --demo the answer is not the JSON 404: %s", resp.Body)
	}
}
