// Package guides_test generates the integration guides docs/buyer-integration.md and
// docs/supply-api.md from exchanges recorded against a running server (apptest: the whole
// app on a real listener over a fresh PostgreSQL) and from worked signing examples computed
// by the production signing code. Without -update the test fails when a committed guide
// differs from what it generates, so the guides cannot drift from the server.
//
//	go test ./cmd/guides -update   # rewrite the guides
package guides_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/template"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app"
	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/internal/entrytoken"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
	"github.com/switchboard/switchboard/router/payout"
	"github.com/switchboard/switchboard/supply"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var update = flag.Bool("update", false, "rewrite docs/buyer-integration.md and docs/supply-api.md")

// The recorded deployment's fixed names: the service's public URL (what it hands out and
// hashes) and the partner's URLs. Requests really go to the listener; the public URL need
// not resolve.
const (
	publicURL   = "https://switchboard.example"
	partnerHost = "https://partner.example"
	buyerHost   = "https://buyer.example"
	buyerToken  = "buyer-api-token"
	buyerSecret = "buyer-api-secret"
	pubToken    = "publisher-api-token"
	pubSecret   = "publisher-api-secret"
)

// guide is one generated document: its template under testdata and its output.
type guide struct{ tmpl, out string }

var guides = []guide{
	{"testdata/buyer-integration.md.tmpl", "../../docs/buyer-integration.md"},
	{"testdata/supply-api.md.tmpl", "../../docs/supply-api.md"},
}

// recorder performs requests and keeps each exchange, normalized, under a name.
type recorder struct {
	t     *testing.T
	s     *apptest.Server
	ex    map[string]string
	subst [][2]string // real value → placeholder, applied in order
}

// volatile matches the values that differ from run to run and are not learned one by one.
var volatile = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`token=[A-Za-z0-9_\-.%]+`), "token=<token>"},
	{regexp.MustCompile(`tr_sech=[0-9a-f]{40}`), "tr_sech=<tr_sech>"},
	{regexp.MustCompile(`security_hash=[0-9a-f]{40}`), "security_hash=<link_hash>"},
	{regexp.MustCompile(`sech=[0-9a-f]{64}`), "sech=<sech>"},
	{regexp.MustCompile(`sig=[0-9a-f]{32}`), "sig=<signature>"},
	{regexp.MustCompile(`"sech": "[0-9a-f]*"`), `"sech": "<sech>"`},
	{regexp.MustCompile(`"ts": [0-9]+`), `"ts": <ts>`},
}

func (r *recorder) learn(real, placeholder string) {
	if real != "" {
		r.subst = append(r.subst, [2]string{real, placeholder})
		// Longest first, so that a value is not replaced inside a longer one.
		sort.SliceStable(r.subst, func(i, j int) bool { return len(r.subst[i][0]) > len(r.subst[j][0]) })
	}
}

func (r *recorder) normalize(s string) string {
	for _, p := range r.subst {
		s = strings.ReplaceAll(s, p[0], p[1])
	}
	for _, v := range volatile {
		s = v.re.ReplaceAllString(s, v.repl)
	}
	return s
}

// keep stores an exchange under name.
func (r *recorder) keep(name, text string) {
	r.t.Helper()
	if _, dup := r.ex[name]; dup {
		r.t.Fatalf("exchange %s recorded twice", name)
	}
	r.ex[name] = strings.TrimRight(text, "\n") // normalized when rendered: later values are learned too
}

// request builds a request to the server for path (relative to the public URL or the
// listener), with headers given as name, value pairs.
func (r *recorder) request(method, path string, body any, headers ...string) *http.Request {
	r.t.Helper()
	path = strings.TrimPrefix(path, publicURL)
	req := r.s.NewRequest(r.t, method, path, body)
	req.Header.Del("Accept")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return req
}

// do sends req, checks the status and records the exchange (unless name is "").
func (r *recorder) do(name string, req *http.Request, body any, want int) apptest.Response {
	r.t.Helper()
	resp := r.s.Send(r.t, req)
	if resp.Status != want {
		r.t.Fatalf("%s: %s %s: status %d, want %d; body %s", name, req.Method, req.URL, resp.Status, want, resp.Body)
	}
	if name != "" {
		r.keep(name, render(req, body, resp))
	}
	return resp
}

