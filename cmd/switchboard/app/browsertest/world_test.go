// Package browsertest proves the hosted participant pages (the profiler, the pre-screener
// and the support page) over real HTTP against a whole server (pages_test.go), and in a
// real headless Chromium driven through the Chrome DevTools Protocol (browser_test.go); the
// web console likewise (console_http_test.go, console_browser_test.go).
package browsertest

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app"
	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
	"github.com/switchboard/switchboard/router/payout"
	"github.com/switchboard/switchboard/supply"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// world is one server with a buyer, a supply partner whose redirect URL is a recorder, and
// the buyer's survey (another recorder) behind the supplier links.
type world struct {
	t        testing.TB
	s        *apptest.Server
	buyer    *apptest.Buyer
	pub      persistence.Publisher
	pubToken string
	partner  *recorder
	survey   *recorder
}

// recorder is an HTTP server that records the queries it is sent and answers a small page.
type recorder struct {
	srv    *httptest.Server
	title  string
	mu     sync.Mutex
	hits   []url.URL
	secret string // when set: count redirects whose sech is wrong
	bad    atomic.Int64
}

func newRecorder(t testing.TB, title string) *recorder {
	r := &recorder{title: title}
	r.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/favicon.ico" {
			http.NotFound(rw, req)
			return
		}
		r.mu.Lock()
		r.hits = append(r.hits, *req.URL)
		secret := r.secret
		r.mu.Unlock()
		if secret != "" && !payout.VerifySech(req.URL.RawQuery, secret) {
			r.bad.Add(1)
		}
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(rw, `<!doctype html><html lang="en"><title>%s</title><h1 id="landed">%s</h1><p id="query">%s</p></html>`,
			r.title, r.title, req.URL.RawQuery)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// newWorld starts the world's server, its Config adjusted by configure when given.
func newWorld(t testing.TB, configure ...func(*app.Config)) *world {
	t.Helper()
	o := apptest.Options{RateLimit: -1}
	if len(configure) > 0 {
		o.Configure = configure[0]
	}
	w := &world{t: t, s: apptest.Start(t, o)}
	w.buyer = w.s.NewBuyer(t)
	w.partner = newRecorder(t, "Partner app")
	w.survey = newRecorder(t, "Buyer survey")
	ctx := context.Background()
	var err error
	w.pub, w.pubToken, err = w.s.DB.Accounts.CreatePublisher(ctx, persistence.NewPublisher{Name: "Puzzle Quest", CurrencyName: "gems",
		ExchangeRate: 100, RevenueShare: 0.5, RedirectURL: w.partner.srv.URL + "/back?app=pq", Environment: w.s.Env})
	if err != nil {
		t.Fatal(err)
	}
	w.partner.secret = w.pub.APISecret
	if err := w.s.App.Supply.ReloadPublishers(ctx); err != nil {
		t.Fatal(err)
	}
	return w
}

// campaign creates an active US campaign open to everyone (either gender) whose supplier
// link leads to the survey recorder.
func (w *world) campaign(name string) (campaignID, projectID int64) {
	w.t.Helper()
	r := w.buyer.Do(w.t, "POST", "/api/v1/campaigns", map[string]any{"name": name, "incidence": 50,
		"length_of_interview": 10, "country_language_id": 1, "cpi": "2.00", "reentry_interval": 0,
		"supplier_link": w.survey.srv.URL + "/s?tid={ID}&rid={RESPONDENT_ID}"}).Expect(w.t, 201).Object(w.t)
	campaignID, projectID = int64(r["id"].(float64)), int64(r["project_id"].(float64))
	w.buyer.Do(w.t, "POST", fmt.Sprintf("/api/v1/campaigns/%d/campaign_quotas", campaignID), map[string]any{
		"num_respondents": 100, "campaign_qualifications": []any{map[string]any{"question_id": 43, "pre_codes": []int{1, 2}}},
	}).Expect(w.t, 201)
	w.buyer.Do(w.t, "PUT", fmt.Sprintf("/api/v1/campaigns/%d", campaignID), map[string]any{"status": 2}).Expect(w.t, 200)
	return campaignID, projectID
}

