package router_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/switchboard/switchboard/internal/entrytoken"
	"github.com/switchboard/switchboard/persistence"
)

// supplierPartner is a supply partner of its own beside the world's: its token, and a
// participant impaneled through it with that participant's user identifier.
type supplierPartner struct {
	pub         persistence.Publisher
	token, user string
	participant int64
}

func (w *world) supplierPartner(name string, back *partner) supplierPartner {
	w.t.Helper()
	ctx := context.Background()
	pub, token, err := w.db.Accounts.CreatePublisher(ctx, persistence.NewPublisher{Name: name, CurrencyName: "coins", ExchangeRate: 100,
		RevenueShare: 0.5, RedirectURL: back.srv.URL + "/back?app=2", PostbackURL: back.srv.URL + "/pb",
		Environment: persistence.EnvStaging})
	if err != nil {
		w.t.Fatal(err)
	}
	sp := supplierPartner{pub: pub, token: token, user: fmt.Sprintf("%s-user-%d", name, time.Now().UnixNano())}
	p, err := w.db.Participants.ImpanelParticipant(ctx, persistence.Impanel{PublisherID: pub.ID, User: sp.user, CountryID: 1,
		Profile: []persistence.ProfileAnswer{{QuestionID: 42, Codes: []int32{30}}, {QuestionID: 43, Codes: []int32{1}},
			{QuestionID: 45, Texts: []string{"94105"}}}}, "test", func() error { return nil })
	if err != nil {
		w.t.Fatal(err)
	}
	sp.participant = p.ID
	return sp
}

// offered lists the campaign ids of the partner's participant's offers on base.
func (w *world) offered(base string, sp supplierPartner) []int64 {
	w.t.Helper()
	req, _ := http.NewRequest("GET", base+"/supply_api/v4/campaigns?user_ip=73.15.20.9&device_type=2", nil)
	req.Header.Set("X-Api-Token", sp.token)
	req.Header.Set("X-User-Identifier", sp.user)
	resp, err := w.noFollow.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Surveys []struct {
			Identifier string `json:"identifier"`
		} `json:"surveys"`
	}
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&body) != nil {
		w.t.Fatalf("GET /supply_api/v4/campaigns: %d", resp.StatusCode)
	}
	var out []int64
	for _, s := range body.Surveys {
		if id, err := strconv.ParseInt(s.Identifier, 10, 64); err == nil {
			out = append(out, id)
		}
	}
	return out
}

// TestExcludedSuppliers (docs/rules.md §5, supplier controls): once campaign B excludes two
// partners, the participant of one loses B's offer within a second while keeping the others,
// and its entry into B through an offer it already had is refused with the over_quota
// redirect to its partner; the other excluded partner re-routes screen-outs, and its
// participant's chain skips B for the next survey; a partner not excluded is still offered B.
func TestExcludedSuppliers(t *testing.T) {
	w := newWorld(t, "")
	w.setReroute(5)
	back := &partner{postbacks: map[string]url.Values{}}
	back.srv = httptest.NewServer(http.HandlerFunc(back.serve))
	t.Cleanup(back.srv.Close)
	excluded := w.supplierPartner("excluded", back)
	back.secret = excluded.pub.APISecret
	other := w.supplierPartner("other", back)
	s := w.startInProcess() // after the publishers: the supply API loads their tokens at start
	w.runWorker()
	a, b, c := w.threeCampaigns(s.URL)
	w.outcomesByCampaign(map[int64]string{a: "disqualified", b: "complete", c: "complete"})
	rerouted := w.participants(1)[0] // of the world's partner, which re-routes
	waitFor(t, "B in the offers of both partners", 10*time.Second, func() bool {
		return slices.Contains(w.offered(s.URL, excluded), b) && slices.Contains(w.offered(s.URL, other), b)
	})
	// An offer of B the excluded partner's participant got before the change.
	entry := s.URL + "/supply_api/v4/entry?token=" + w.key.Sign(entrytoken.Claims{Kind: entrytoken.KindOffer,
		PublisherID: excluded.pub.ID, ParticipantID: excluded.participant, CampaignID: b, DeviceType: 2,
		Expires: time.Now().Unix() + entrytoken.TTL, Nonce: entrytoken.NewNonce()})

	w.mustAPI(s.URL, "PUT", fmt.Sprintf("/api/v1/campaigns/%d", b),
		map[string]any{"excluded_supplier_ids": []int64{w.pub.ID, excluded.pub.ID}}, 200)
	changed := time.Now()
	var offers []int64
	for offers = w.offered(s.URL, excluded); slices.Contains(offers, b); offers = w.offered(s.URL, excluded) {
		if time.Since(changed) > 5*time.Second {
			t.Fatalf("B still offered to an excluded partner's participant 5 s after the change: %v", offers)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if took := time.Since(changed); took > time.Second {
		t.Errorf("the exclusion reached the offers in %v, want within 1 s", took)
	}
	if !slices.Contains(offers, a) || !slices.Contains(offers, c) {
		t.Errorf("excluded partner's offers %v, want A %d and C %d still", offers, a, c)
	}
	if !slices.Contains(w.offered(s.URL, other), b) {
		t.Errorf("a partner B does not exclude lost B's offer")
	}

	resp, _ := w.get(w.noFollow, entry)
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound || loc.Path != "/back" || loc.Query().Get("status") != "over_quota" ||
		loc.Host != mustHost(t, back.srv.URL) {
		t.Errorf("entry into B through an excluded partner: %d %s, want 302 to the partner's over_quota redirect", resp.StatusCode, loc)
	}
	if n := w.count(`SELECT count(*) FROM sessions WHERE campaign_id = $1`, b); n != 0 {
		t.Errorf("%d sessions in B, want none", n)
	}

	// Disqualified at A, the re-routing partner's participant goes on to C, not B (whose cpi
	// ranks it first).
	final, err := w.walk(w.entryURL(s.URL, rerouted, a))
	if err != nil {
		t.Fatal(err)
	}
	w.checkChain(rerouted, final, []int64{a, c}, []string{"disqualified", "complete"})
}

func mustHost(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}