// shownRequestHeaders and shownResponseHeaders are the headers an example shows.
var (
	shownRequestHeaders  = []string{"X-Api-Token", "X-User-Identifier", "X-Device-Identifier"}
	shownResponseHeaders = []string{"Content-Type", "Location", "Allow", "Retry-After", "Www-Authenticate"}
)

// render writes one exchange: request line, headers that matter, body; status line,
// headers that matter, body (JSON indented; long top-level arrays cut after two items).
func render(req *http.Request, body any, resp apptest.Response) string {
	var b strings.Builder
	b.WriteString(req.Method + " " + req.URL.RequestURI() + "\n")
	if req.Header.Get("Authorization") != "" {
		b.WriteString("Authorization: Basic <base64 of email:api_token>\n")
	}
	for _, h := range shownRequestHeaders {
		if v := req.Header.Get(h); v != "" {
			b.WriteString(h + ": " + v + "\n")
		}
	}
	if form, ok := body.(url.Values); ok {
		b.WriteString("Content-Type: application/x-www-form-urlencoded\n\n" + form.Encode() + "\n")
	} else if body != nil {
		b.WriteString("Content-Type: application/json\n\n")
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		_ = enc.Encode(body)
	}
	b.WriteString("\nHTTP " + strconv.Itoa(resp.Status) + " " + http.StatusText(resp.Status) + "\n")
	for _, h := range shownResponseHeaders {
		if v := resp.Header.Get(h); v != "" {
			b.WriteString(h + ": " + v + "\n")
		}
	}
	switch {
	case len(resp.Body) > maxHTML && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html"):
		b.WriteString("\n<!doctype html>… (the page)\n")
	case len(resp.Body) > 0:
		b.WriteString("\n" + prettyBody(resp.Body) + "\n")
	}
	return b.String()
}

// maxHTML is the size past which an HTML page is not shown.
const maxHTML = 1000

// maxItems is how many items of a long top-level JSON array an example shows.
const maxItems = 2

func prettyBody(body []byte) string {
	var items []json.RawMessage
	if json.Unmarshal(body, &items) == nil && len(items) > maxItems {
		var b bytes.Buffer
		b.WriteString("[\n")
		for _, it := range items[:maxItems] {
			var one bytes.Buffer
			_ = json.Indent(&one, it, "  ", "  ")
			b.WriteString("  " + one.String() + ",\n")
		}
		fmt.Fprintf(&b, "  … %d more\n]", len(items)-maxItems)
		return b.String()
	}
	var out bytes.Buffer
	if json.Indent(&out, body, "", "  ") == nil {
		return out.String()
	}
	return string(body)
}

// csrfRe finds a page form's CSRF value.
var csrfRe = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// partnerServer is the supply partner's postback receiver: it keeps every request.
type partnerServer struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []*http.Request
}

func (p *partnerServer) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.seen = append(p.seen, r)
	p.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// wait returns the first postback whose query has status, waiting up to 15 s.
func (p *partnerServer) wait(t *testing.T, status string) *http.Request {
	t.Helper()
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		p.mu.Lock()
		for _, r := range p.seen {
			if r.URL.Query().Get("status") == status {
				p.mu.Unlock()
				return r
			}
		}
		p.mu.Unlock()
	}
	t.Fatalf("no postback with status %s", status)
	return nil
}

// hookServer is the buyer's webhook receiver: it keeps every delivery's headers and body.
type hookServer struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []hookDelivery
}

// hookDelivery is one webhook POST as received.
type hookDelivery struct {
	path   string
	header http.Header
	body   []byte
}

func (h *hookServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.seen = append(h.seen, hookDelivery{r.URL.RequestURI(), r.Header.Clone(), body})
	h.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// wait returns the first delivery whose body contains part, waiting up to 15 s.
func (h *hookServer) wait(t *testing.T, part string) hookDelivery {
	t.Helper()
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		h.mu.Lock()
		for _, d := range h.seen {
			if strings.Contains(string(d.body), part) {
				h.mu.Unlock()
				return d
			}
		}
		h.mu.Unlock()
	}
	t.Fatalf("no webhook delivery with %s", part)
	return hookDelivery{}
}

