package router_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router/payout"
)

// TestLargestReward proves docs/rules.md §7's money bounds end to end: at the largest bounds
// but one (a 9,999 USD cpi, a revenue share of 1, 1e9 in-app units per USD) the offer
// promises 9,999,000,000,000 units, and the complete is recorded (the session has its outcome,
// payout and reward), answered with the partner redirect, and announced by a postback with
// that reward and payout_usd 9999.0000. A reward that overflowed its column used to fail
// every callback of such a session with 500.
func TestLargestReward(t *testing.T) {
	w := newWorld(t, "")
	ctx := context.Background()
	pub, pubToken, err := w.db.Accounts.CreatePublisher(ctx, persistence.NewPublisher{Name: "Rich partner", CurrencyName: "gems",
		ExchangeRate: 1e9, RevenueShare: 1, RedirectURL: w.partner.srv.URL + "/back?app=1",
		PostbackURL: w.partner.srv.URL + "/pb", Environment: persistence.EnvStaging})
	if err != nil {
		t.Fatal(err)
	}
	w.pub, w.partner.secret = pub, pub.APISecret // the world's participants and entries are this partner's
	s := w.startInProcess()                      // after the publisher: the supply API loads its tokens at start
	w.runWorker()
	base := s.URL
	w.survey.outcome = func(string) string { return "" } // the test sends the callback itself
	camp, _ := w.campaign(base, campaignOpts{quota: 10, extra: map[string]any{"cpi": "9999"}})
	if cpi := w.count(`SELECT cpi_cents FROM campaigns WHERE id = $1`, camp); cpi != 999_900 {
		t.Fatalf("campaign cpi %d cents, want the 9999.00 bid", cpi)
	}
	p := w.participants(1)[0]
	var user string
	if err := w.db.Pool.QueryRow(ctx, `SELECT user_identifier FROM participants WHERE id = $1`, p).Scan(&user); err != nil {
		t.Fatal(err)
	}
	const wantReward = "9999000000000"

	// The offer.
	type offer struct {
		Identifier   string      `json:"identifier"`
		RewardAmount json.Number `json:"reward_amount"`
		EntryURL     string      `json:"offer_entry_url"`
	}
	var o offer
	waitFor(t, "the offer", 10*time.Second, func() bool {
		req, _ := http.NewRequest("GET", base+"/supply_api/v4/campaigns?user_ip=73.15.20.9&device_type=2", nil)
		req.Header.Set("X-Api-Token", pubToken)
		req.Header.Set("X-User-Identifier", user)
		resp, err := w.noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct{ Surveys []offer }
		d := json.NewDecoder(resp.Body)
		d.UseNumber()
		if resp.StatusCode != 200 || d.Decode(&body) != nil {
			t.Fatalf("GET /supply_api/v4/campaigns: %d", resp.StatusCode)
		}
		for _, s := range body.Surveys {
			if s.Identifier == strconv.FormatInt(camp, 10) {
				o = s
				return true
			}
		}
		return false
	})
	if o.RewardAmount.String() != wantReward {
		t.Errorf("offer reward_amount %s, want %s", o.RewardAmount, wantReward)
	}

	// Entry, then the complete.
	resp, _ := w.get(w.noFollow, o.EntryURL)
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(loc, w.survey.srv.URL+"/s?") {
		t.Fatalf("entry: %d %s, want 302 to the supplier link", resp.StatusCode, loc)
	}
	u, _ := url.Parse(loc)
	tid := u.Query().Get("tid")
	for i := range 2 { // the buyer's retry gets the same answer
		resp, body := w.get(w.noFollow, w.callbackURL("complete", tid, w.buyer.APISecret))
		want := fmt.Sprintf("%s/back?app=1&tid=%s&status=complete&reward=%s&sech=", w.partner.srv.URL, tid, wantReward)
		loc := resp.Header.Get("Location")
		lu, err := url.Parse(loc)
		if resp.StatusCode != http.StatusFound || !strings.HasPrefix(loc, want) || err != nil ||
			!payout.VerifySech(lu.RawQuery, pub.APISecret) {
			t.Fatalf("complete callback %d: %d %s %s, want 302 to %s<sech>", i+1, resp.StatusCode, loc, body, want)
		}
	}

	var outcome, usd, reward string
	if err := w.db.Pool.QueryRow(ctx, `SELECT COALESCE(outcome, ''), COALESCE(payout_usd::text, ''), COALESCE(reward::text, '')
		FROM sessions WHERE tid = $1`, tid).Scan(&outcome, &usd, &reward); err != nil {
		t.Fatal(err)
	}
	if outcome != "complete" || usd != "9999.0000" || reward != wantReward {
		t.Errorf("stored outcome %q payout_usd %q reward %q, want complete 9999.0000 %s", outcome, usd, reward, wantReward)
	}
	waitFor(t, "the postback", 10*time.Second, func() bool { _, ok := w.partner.postback(tid, "complete"); return ok })
	pb, _ := w.partner.postback(tid, "complete")
	if pb.Get("reward") != wantReward || pb.Get("payout_usd") != "9999.0000" || pb.Get("user_identifier") != user {
		t.Errorf("postback %v, want reward=%s payout_usd=9999.0000 user_identifier=%s", pb, wantReward, user)
	}
	if n := w.partner.badSech.Load(); n != 0 {
		t.Errorf("%d requests to the partner with a bad sech", n)
	}
}
