package admin_test

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/persistence"
)

var update = flag.Bool("update", false, "rewrite golden files and docs/api.md")

const goldenDir = "testdata/golden"

// baseURL replaces the server's public URL in recorded examples.
const baseURL = "{base_url}"

// recorder performs requests, renders each exchange as text and compares it with (or, with
// -update, writes it to) testdata/golden/<name>.golden.
type recorder struct {
	t    *testing.T
	s    *apptest.Server
	seen map[string]bool
	// subst replaces values that differ from run to run (a buyer's random customer id).
	subst map[string]string
}

func newRecorder(t *testing.T, s *apptest.Server) *recorder {
	return &recorder{t: t, s: s, seen: map[string]bool{}}
}

// testSig matches the signature of a redirect_test_url.
var testSig = regexp.MustCompile(`sig=[0-9a-f]{32}`)

// do sends req (body is the JSON value it carries, for the record) and checks the status.
func (r *recorder) do(name string, req *http.Request, body any, want int) apptest.Response {
	r.t.Helper()
	resp := r.s.Send(r.t, req)
	if resp.Status != want {
		r.t.Fatalf("%s: status %d, want %d; body %s", name, resp.Status, want, resp.Body)
	}
	text := render(r.s, req, body, resp)
	for old, placeholder := range r.subst {
		text = strings.ReplaceAll(text, old, placeholder)
	}
	// Test-session links are signed with the buyer's random secret.
	text = testSig.ReplaceAllString(text, "sig=<signature>")
	r.check(name, text)
	return resp
}

// buyer sends an authenticated request.
func (r *recorder) buyer(name string, b *apptest.Buyer, method, path string, body any, want int) apptest.Response {
	r.t.Helper()
	return r.do(name, b.Request(r.t, method, path, body), body, want)
}