// keepHook checks a webhook delivery's signature (with the production verifier and an HMAC
// computed here) and keeps it as the guide shows it, its volatile values replaced.
func (r *recorder) keepHook(name string, d hookDelivery) {
	r.t.Helper()
	ts, sig := d.header.Get(payout.WebhookTimestampHeader), d.header.Get(payout.WebhookSignatureHeader)
	if sig != hmacHex(sha256.New, buyerSecret, ts+"."+string(d.body)) ||
		!payout.VerifyWebhook(buyerSecret, ts, sig, d.body, time.Now(), 5*time.Minute) {
		r.t.Fatalf("webhook %s: signature %s does not verify", d.body, sig)
	}
	var e struct {
		EventID    string `json:"event_id"`
		OccurredAt string `json:"occurred_at"`
	}
	if err := json.Unmarshal(d.body, &e); err != nil || e.EventID != d.header.Get(payout.WebhookEventHeader) {
		r.t.Fatalf("webhook body %s: %v", d.body, err)
	}
	// The volatile values are replaced in this exchange only: a timestamp, learned, would
	// also replace equal numbers elsewhere (an impanel's ts of the same second).
	body := strings.NewReplacer(e.EventID, "<event_id>", e.OccurredAt, "<occurred_at>").Replace(string(d.body))
	r.keep(name, "POST "+d.path+"\nHost: buyer.example\nContent-Type: "+d.header.Get("Content-Type")+
		"\n"+payout.WebhookEventHeader+": <event_id>\n"+payout.WebhookTimestampHeader+": <timestamp>"+
		"\n"+payout.WebhookSignatureHeader+": <signature>\n\n"+body+"\n")
}

// callbackURI is a buyer's signed callback (path and query).
func callbackURI(customerID, outcome, tid, secret string) string {
	u := "/router/customers/" + customerID + "/cps/" + outcome + "?tid=" + url.QueryEscape(tid)
	return u + "&tr_sech=" + hmacHex(sha1.New, secret, publicURL+u)
}

// hmacHex is an HMAC computed here, independently of the production code, to check both.
func hmacHex(h func() hash.Hash, key, msg string) string {
	m := hmac.New(h, []byte(key))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

func queryOf(t *testing.T, raw string) url.Values {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("parse %q: %v", raw, err)
	}
	return u.Query()
}