// screener attaches a custom screener question to the campaign: "Do you own a car?" Yes (1)
// qualifies, No (2) does not.
func (w *world) screener(campaignID int64) int {
	w.t.Helper()
	ctx := context.Background()
	q, err := w.s.DB.Campaigns.CreateCustomQualification(ctx, w.buyer.ID, persistence.CustomQualificationFields{
		QuestionText: "Do you own a car?", AnswerType: 0, CountryLanguageID: 1})
	if err != nil {
		w.t.Fatal(err)
	}
	for _, a := range []string{"Yes", "No"} {
		if _, err := w.s.DB.Campaigns.CreateCustomAnswer(ctx, w.buyer.ID, q.QuestionID, a); err != nil {
			w.t.Fatal(err)
		}
	}
	if _, err := w.s.DB.Campaigns.AttachCustomQualification(ctx, w.buyer.ID, campaignID, q.QuestionID, []int{1}); err != nil {
		w.t.Fatal(err)
	}
	return q.QuestionID
}

type offer struct {
	Identifier    string `json:"identifier"`
	OfferEntryURL string `json:"offer_entry_url"`
	SupportURL    string `json:"support_url"`
}

type offers struct {
	Surveys     []offer `json:"surveys"`
	Eligibility struct {
		IsEligible bool `json:"is_eligible"`
		Reason     int  `json:"reason"`
	} `json:"player_eligibility"`
}

func (o offers) find(id string) (offer, bool) {
	for _, s := range o.Surveys {
		if s.Identifier == id {
			return s, true
		}
	}
	return offer{}, false
}

// offers is GET /supply_api/v4/campaigns for user on a phone.
func (w *world) offers(user string) offers {
	w.t.Helper()
	req := w.s.NewRequest(w.t, "GET", "/supply_api/v4/campaigns?user_ip=8.8.8.8&device_type=1", nil)
	req.Header.Set("X-Api-Token", w.pubToken)
	req.Header.Set("X-User-Identifier", user)
	var o offers
	w.s.Send(w.t, req).Expect(w.t, 200).Decode(w.t, &o)
	return o
}

// waitOffer polls the offers of user until campaign id is among them (the engine hears of
// buyer changes within a second).
func (w *world) waitOffer(user string, campaignID int64) offer {
	w.t.Helper()
	id := strconv.FormatInt(campaignID, 10)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if o, ok := w.offers(user).find(id); ok {
			return o
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("campaign %d never offered to %s", campaignID, user)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// impanel registers user in the US (age 34, female, ZIP 10001) through POST
// /players/impanel.
func (w *world) impanel(user string) {
	w.t.Helper()
	ts := time.Now().Unix()
	req := w.s.NewRequest(w.t, "POST", "/supply_api/v4/players/impanel", map[string]any{
		"country_id": 1, "ts": ts, "sech": supply.Sech(w.pub.APISecret, user, ts),
		"profile_data": []any{
			map[string]any{"question_id": 42, "values": []any{34}},
			map[string]any{"question_id": 43, "values": []any{2}},
			map[string]any{"question_id": 45, "values": []any{"10001"}},
		}})
	req.Header.Set("X-Api-Token", w.pubToken)
	req.Header.Set("X-User-Identifier", user)
	w.s.Send(w.t, req).Expect(w.t, 200)
}

var userSeq atomic.Int64

func newUser() string { return fmt.Sprintf("player-%d-%d", time.Now().UnixNano(), userSeq.Add(1)) }

// count runs a scalar query.
func (w *world) count(sql string, args ...any) int64 {
	w.t.Helper()
	var n int64
	if err := w.s.DB.Pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		w.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// complete sends the buyer's signed complete callback of tid.
func (w *world) complete(tid string) {
	w.t.Helper()
	u := w.s.PublicURL + "/router/customers/" + w.buyer.CustomerID + "/cps/complete?tid=" + tid
	m := hmac.New(sha1.New, []byte(w.buyer.Secret))
	m.Write([]byte(u))
	resp, err := w.s.Client.Get(u + "&tr_sech=" + hex.EncodeToString(m.Sum(nil)))
	if err != nil {
		w.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		w.t.Fatalf("complete callback: %d", resp.StatusCode)
	}
}

// tokenOf returns the token parameter of a URL.
func tokenOf(t testing.TB, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("token")
}

// path returns raw relative to the server (the path and query of a URL it handed out).
func (w *world) path(raw string) string {
	return strings.TrimPrefix(raw, w.s.PublicURL)
}