func (r *recorder) check(name, got string) {
	r.t.Helper()
	if r.seen[name] {
		r.t.Fatalf("golden %s recorded twice", name)
	}
	r.seen[name] = true
	file := filepath.Join(goldenDir, name+".golden")
	if *update {
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			r.t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		r.t.Fatalf("%v (run go test ./admin -run Golden -update)", err)
	}
	if string(want) != got {
		r.t.Errorf("%s differs from the golden file (run with -update if intended)\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// shownHeaders are the response headers an example shows.
var shownHeaders = []string{"Content-Type", "Content-Disposition", "Allow", "Retry-After", "Www-Authenticate", "X-Total-Count"}

// render writes one exchange as text: request line, request headers that matter, pretty
// JSON body; status line, headers that matter, pretty JSON body. The public URL becomes
// {base_url}; ids are deterministic because every golden run starts from a fresh database.
func render(s *apptest.Server, req *http.Request, body any, resp apptest.Response) string {
	var b strings.Builder
	b.WriteString(req.Method + " " + req.URL.RequestURI() + "\n")
	if req.Header.Get("Authorization") != "" {
		b.WriteString("Authorization: Basic <base64 of email:api_token>\n")
	}
	if a := req.Header.Get("Accept"); a != "" && a != "application/json" {
		b.WriteString("Accept: " + a + "\n")
	}
	if body != nil {
		b.WriteString("Content-Type: application/json\n\n")
		switch v := body.(type) {
		case string:
			b.WriteString(v)
		case []byte:
			b.WriteString(string(v))
		default:
			j, _ := json.MarshalIndent(v, "", "  ")
			b.Write(j)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nHTTP " + strconv.Itoa(resp.Status) + " " + http.StatusText(resp.Status) + "\n")
	for _, h := range shownHeaders {
		if v := resp.Header.Get(h); v != "" {
			b.WriteString(http.CanonicalHeaderKey(h) + ": " + v + "\n")
		}
	}
	if len(resp.Body) > 0 {
		var out bytes.Buffer
		if json.Indent(&out, resp.Body, "", "  ") != nil {
			out.Reset()
			out.Write(resp.Body)
		}
		b.WriteString("\n" + strings.ReplaceAll(out.String(), s.PublicURL, baseURL) + "\n")
	}
	return b.String()
}

// seedSession stores a publisher, a participant known to buyer b as respondentID and one
// session of campaign with transaction id tid, as the supply side would.
func seedSession(t testing.TB, s *apptest.Server, b *apptest.Buyer, campaign int64, user, respondentID, tid string) int64 {
	t.Helper()
	ctx := context.Background()
	var pub int64
	err := s.DB.Pool.QueryRow(ctx, `SELECT id FROM publishers ORDER BY id LIMIT 1`).Scan(&pub)
	if err != nil {
		p, _, err := s.DB.Accounts.CreatePublisher(ctx, persistence.NewPublisher{Name: "Panel", CurrencyName: "coins",
			ExchangeRate: 100, RevenueShare: 0.5, RedirectURL: "https://panel.example/back", Environment: s.Env})
		if err != nil {
			t.Fatal(err)
		}
		pub = p.ID
	}
	var participant int64
	if err := s.DB.Pool.QueryRow(ctx, `INSERT INTO participants (publisher_id, user_identifier, country_id) VALUES ($1, $2, 1) RETURNING id`,
		pub, user).Scan(&participant); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB.Pool.Exec(ctx, `INSERT INTO respondents (buyer_id, participant_id, respondent_id) VALUES ($1, $2, $3)`,
		b.ID, participant, respondentID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB.Pool.Exec(ctx, `INSERT INTO sessions (tid, campaign_id, buyer_id, publisher_id, participant_id) VALUES ($1, $2, $3, $4, $5)`,
		tid, campaign, b.ID, pub, participant); err != nil {
		t.Fatal(err)
	}
	return participant
}

func hashedMAID(adID string) string {
	h := sha1.Sum([]byte(strings.ToUpper(adID)))
	return strings.ToUpper(hex.EncodeToString(h[:]))
}

// TestGolden walks every route once through a realistic session of one buyer and records
// each exchange; docs/api.md is generated from these records (TestAPIDoc).
func TestGolden(t *testing.T) {
	s := apptest.Start(t, apptest.Options{})
	b := s.NewBuyer(t)
	other := s.NewBuyer(t)
	r := newRecorder(t, s)

	r.buyer("country_languages", b, "GET", "/api/v1/country_languages", nil, 200)
	r.buyer("qualifications", b, "GET", "/api/v1/qualifications?country_language_id=1", nil, 200)
	r.buyer("qualification", b, "GET", "/api/v1/qualifications/43?country_language_id=1", nil, 200)
	r.buyer("qualifications_missing_query", b, "GET", "/api/v1/qualifications", nil, 400)

	r.buyer("adhoc_account_create", b, "POST", "/api/v1/adhoc_accounts",
		map[string]any{"buyer_name": "Acme Research", "buyer_identifier": "acme-01"}, 201)

	r.buyer("webhook_set", b, "PUT", "/api/v1/webhook", map[string]any{"url": "https://buyer.example/switchboard/events"}, 200)
	r.buyer("webhook_show", b, "GET", "/api/v1/webhook", nil, 200)
	r.buyer("webhook_bad_url", b, "PUT", "/api/v1/webhook", map[string]any{"url": "https://user:pw@buyer.example/events"}, 422)
	r.buyer("webhook_private_url", b, "PUT", "/api/v1/webhook", map[string]any{"url": "http://169.254.169.254/latest/meta-data/"}, 422)
	r.buyer("webhook_deliveries", b, "GET", "/api/v1/webhook/deliveries?status=retrying,dead", nil, 200)
	r.buyer("webhook_deliveries_bad_status", b, "GET", "/api/v1/webhook/deliveries?status=sent", nil, 400)
	r.buyer("webhook_clear", b, "PUT", "/api/v1/webhook", map[string]any{"url": ""}, 200)
	r.buyer("webhook_test_none", b, "POST", "/api/v1/webhook/test", nil, 409)

	r.buyer("campaign_create", b, "POST", "/api/v1/campaigns", map[string]any{
		"name": "Coffee habits 2026", "incidence": 40, "length_of_interview": 12, "country_language_id": 1,
		"supplier_link":     "https://survey.example/s/coffee?tid={ID}&rid={RESPONDENT_ID}&security_hash={LINK_HASH}",
		"cpi":               1.5,
		"days_in_field":     10,
		"supported_devices": []int{1, 2}, "max_daily_completes": 50, "reentry_interval": nil,
		"buyer_account_id": 1,
	}, 201)
	r.buyer("campaign_create_next_wave", b, "POST", "/api/v1/campaigns", map[string]any{
		"name": "Coffee habits 2026, wave 2", "incidence": 40, "length_of_interview": 12, "country_language_id": 1,
		"supplier_link": "https://survey.example/s/coffee2?id=", "cpi": "4.00", "reentry_interval": 7200, "project_id": 1,
	}, 201)
	r.buyer("campaign_create_invalid", b, "POST", "/api/v1/campaigns", map[string]any{
		"name": "Bad", "incidence": 0, "length_of_interview": 12, "country_language_id": 1,
		"supplier_link": "https://survey.example/s?tid={ID}"}, 422)
	r.buyer("campaign_create_bad_json", b, "POST", "/api/v1/campaigns", `{"name": "Coffee",`, 400)

	r.buyer("quota_create", b, "POST", "/api/v1/campaigns/1/campaign_quotas", map[string]any{
		"name": "Women 18-34 in two ZIP codes", "num_respondents": 200, "is_click_balanced": false,
		"campaign_qualifications": []any{
			map[string]any{"question_id": 43, "pre_codes": []int{2}},
			map[string]any{"question_id": 42, "pre_codes": []int{18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34}},
			map[string]any{"question_id": 45, "pre_codes": []any{"94105", " 10001 "}},
		}}, 201)
	r.buyer("quota_create_invalid", b, "POST", "/api/v1/campaigns/1/campaign_quotas", map[string]any{
		"num_respondents": 10, "campaign_qualifications": []any{map[string]any{"question_id": 43, "pre_codes": []int{7}}}}, 422)
	r.buyer("quota_update", b, "PUT", "/api/v1/campaigns/1/campaign_quotas/1", map[string]any{
		"num_respondents": 250, "campaign_qualifications": []any{
			map[string]any{"question_id": 43, "pre_codes": []int{2}},
			map[string]any{"question_id": 102, "pre_codes": []int{4, 5}},
		}}, 200)
	r.buyer("quota_show", b, "GET", "/api/v1/campaigns/1/campaign_quotas/1", nil, 200)
	r.buyer("quota_create_global", b, "POST", "/api/v1/campaigns/1/campaign_quotas", map[string]any{
		"name": "Overall cap", "num_respondents": 300, "is_global": true, "campaign_qualifications": []any{}}, 201)
	r.buyer("quota_delete", b, "DELETE", "/api/v1/campaigns/1/campaign_quotas/2", nil, 204)
	r.buyer("quota_feasibility", b, "GET", "/api/v1/campaigns/1/campaign_quotas/1/feasibility", nil, 200)

	r.buyer("campaign_activate_without_quota", b, "PUT", "/api/v1/campaigns/2", map[string]any{"status": 2}, 422)
	r.buyer("campaign_update", b, "PUT", "/api/v1/campaigns/1", map[string]any{"status": 2, "length_of_interview": 15}, 200)

	// Supply partners: one of the buyer's environment (staging), one live, which a staging
	// buyer neither sees nor may name.
	for _, p := range []persistence.NewPublisher{{Name: "Panel", Environment: s.Env}, {Name: "Live Panel", Environment: persistence.EnvLive}} {
		p.CurrencyName, p.ExchangeRate, p.RevenueShare, p.RedirectURL = "coins", 100, 0.5, "https://panel.example/back"
		if _, _, err := s.DB.Accounts.CreatePublisher(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	r.buyer("suppliers", b, "GET", "/api/v1/suppliers", nil, 200)
	r.buyer("campaign_exclude_suppliers", b, "PUT", "/api/v1/campaigns/2", map[string]any{"excluded_supplier_ids": []int{1}}, 200)
	r.buyer("campaign_exclude_unknown_supplier", b, "PUT", "/api/v1/campaigns/2", map[string]any{"excluded_supplier_ids": []int{1, 2}}, 422)
	_, readToken, err := s.DB.Accounts.IssueScopedBuyerToken(context.Background(), b.Email, s.Env, persistence.ScopeRead)
	if err != nil {
		t.Fatal(err)
	}
	reader := *b
	reader.Token = readToken
	r.buyer("campaign_update_read_scope", &reader, "PUT", "/api/v1/campaigns/2", map[string]any{"status": 2}, 403)

	r.buyer("relationship_create", b, "POST", "/api/v1/campaign_relationships",
		map[string]any{"campaign_id": 1, "related_campaign_id": 2}, 201)
	r.buyer("relationship_create_duplicate", b, "POST", "/api/v1/campaign_relationships",
		map[string]any{"campaign_id": 2, "related_campaign_id": 1}, 422)

	r.buyer("custom_qualification_create", b, "POST", "/api/v1/custom_qualifications", map[string]any{
		"name": "COFFEE_DRINKER", "question_text": "Do you drink coffee every day?", "answer_type": 0, "country_language_id": 1}, 201)
	r.buyer("custom_answer_create", b, "POST", "/api/v1/custom_qualifications/100000/custom_qualification_answers",
		map[string]any{"option_text": "Yes"}, 201)
	b.Do(t, "POST", "/api/v1/custom_qualifications/100000/custom_qualification_answers", map[string]any{"option_text": "No"}).Expect(t, 201)
	r.buyer("campaign_qualification_create", b, "POST", "/api/v1/campaigns/1/campaign_qualifications",
		map[string]any{"question_id": 100000, "pre_code_values": "1"}, 201)
	r.buyer("campaign_qualification_update", b, "PUT", "/api/v1/campaigns/1/campaign_qualifications/1",
		map[string]any{"pre_code_values": "1,2"}, 200)

	seedSession(t, s, b, 1, "user-1", "R7F3K2", "tid-0001")
	seedSession(t, s, b, 1, "user-2", "R9Q1Z8", "tid-0002")
	r.buyer("retargets_add", b, "POST", "/api/v1/campaigns/2/campaign_retargets", map[string]any{
		"retargeting_type": 1, "expiration_date": "12-31-2099", "retargeting_ids": []any{
			map[string]any{"id": "R7F3K2", "replacement_id": "panelist-17"}, map[string]any{"id": "R9Q1Z8"}}}, 200)
	r.buyer("retargets_add_maid", b, "POST", "/api/v1/campaigns/2/campaign_retargets", map[string]any{
		"retargeting_type": 3, "retargeting_ids": []any{map[string]any{"id": strings.ToLower(hashedMAID("38400000-8cf0-11bd-b23e-10b96e40000d"))}}}, 200)
	r.buyer("retargets_remove", b, "DELETE", "/api/v1/campaigns/2/campaign_retargets",
		map[string]any{"retargeting_type": 1, "retargeting_ids": []string{"R9Q1Z8"}}, 200)
	r.buyer("exclusions", b, "POST", "/api/v1/campaigns/1/campaign_exclusions", map[string]any{
		"player_ids": []string{"R7F3K2", "UNKNOWN1"}, "transaction_ids": []string{"tid-0002", "tid-9999"}}, 200)

	r.buyer("campaign_show", b, "GET", "/api/v1/campaigns/1", nil, 200)
	r.buyer("campaigns_list", b, "GET", "/api/v1/campaigns?country_language_id=1", nil, 200)
	r.buyer("campaigns_list_paged", b, "GET", "/api/v1/campaigns?page=2&per_page=1", nil, 200)
	r.buyer("campaigns_list_bad_per_page", b, "GET", "/api/v1/campaigns?per_page=5000", nil, 422)

	// Insights and exports, over results stored as entry, the pre-screener and callbacks
	// would store them.
	for _, q := range []string{
		`UPDATE participants SET profile = '{"42": [29], "43": [2], "45": ["94105"], "47": [2], "110": [3, 1]}' WHERE user_identifier = 'user-1'`,
		`UPDATE participants SET profile = '{"42": [41], "43": [1], "45": ["10001"]}' WHERE user_identifier = 'user-2'`,
		`UPDATE sessions SET entered_at = '2026-05-04T09:30:00Z', outcome = 'complete', outcome_at = '2026-05-04T09:44:00Z' WHERE tid = 'tid-0001'`,
		`UPDATE sessions SET entered_at = '2026-05-04T09:31:00Z', outcome = 'over_quota', outcome_at = '2026-05-04T09:33:00Z' WHERE tid = 'tid-0002'`,
		`INSERT INTO screener_answers (session_id, question_id, pre_codes) SELECT id, 100000, '{1}' FROM sessions WHERE tid = 'tid-0001'`,
	} {
		if _, err := s.DB.Pool.Exec(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	r.subst = map[string]string{b.CustomerID: "<customer_id>"}
	r.buyer("insights_projects", b, "GET", "/insights_api/projects", nil, 200)
	r.buyer("insights_projects_one_time", b, "GET", "/insights_api/projects?project_type=one_time&page=1", nil, 200)
	r.buyer("insights_projects_bad_page", b, "GET", "/insights_api/projects?page=0", nil, 400)
	r.buyer("insights_project", b, "GET", "/insights_api/projects/1", nil, 200)
	r.buyer("insights_columns", b, "GET", "/insights_api/projects/1/campaigns/1/columns", nil, 200)
	csvReq := func(method, path string, body any) *http.Request {
		req := b.Request(t, method, path, body)
		req.Header.Set("Accept", "text/csv")
		return req
	}
	r.do("insights_results", csvReq("GET", "/insights_api/projects/1/campaigns/1", nil), nil, 200)
	r.buyer("insights_results_unknown", b, "GET", "/insights_api/projects/1/campaigns/99", nil, 404)
	exportBody := map[string]any{"transaction_ids": []string{"tid-0001", "tid-0002"}}
	r.do("export_demographics", csvReq("POST", "/api/v1/campaigns/1/export_demographics", exportBody), exportBody, 200)

	// A month of the ledger: two completes of campaign 1, one of them rejected, and a
	// reconcile's acceptance (docs/payouts.md, "Statements").
	if _, err := s.DB.Pool.Exec(context.Background(), `INSERT INTO ledger_events (session_id, seq, tid, kind, campaign_id, buyer_id,
		charge_usd, earning_usd, margin_usd, reward, at) VALUES
		(901, 1, 'tid-0901', 'complete', 1, $1, 15000, 9000, 6000, 900, '2026-01-12T09:30:00Z'),
		(902, 1, 'tid-0902', 'complete', 1, $1, 15000, 9000, 6000, 900, '2026-01-12T10:05:00Z'),
		(902, 2, 'tid-0902', 'reversal', 1, $1, -15000, -9000, -6000, -900, '2026-01-20T16:00:00Z'),
		(903, 1, 'tid-0903', 'acceptance', 1, $1, 15000, 9000, 6000, 900, '2026-01-31T23:59:59Z')`, b.ID); err != nil {
		t.Fatal(err)
	}
	r.buyer("statement", b, "GET", "/api/v1/statements?month=2026-01", nil, 200)
	r.do("statement_csv", csvReq("GET", "/api/v1/statements?month=2026-01", nil), nil, 200)
	r.buyer("statement_bad_month", b, "GET", "/api/v1/statements?month=2026-1", nil, 422)
	exportOne := map[string]any{"player_ids": "R9Q1Z8"}
	r.do("export_demographics_player", csvReq("POST", "/api/v1/campaigns/1/export_demographics", exportOne), exportOne, 200)
	r.buyer("export_demographics_invalid", b, "POST", "/api/v1/campaigns/1/export_demographics", map[string]any{"player_ids": 17}, 422)
	r.subst = nil

	r.buyer("campaign_qualification_delete", b, "DELETE", "/api/v1/campaigns/1/campaign_qualifications/1", nil, 204)
	r.buyer("relationship_delete", b, "DELETE", "/api/v1/campaign_relationships/1", nil, 204)

	r.buyer("redirect_test", b, "GET", "/api/v1/campaigns/1/redirect_test", nil, 200)
	r.buyer("campaign_feasibility", b, "GET", "/api/v1/campaigns/1/feasibility", nil, 200)
	r.buyer("realtime_feasibility", b, "POST", "/api/v1/campaigns/realtime_feasibility", map[string]any{
		"incidence": 40, "length_of_interview": 12, "country_language_id": 1,
		"campaign_quotas": []any{map[string]any{"num_respondents": 100, "campaign_qualifications": []any{}}}}, 200)
	r.buyer("reject_completes", b, "POST", "/api/v1/campaigns/1/reject_completes", map[string]any{"transaction_ids": []string{"tid-0001"}}, 200)
	r.buyer("reconcile", b, "POST", "/api/v1/campaigns/1/reconcile", map[string]any{"accepted_ids": []string{"tid-0001"}, "purchase_order": "PO-1"}, 200)
	recordEveryStatus(t, s, b, r)

	// Conventions.
	r.do("error_401", s.NewRequest(t, "GET", "/api/v1/campaigns", nil), nil, 401)
	r.buyer("error_404_other_buyer", other, "GET", "/api/v1/campaigns/1", nil, 404)
	r.buyer("error_405", b, "DELETE", "/api/v1/campaigns/1", nil, 405)
	req := b.Request(t, "GET", "/api/v1/campaigns", nil)
	req.Header.Set("Accept", "text/html")
	r.do("error_406", req, nil, 406)
	big := `{"name":"` + strings.Repeat("x", 1<<20) + `"}`
	resp := b.Server().Send(t, b.Request(t, "POST", "/api/v1/campaigns", big))
	if resp.Status != 413 {
		t.Fatalf("1 MiB body: %d %s", resp.Status, resp.Body)
	}
	r.check("error_413", render(s, b.Request(t, "POST", "/api/v1/campaigns", nil), "{\"name\": \"xxxx… (more than 1 MiB)\"}", resp))

	limited := apptest.Start(t, apptest.Options{RateLimit: 1, RateBurst: 1})
	lb := limited.NewBuyer(t)
	lb.Do(t, "GET", "/api/v1/country_languages", nil).Expect(t, 200)
	lr := newRecorder(t, limited)
	lr.seen = r.seen
	lr.buyer("error_429", lb, "GET", "/api/v1/country_languages", nil, 429)

	// Every route has an example.
	routes := map[string]bool{}
	for _, name := range goldenNames(t) {
		if !r.seen[name] {
			t.Errorf("golden file %s.golden was not recorded by this test: remove it", name)
		}
	}
	for _, d := range docSections {
		for _, e := range d.entries {
			for _, g := range e.goldens {
				if !r.seen[g] {
					t.Errorf("doc entry %s %s names golden %s, which was not recorded", e.method, e.pattern, g)
				}
			}
			routes[e.method+" "+e.pattern] = true
		}
	}
	for _, rt := range apiRoutes() {
		if !routes[rt] {
			t.Errorf("route %s has no entry in docSections", rt)
		}
	}
}

func goldenNames(t *testing.T) []string {
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.golden"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		out = append(out, strings.TrimSuffix(filepath.Base(f), ".golden"))
	}
	sort.Strings(out)
	return out
}

// recordEveryStatus records campaign reads in every status the service gives a campaign
// (docs/rules.md §4), each reached the way the service reaches it, so that the OpenAPI
// validation of the recorded exchanges (internal/openapi) sees every status a client can
// meet: campaign 1 is 6 Reconciled and campaign 2 is 5 Paused when it runs; it adds 3
// (2 Active), 4 (3 Complete, by the buyer), 5 (4 Archived, by the sweeper) and 6 (7 System
// Paused, by the sweeper's broken-link check).
func recordEveryStatus(t *testing.T, s *apptest.Server, b *apptest.Buyer, r *recorder) {
	t.Helper()
	ctx := context.Background()
	campaign := func(name string) int64 {
		t.Helper()
		c := b.Do(t, "POST", "/api/v1/campaigns", map[string]any{"name": name, "incidence": 50, "length_of_interview": 10,
			"country_language_id": 1, "supplier_link": "https://survey.example/s/habits?tid={ID}"}).Expect(t, 201).Object(t)
		return int64(c["id"].(float64))
	}
	activate := func(id int64) {
		t.Helper()
		path := "/api/v1/campaigns/" + strconv.FormatInt(id, 10)
		b.Do(t, "POST", path+"/campaign_quotas", map[string]any{"name": "Everyone", "num_respondents": 100,
			"campaign_qualifications": []any{}}).Expect(t, 201)
		b.Do(t, "PUT", path, map[string]any{"status": 2}).Expect(t, 200)
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := s.DB.Pool.Exec(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}

	activate(campaign("Tea habits"))

	complete := campaign("Juice habits")
	activate(complete)
	r.buyer("campaign_complete", b, "PUT", "/api/v1/campaigns/"+strconv.FormatInt(complete, 10), map[string]any{"status": 3}, 200)

	archived := campaign("Soda habits")
	activate(archived)
	b.Do(t, "PUT", "/api/v1/campaigns/"+strconv.FormatInt(archived, 10), map[string]any{"status": 3}).Expect(t, 200)
	exec(`UPDATE campaigns SET status_changed_at = now() - interval '91 days' WHERE id = $1`, archived)
	if ids, err := s.DB.Maintenance.ArchiveStaleCampaigns(ctx, 90*24*time.Hour); err != nil || len(ids) != 1 || ids[0] != archived {
		t.Fatalf("ArchiveStaleCampaigns: %v %v, want [%d]", ids, err, archived)
	}

	// Created for tablets only (supported_devices 0), then paused by the sweeper: its one
	// entry's callback window passed with no callback.
	devices := map[string]any{"name": "Water habits", "incidence": 50, "length_of_interview": 10, "country_language_id": 1,
		"supplier_link": "https://survey.example/s/water?tid={ID}", "supported_devices": []int{0}}
	paused := int64(r.buyer("campaign_create_tablets", b, "POST", "/api/v1/campaigns", devices, 201).Object(t)["id"].(float64))
	activate(paused)
	seedSession(t, s, b, paused, "user-3", "R5T6Y7", "tid-0003")
	exec(`UPDATE sessions SET entered_at = now() - interval '1 hour' WHERE tid = 'tid-0003'`)
	exec(`UPDATE campaigns SET status_changed_at = now() - interval '2 hours' WHERE id = $1`, paused)
	if ids, err := s.DB.Maintenance.PauseBrokenLinks(ctx, 1, persistence.BrokenLinkScope{IDs: []int64{paused}}); err != nil || len(ids) != 1 {
		t.Fatalf("PauseBrokenLinks: %v %v, want [%d]", ids, err, paused)
	}
	r.buyer("retargets_add_system_paused", b, "POST", "/api/v1/campaigns/"+strconv.FormatInt(paused, 10)+"/campaign_retargets",
		map[string]any{"retargeting_type": 1, "retargeting_ids": []string{"R5T6Y7"}}, 200)

	r.buyer("campaign_show_reconciled", b, "GET", "/api/v1/campaigns/1", nil, 200)
	r.buyer("campaign_show_archived", b, "GET", "/api/v1/campaigns/"+strconv.FormatInt(archived, 10), nil, 200)
	r.buyer("campaign_show_system_paused", b, "GET", "/api/v1/campaigns/"+strconv.FormatInt(paused, 10), nil, 200)
	list := r.buyer("campaigns_list_every_status", b, "GET", "/api/v1/campaigns", nil, 200)
	var items []struct {
		ID     int64 `json:"id"`
		Status int   `json:"status"`
	}
	list.Decode(t, &items)
	seen := map[int]bool{}
	for _, c := range items {
		seen[c.Status] = true
	}
	for _, st := range []int{persistence.StatusActive, persistence.StatusComplete, persistence.StatusArchived,
		persistence.StatusPaused, persistence.StatusReconciled, persistence.StatusSystemPaused} {
		if !seen[st] {
			t.Errorf("campaigns_list_every_status has no campaign in status %d: %+v", st, items)
		}
	}
}