// TestGuides records the exchanges, renders both guides and compares them with the
// committed files (or rewrites them with -update).
func TestGuides(t *testing.T) {
	partner := &partnerServer{}
	partner.srv = httptest.NewServer(http.HandlerFunc(partner.serve))
	defer partner.srv.Close()

	s := apptest.Start(t, apptest.Options{PublicURL: publicURL, RateLimit: -1,
		Configure: func(c *app.Config) { c.Postbacks.Poll, c.Postbacks.AllowPrivate = 100*time.Millisecond, true }})
	ctx := context.Background()
	buyer, _, err := s.DB.Accounts.CreateBuyerWith(ctx, "buyer@example.test", "Example Research", s.Env,
		persistence.BuyerCredentials{Token: buyerToken, Secret: buyerSecret})
	if err != nil {
		t.Fatal(err)
	}
	pubRow, _, err := s.DB.Accounts.CreatePublisherWith(ctx, persistence.NewPublisher{Name: "Example Games", CurrencyName: "coins",
		ExchangeRate: 100, RevenueShare: 0.5, RedirectURL: partnerHost + "/back?app=7",
		PostbackURL: partner.srv.URL + "/postback", Environment: s.Env}, pubToken, pubSecret)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.App.Supply.ReloadPublishers(ctx); err != nil {
		t.Fatal(err)
	}
	hooks := &hookServer{}
	hooks.srv = httptest.NewServer(http.HandlerFunc(hooks.serve))
	defer hooks.srv.Close()
	r := &recorder{t: t, s: s, ex: map[string]string{}}
	r.learn(buyer.CustomerID, "<customer_id>")
	r.learn(partner.srv.URL, partnerHost)
	r.learn(hooks.srv.URL, buyerHost)

	api := func(name, method, path string, body any, want int) apptest.Response {
		t.Helper()
		req := r.request(method, path, body)
		req.SetBasicAuth(buyer.Email, buyerToken)
		return r.do(name, req, body, want)
	}
	supplyReq := func(method, path, user string, body any) *http.Request {
		t.Helper()
		h := []string{"X-Api-Token", pubToken}
		if user != "" {
			h = append(h, "X-User-Identifier", user)
		}
		return r.request(method, path, body, h...)
	}
	impanelBody := func(user string, ts int64, profile ...map[string]any) map[string]any {
		return map[string]any{"country_id": 1, "ts": ts, "sech": supply.Sech(pubSecret, user, ts), "profile_data": profile}
	}
	answer := func(q int, values ...any) map[string]any { return map[string]any{"question_id": q, "values": values} }

	// --- The buyer sets up a campaign whose survey link asks for {LINK_HASH}.
	link := "https://survey.example/s/coffee?rid={RESPONDENT_ID}&age={AGE}&security_hash={LINK_HASH}"
	c := api("campaign_create", "POST", "/api/v1/campaigns", map[string]any{"name": "Coffee habits", "incidence": 40,
		"length_of_interview": 12, "country_language_id": 1, "cpi": "2.50", "supplier_link": link}, 201).Object(t)
	id := int64(c["id"].(float64))
	campaign := "/api/v1/campaigns/" + strconv.FormatInt(id, 10)
	api("quota_create", "POST", campaign+"/campaign_quotas", map[string]any{"name": "Adults", "num_respondents": 100,
		"campaign_qualifications": []map[string]any{{"question_id": 43, "pre_codes": []int{1, 2}}}}, 201)
	api("webhook_set", "PUT", "/api/v1/webhook", map[string]any{"url": hooks.srv.URL + "/switchboard/events"}, 200)
	api("webhook_bad_url", "PUT", "/api/v1/webhook", map[string]any{"url": "ftp://buyer.example/events"}, 422)
	var hookTest struct {
		EventID    string `json:"event_id"`
		DurationMS int64  `json:"duration_ms"`
	}
	api("webhook_test", "POST", "/api/v1/webhook/test", nil, 200).Decode(t, &hookTest)
	r.learn(hookTest.EventID, "<test_event_id>")
	r.learn(fmt.Sprintf(`"duration_ms": %d`, hookTest.DurationMS), `"duration_ms": <ms>`)
	r.keepHook("webhook_test_event", hooks.wait(t, hookTest.EventID))
	api("campaign_activate", "PUT", campaign, map[string]any{"status": 2}, 200)
	statusHook := hooks.wait(t, `"new_status": 2`)
	r.keepHook("webhook_status_changed", statusHook)
	// The delivery log, once the delivery is recorded.
	var event struct {
		EventID string `json:"event_id"`
	}
	if err := json.Unmarshal(statusHook.body, &event); err != nil {
		t.Fatal(err)
	}
	var log struct {
		Deliveries []struct {
			Status      string `json:"status"`
			CreatedAt   string `json:"created_at"`
			DeliveredAt string `json:"delivered_at"`
		} `json:"deliveries"`
	}
	for end := time.Now().Add(10 * time.Second); len(log.Deliveries) == 0 || log.Deliveries[0].Status != "delivered"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the status change's delivery is not recorded: %+v", log)
		}
		api("", "GET", "/api/v1/webhook/deliveries", nil, 200).Decode(t, &log)
	}
	api("webhook_deliveries", "GET", "/api/v1/webhook/deliveries", nil, 200)
	r.learn(event.EventID, "<event_id>")
	r.learn(log.Deliveries[0].CreatedAt, "<created_at>")
	r.learn(log.Deliveries[0].DeliveredAt, "<delivered_at>")

	// --- redirect_test: a test session through the buyer's own link and callback.
	var rt struct {
		URL string `json:"redirect_test_url"`
	}
	api("redirect_test", "GET", campaign+"/redirect_test", nil, 200).Decode(t, &rt)
	test := r.do("test_start", r.request("GET", rt.URL, nil), nil, http.StatusFound)
	testLink := test.Header.Get("Location")
	testTID := queryOf(t, testLink).Get("id")
	checkLinkHash(t, testLink, buyerSecret)
	if rid := queryOf(t, testLink).Get("rid"); rid != "TEST"+testTID[:12] {
		t.Fatalf("test session respondent id %q, want TEST and the tid's first 12 characters", rid)
	}
	r.learn(testTID, "<test_tid>")
	r.learn("TEST"+testTID[:12], "<test_respondent_id>")
	page := r.do("test_callback", r.request("GET", callbackURI(buyer.CustomerID, "complete", testTID, buyerSecret), nil), nil, 200)
	if !strings.Contains(string(page.Body), `<strong id="hash">valid</strong>`) {
		t.Fatalf("test page %s", page.Body)
	}

	// --- The partner: catalog, impanel, offers.
	r.do("countries", supplyReq("GET", "/supply_api/v4/countries", "", nil), nil, 200)
	r.do("qualifications", supplyReq("GET", "/supply_api/v4/qualifications?country_id=1", "", nil), nil, 200)
	r.do("campaigns_unprofiled", supplyReq("GET", "/supply_api/v4/campaigns?user_ip=73.15.20.9&device_type=1", "user-1002", nil), nil, 200)
	now := time.Now().Unix()
	body := impanelBody("user-1001", now, answer(42, 34), answer(43, 2), answer(45, "94105"))
	r.do("impanel", supplyReq("POST", "/supply_api/v4/players/impanel", "user-1001", body), body, 200)
	bad := impanelBody("user-1001", now, answer(42, 34), answer(43, 2), answer(45, "94105"))
	bad["sech"] = supply.Sech("another-secret", "user-1001", now)
	r.do("impanel_bad_sech", supplyReq("POST", "/supply_api/v4/players/impanel", "user-1001", bad), bad, 401)
	missing := impanelBody("user-1003", now, answer(42, 34))
	r.do("impanel_missing", supplyReq("POST", "/supply_api/v4/players/impanel", "user-1003", missing), missing, 422)
	r.do("supply_401", r.request("GET", "/supply_api/v4/countries", nil), nil, 401)
	// The hosted profiler behind the "profile" survey, and a support page.
	var unprofiled struct {
		Surveys []struct {
			OfferEntryURL string `json:"offer_entry_url"`
			SupportURL    string `json:"support_url"`
		}
	}
	r.do("", supplyReq("GET", "/supply_api/v4/campaigns?user_ip=73.15.20.9&device_type=1", "user-1005", nil), nil, 200).Decode(t, &unprofiled)
	profile := r.do("profile_page", r.request("GET", unprofiled.Surveys[0].OfferEntryURL, nil, "Accept-Language", "en-US"), nil, 200)
	csrf := csrfRe.FindStringSubmatch(string(profile.Body))
	if csrf == nil {
		t.Fatalf("no csrf in the profiler %s", profile.Body)
	}
	r.learn(csrf[1], "<csrf>")
	profileToken := queryOf(t, unprofiled.Surveys[0].OfferEntryURL).Get("token")
	form := url.Values{"token": {profileToken}, "csrf": {csrf[1]}, "country": {"1"}, "q42": {"29"}, "q43": {"1"}, "q45": {"60614"}}
	post := r.request("POST", "/supply_api/v4/profile", form.Encode(), "Content-Type", "application/x-www-form-urlencoded",
		"Sec-Fetch-Site", "same-origin")
	profiled := r.do("profile_post", post, form, http.StatusSeeOther)
	pu, _ := url.Parse(profiled.Header.Get("Location"))
	if !payout.VerifySech(pu.RawQuery, pubSecret) {
		t.Fatalf("profiled redirect %s does not verify", pu)
	}
	r.do("support_page", r.request("GET", unprofiled.Surveys[0].SupportURL, nil, "Accept-Language", "en-US"), nil, 200)
	r.do("campaigns_400", supplyReq("GET", "/supply_api/v4/campaigns?device_type=1", "user-1001", nil), nil, 400)

	// Offers: wait (unrecorded) until every engine has the activated campaign.
	offersPath := "/supply_api/v4/campaigns?user_ip=73.15.20.9&device_type=1"
	entryURLFor := func(user string, id int64) string {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			var o struct {
				Surveys []struct {
					Identifier    string `json:"identifier"`
					OfferEntryURL string `json:"offer_entry_url"`
				}
			}
			resp := r.do("", supplyReq("GET", offersPath, user, nil), nil, 200)
			resp.Decode(t, &o)
			for _, sv := range o.Surveys {
				if sv.Identifier == strconv.FormatInt(id, 10) {
					return sv.OfferEntryURL
				}
			}
		}
		t.Fatalf("campaign %d never offered to %s", id, user)
		return ""
	}
	entryURL := func(user string) string { t.Helper(); return entryURLFor(user, id) }
	entry := entryURL("user-1001")
	checkOfferToken(t, s, entry, id)
	r.do("campaigns", supplyReq("GET", offersPath, "user-1001", nil), nil, 200)

	// --- Entry: the participant goes to the buyer's survey.
	in := r.do("entry", r.request("GET", entry, nil), nil, http.StatusFound)
	surveyLink := in.Header.Get("Location")
	checkLinkHash(t, surveyLink, buyerSecret)
	q := queryOf(t, surveyLink)
	tid := q.Get("id")
	r.learn(tid, "<tid>")
	r.learn(q.Get("rid"), "<respondent_id>")
	if again := r.do("entry_again", r.request("GET", entry, nil), nil, http.StatusFound); again.Header.Get("Location") != surveyLink {
		t.Fatalf("the offer link followed again went to %s, want the same session's %s", again.Header.Get("Location"), surveyLink)
	}
	r.learn("token=forged", "token=<forged>")
	r.do("entry_forged", r.request("GET", "/supply_api/v4/entry?token=forged", nil), nil, http.StatusForbidden)

	// --- The buyer's callback, and what the partner gets.
	done := r.do("callback_complete", r.request("GET", callbackURI(buyer.CustomerID, "complete", tid, buyerSecret), nil), nil, http.StatusFound)
	back := done.Header.Get("Location")
	u, _ := url.Parse(back)
	if !payout.VerifySech(u.RawQuery, pubSecret) {
		t.Fatalf("partner redirect %s does not verify", back)
	}
	r.do("entry_refused", r.request("GET", entry, nil), nil, http.StatusFound)
	r.do("callback_repeat", r.request("GET", callbackURI(buyer.CustomerID, "complete", tid, buyerSecret), nil), nil, http.StatusFound)
	r.do("callback_conflict", r.request("GET", callbackURI(buyer.CustomerID, "over_quota", tid, buyerSecret), nil), nil, http.StatusConflict)
	wrong := callbackURI(buyer.CustomerID, "complete", tid, "not-the-secret")
	r.learn(wrong[strings.LastIndex(wrong, "tr_sech="):], "tr_sech=<a wrong hash>")
	r.do("callback_bad_hash", r.request("GET", wrong, nil), nil, http.StatusForbidden)
	r.do("callback_unknown", r.request("GET", callbackURI(buyer.CustomerID, "complete", "no-such-tid", buyerSecret), nil), nil, http.StatusNotFound)
	pb := partner.wait(t, "complete")
	if !payout.VerifySech(pb.URL.RawQuery, pubSecret) {
		t.Fatalf("postback %s does not verify", pb.URL)
	}
	r.keep("postback_complete", "GET "+pb.URL.RequestURI()+"\nHost: partner.example\n")

	// --- A second complete, then reconcile accepting only the first: a reversal.
	body2 := impanelBody("user-1004", now, answer(42, 51), answer(43, 1), answer(45, "10001"))
	r.do("", supplyReq("POST", "/supply_api/v4/players/impanel", "user-1004", body2), body2, 200)
	in2 := r.do("", r.request("GET", entryURL("user-1004"), nil), nil, http.StatusFound)
	tid2 := queryOf(t, in2.Header.Get("Location")).Get("id")
	r.learn(tid2, "<tid_2>")
	r.do("", r.request("GET", callbackURI(buyer.CustomerID, "complete", tid2, buyerSecret), nil), nil, http.StatusFound)
	partner.wait(t, "complete")
	api("reconcile", "POST", campaign+"/reconcile", map[string]any{"accepted_ids": []string{tid}, "purchase_order": "PO-1001"}, 200)
	rev := partner.wait(t, "reversed")
	if !payout.VerifySech(rev.URL.RawQuery, pubSecret) {
		t.Fatalf("reversal %s does not verify", rev.URL)
	}
	r.keep("postback_reversed", "GET "+rev.URL.RequestURI()+"\nHost: partner.example\n")

	// --- Statements (docs/payouts.md, "Statements"): this month so far, from the ledger,
	// for the buyer and for the partner: two completes, one reversed by the reconcile.
	month := time.Now().UTC().Format("2006-01")
	r.learn("month="+month, "month=<this_month>")
	r.learn(`"month": "`+month+`"`, `"month": "<this_month>"`)
	api("statement", "GET", "/api/v1/statements?month="+month, nil, 200)
	r.do("partner_statement", supplyReq("GET", "/supply_api/v4/statements?month="+month, "", nil), nil, 200)

	// --- Supplier controls (docs/rules.md §5): the partners a buyer may exclude, and one
	// campaign excluding the guide's partner.
	api("suppliers", "GET", "/api/v1/suppliers", nil, 200)
	api("campaign_exclude_suppliers", "PUT", campaign, map[string]any{"excluded_supplier_ids": []int64{pubRow.ID}}, 200)
	api("campaign_exclude_unknown_supplier", "PUT", campaign, map[string]any{"excluded_supplier_ids": []int64{pubRow.ID + 1000}}, 422)

	// --- Re-routing (docs/rules.md §10): the publisher turns it on; a disqualify at one
	// survey sends the participant straight on to the next, and the chain's result reaches
	// the partner once, with attempts.
	attempts := 2
	if _, err := s.DB.Accounts.UpdatePublisher(ctx, pubRow.ID, persistence.PublisherChange{RerouteAttempts: &attempts}); err != nil {
		t.Fatal(err)
	}
	if err := s.App.Supply.ReloadPublishers(ctx); err != nil {
		t.Fatal(err)
	}
	surveyCampaign := func(name, cpi, link string) int64 {
		c := api("", "POST", "/api/v1/campaigns", map[string]any{"name": name, "incidence": 40, "length_of_interview": 12,
			"country_language_id": 1, "cpi": cpi, "supplier_link": link}, 201).Object(t)
		cid := int64(c["id"].(float64))
		path := "/api/v1/campaigns/" + strconv.FormatInt(cid, 10)
		api("", "POST", path+"/campaign_quotas", map[string]any{"name": "Adults", "num_respondents": 100,
			"campaign_qualifications": []map[string]any{{"question_id": 43, "pre_codes": []int{1, 2}}}}, 201)
		api("", "PUT", path, map[string]any{"status": 2}, 200)
		return cid
	}
	tea := surveyCampaign("Tea habits", "3.00", "https://survey.example/s/tea?rid={RESPONDENT_ID}&security_hash={LINK_HASH}")
	juice := surveyCampaign("Juice habits", "2.00", "https://survey.example/s/juice?rid={RESPONDENT_ID}&security_hash={LINK_HASH}")
	body3 := impanelBody("user-1006", now, answer(42, 40), answer(43, 1), answer(45, "30301"))
	r.do("", supplyReq("POST", "/supply_api/v4/players/impanel", "user-1006", body3), body3, 200)
	// The re-route finds juice in the engine, which hears of it by NOTIFY: wait (without a
	// request the partner's figures would count) until it has it; on a busy machine the
	// callback below could come first.
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, ok := s.App.Engine.Snapshot().Campaign(juice); ok {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("campaign %d never reached the engine", juice)
		}
	}
	in3 := r.do("", r.request("GET", entryURLFor("user-1006", tea), nil), nil, http.StatusFound)
	q3 := queryOf(t, in3.Header.Get("Location"))
	tidA := q3.Get("id")
	r.learn(tidA, "<tid_a>")
	r.learn(q3.Get("rid"), "<respondent_id_3>")
	hop := r.do("reroute_hop", r.request("GET", callbackURI(buyer.CustomerID, "disqualified", tidA, buyerSecret), nil), nil, http.StatusFound)
	juiceLink := hop.Header.Get("Location")
	if !strings.HasPrefix(juiceLink, "https://survey.example/s/juice?") {
		t.Fatalf("re-routed to %s, want the juice survey", juiceLink)
	}
	checkLinkHash(t, juiceLink, buyerSecret)
	tidB := queryOf(t, juiceLink).Get("id")
	r.learn(tidB, "<tid_b>")
	fin := r.do("reroute_final", r.request("GET", callbackURI(buyer.CustomerID, "complete", tidB, buyerSecret), nil), nil, http.StatusFound)
	if fu, _ := url.Parse(fin.Header.Get("Location")); !payout.VerifySech(fu.RawQuery, pubSecret) || fu.Query().Get("attempts") != "2" ||
		fu.Query().Get("tid") != tidB {
		t.Fatalf("chain's partner redirect %s, want tid_b, attempts=2, signed", fu)
	}
	var chainPB *http.Request
	for end := time.Now().Add(15 * time.Second); chainPB == nil && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		partner.mu.Lock()
		for _, req := range partner.seen {
			if rq := req.URL.Query(); rq.Get("tid") == tidA {
				t.Fatalf("a postback for the chain's first session: %s", req.URL)
			} else if rq.Get("tid") == tidB {
				chainPB = req
			}
		}
		partner.mu.Unlock()
	}
	if chainPB == nil || !payout.VerifySech(chainPB.URL.RawQuery, pubSecret) {
		t.Fatalf("no signed postback for the chain (%v)", chainPB)
	}
	r.keep("postback_reroute", "GET "+chainPB.URL.RequestURI()+"\nHost: partner.example\n")

	// --- Partner tools: hourly stats (offers counted in memory, written every minute: the
	// guide flushes them), the delivery log and a test postback.
	if err := s.App.Supply.FlushOffers(ctx); err != nil {
		t.Fatal(err)
	}
	hour := time.Now().UTC().Truncate(time.Hour)
	from, to := hour.Format(time.RFC3339), hour.Add(time.Hour).Format(time.RFC3339)
	r.learn(from, "<this_hour>")
	r.learn(to, "<next_hour>")
	r.do("stats", supplyReq("GET", "/supply_api/v4/stats?from="+from+"&to="+to, "", nil), nil, 200)
	r.do("stats_bad", supplyReq("GET", "/supply_api/v4/stats?from="+to+"&to="+from, "", nil), nil, 400)
	r.do("postbacks_list", supplyReq("GET", "/supply_api/v4/postbacks?status=retrying,dead", "", nil), nil, 200)
	testBody := map[string]any{"user_identifier": "user-1001"}
	var tested struct {
		URL        string `json:"url"`
		DurationMS int64  `json:"duration_ms"`
	}
	r.do("postback_test", supplyReq("POST", "/supply_api/v4/postbacks/test", "", testBody), testBody, 200).Decode(t, &tested)
	if tu, err := url.Parse(tested.URL); err != nil || !payout.VerifySech(tu.RawQuery, pubSecret) {
		t.Fatalf("test postback %s does not verify", tested.URL)
	} else {
		r.learn(tu.Query().Get("tid"), "test-<random>")
	}
	r.learn(fmt.Sprintf(`"duration_ms": %d`, tested.DurationMS), `"duration_ms": <ms>`)

	for k, v := range r.ex {
		r.ex[k] = r.normalize(v)
	}
	data := map[string]any{"ex": r.ex, "w": workedExamples(t)}
	for _, g := range guides {
		checkGuide(t, g, data)
	}
}

// checkOfferToken checks what the supply guide says of an offer_entry_url's token: signed by
// the service (internal/entrytoken), an offer naming the publisher, user, device and
// campaign, valid 30 minutes.
func checkOfferToken(t *testing.T, s *apptest.Server, entry string, campaignID int64) {
	t.Helper()
	secret, err := s.DB.Accounts.ServiceKey(context.Background(), persistence.EntryKeyName)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Unix()
	c, err := entrytoken.NewKey(secret).Verify(queryOf(t, entry).Get("token"), now)
	if err != nil {
		t.Fatalf("offer token: %v", err)
	}
	if c.Kind != entrytoken.KindOffer || c.CampaignID != campaignID || c.PublisherID == 0 || c.ParticipantID == 0 ||
		c.DeviceType != 1 || c.Expires-now > entrytoken.TTL || c.Expires-now < entrytoken.TTL-60 || entrytoken.TTL != 30*60 {
		t.Fatalf("offer token claims %+v", c)
	}
}

// checkLinkHash checks the security_hash of a supplier link, independently of the code
// that made it: HMAC-SHA1 of the link without "&security_hash=...".
func checkLinkHash(t *testing.T, link, secret string) {
	t.Helper()
	i := strings.LastIndex(link, "&security_hash=")
	if i < 0 {
		t.Fatalf("no security_hash in %s", link)
	}
	if got, want := link[i+len("&security_hash="):], hmacHex(sha1.New, secret, link[:i]); got != want {
		t.Fatalf("security_hash of %s is %s, want %s", link, got, want)
	}
}

func checkGuide(t *testing.T, g guide, data map[string]any) {
	t.Helper()
	tm, err := template.New(filepath.Base(g.tmpl)).Option("missingkey=error").Funcs(template.FuncMap{
		"ex": func(name string) (string, error) {
			e, ok := data["ex"].(map[string]string)[name]
			if !ok {
				return "", fmt.Errorf("no exchange %q", name)
			}
			return "```http\n" + e + "\n```", nil
		},
	}).ParseFiles(g.tmpl)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := tm.Execute(&b, data); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	if *update {
		if err := os.WriteFile(g.out, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(g.out)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/guides -update)", err)
	}
	if string(want) != got {
		t.Errorf("%s is out of date: run go test ./cmd/guides -update", g.out)
	}
}
