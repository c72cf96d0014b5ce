package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/persistence"
)

// fieldError is the text of the error shown next to the field id of a console form ("" when
// none).
func fieldError(body []byte, id string) string {
	m := regexp.MustCompile(`<p class="error" id="` + regexp.QuoteMeta(id) + `-error">([^<]*)</p>`).FindSubmatch(body)
	if m == nil {
		return ""
	}
	return string(m[1])
}

// expectQuotaFormPage checks the quota form as expectConsolePage checks a console page,
// but for its one script: the console's CSP with script-src and connect-src 'self', and no
// script but feasibility.js from this origin.
func expectQuotaFormPage(t testing.TB, r apptest.Response, status int, contains ...string) {
	t.Helper()
	want := "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
	if csp := r.Header.Get("Content-Security-Policy"); csp != want {
		t.Fatalf("quota form CSP %q", csp)
	}
	body := strings.Replace(string(r.Body), `<script src="/console/feasibility.js" defer></script>`, "", 1)
	r.Body = []byte(body)
	r.Header.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	expectConsolePage(t, r, status, contains...)
}

// apiRefusal is the API's message for body sent to method path: what the console's form
// must show for the same input.
func (w *world) apiRefusal(method, path string, body any) string {
	w.t.Helper()
	return w.buyer.Do(w.t, method, path, body).Expect(w.t, http.StatusUnprocessableEntity).Message(w.t)
}

// campaignForm is a valid campaign form of the world's survey.
func (w *world) campaignForm(name string) url.Values {
	return url.Values{"name": {name}, "length_of_interview": {"12"}, "incidence": {"40"}, "cpi": {""}, "days_in_field": {"10"},
		"max_daily_completes": {""}, "reentry_interval": {"0"}, "country_language_id": {"1"},
		"supplier_link": {w.survey.srv.URL + "/s?tid={ID}&rid={RESPONDENT_ID}"}}
}

// TestConsoleFormsHTTP: the campaign workspace's forms over HTTP. Each stores what the API
// stores for the same input, refuses what it refuses with the API's own message next to the
// field that message names, and on a refusal stores nothing (a clone refused for one of its
// copied quotas leaves no campaign); the pages keep the console's strict CSP and run no
// script; a read-only session gets none of them (403) and a post without the form's CSRF
// value is refused.
func TestConsoleFormsHTTP(t *testing.T) {
	w := newWorld(t)
	for range 40 { // the panel feasibility counts: women of 34 at ZIP 10001
		w.impanel(newUser())
	}
	c := w.console()
	c.signIn(w.buyer.Email, w.buyer.Token)
	campaigns := func() int64 { return w.count(`SELECT count(*) FROM campaigns WHERE buyer_id = $1`, w.buyer.ID) }

	form := c.do("GET", "/console/campaigns/new", nil, nil)
	expectConsolePage(t, form, http.StatusOK, `action="/console/campaigns/new"`, `name="excluded_supplier_ids"`,
		fmt.Sprintf(`id="supplier-%d"`, w.pub.ID), "Puzzle Quest", `<legend>Excluded suppliers</legend>`)
	csrf := csrfOf(t, form)
	post := func(path string, v url.Values) apptest.Response {
		v.Set("csrf", csrf)
		return c.do("POST", path, v, nil)
	}

	// Refusals: the API's message, next to its field; nothing stored.
	before := campaigns()
	for _, tc := range []struct {
		field, value string
		api          map[string]any
	}{
		{"incidence", "0", map[string]any{"incidence": 0}},
		{"incidence", "many", map[string]any{"incidence": "many"}},
		{"name", "", nil},
		{"supplier_link", "ftp://survey.example/s", map[string]any{"supplier_link": "ftp://survey.example/s"}},
		{"length_of_interview", "121", map[string]any{"length_of_interview": 121}},
		{"cpi", "-1", map[string]any{"cpi": "-1"}},
	} {
		v := w.campaignForm("Refused")
		v.Set(tc.field, tc.value)
		api := map[string]any{"name": "Refused", "length_of_interview": 12, "incidence": 40, "days_in_field": 10, "reentry_interval": 0,
			"country_language_id": 1, "supplier_link": v.Get("supplier_link"), "supported_devices": []int{}, "excluded_supplier_ids": []int{}}
		if tc.api == nil {
			delete(api, tc.field)
		}
		for k, x := range tc.api {
			api[k] = x
		}
		want := w.apiRefusal("POST", "/api/v1/campaigns", api)
		r := post("/console/campaigns/new", v)
		expectConsolePage(t, r, http.StatusUnprocessableEntity, "There is a problem", `href="#`+tc.field+`"`)
		if got := fieldError(r.Body, tc.field); got != template.HTMLEscapeString(want) {
			t.Fatalf("%s=%q: the form shows %q next to %s, the API answers %q", tc.field, tc.value, got, tc.field, want)
		}
		if !strings.Contains(string(r.Body), `value="`+template.HTMLEscapeString(tc.value)+`"`) {
			t.Fatalf("%s=%q: the refused form lost what was typed", tc.field, tc.value)
		}
	}
	// A supplier that is not one: refused as the API refuses it.
	v := w.campaignForm("Refused")
	v.Set("excluded_supplier_ids", "999999")
	want := w.apiRefusal("POST", "/api/v1/campaigns", map[string]any{"name": "Refused", "length_of_interview": 12, "incidence": 40,
		"country_language_id": 1, "supplier_link": v.Get("supplier_link"), "excluded_supplier_ids": []int{999999}})
	r := post("/console/campaigns/new", v)
	if got := fieldError(r.Body, "suppliers"); got != template.HTMLEscapeString(want) {
		t.Fatalf("an unknown supplier: the form shows %q, the API answers %q", got, want)
	}
	if n := campaigns(); n != before {
		t.Fatalf("%d campaigns after refusals, want %d", n, before)
	}

	// Created: what the form says, the supplier excluded, paused.
	v = w.campaignForm("Commuters 2026")
	v.Set("excluded_supplier_ids", strconv.FormatInt(w.pub.ID, 10))
	v["supported_devices"] = []string{"1", "2"}
	loc := expectSeeOther(t, post("/console/campaigns/new", v), "/console/campaigns/")
	var id int64
	if _, err := fmt.Sscanf(loc.Path, "/console/campaigns/%d/edit", &id); err != nil || loc.Query().Get("done") != "created" {
		t.Fatalf("created: redirected to %s", loc)
	}
	got := w.buyer.Do(t, "GET", fmt.Sprintf("/api/v1/campaigns/%d", id), nil).Expect(t, 200).Object(t)
	if got["name"] != "Commuters 2026" || got["incidence"] != float64(40) || got["length_of_interview"] != float64(12) ||
		got["days_in_field"] != float64(10) || got["status"] != float64(persistence.StatusPaused) || got["max_daily_completes"] != nil ||
		fmt.Sprint(got["excluded_supplier_ids"]) != fmt.Sprintf("[%d]", w.pub.ID) || fmt.Sprint(got["supported_devices"]) != "[1 2]" {
		t.Fatalf("created campaign %v", got)
	}
	edit := c.do("GET", loc.String(), nil, nil)
	expectConsolePage(t, edit, http.StatusOK, "Campaign created, paused.", `id="add-quota"`, `checked`)

	// The quota form's one script, served from this origin.
	js := c.do("GET", "/console/feasibility.js", nil, nil).Expect(t, http.StatusOK)
	if js.Header.Get("Content-Type") != "text/javascript; charset=utf-8" || js.Header.Get("X-Content-Type-Options") != "nosniff" ||
		!strings.Contains(string(js.Body), `body.set("do", "feasibility")`) {
		t.Fatalf("feasibility.js: %v", js.Header)
	}

	// A quota: age 18 to 34 (a range), women (a checkbox), two ZIP codes (a list).
	quotaPath := fmt.Sprintf("/console/campaigns/%d/quotas/new", id)
	qf := c.do("GET", quotaPath, nil, nil)
	expectQuotaFormPage(t, qf, http.StatusOK, `id="q42-from"`, `id="q43-2"`, `name="q45"`, `id="check-feasibility"`)
	quota := url.Values{"name": {"Young women"}, "num_respondents": {"60"}, "q42-from": {"18"}, "q42-to": {"34"}, "q43": {"2"},
		"q45": {"10001\n 10002 \n"}}
	// The feasibility check: the realtime estimate of the API for the same campaign.
	quota.Set("do", "feasibility")
	est := post(quotaPath, quota)
	expectQuotaFormPage(t, est, http.StatusOK, `id="quota-estimate"`)
	ages := []int{}
	for a := 18; a <= 34; a++ {
		ages = append(ages, a)
	}
	target := []any{map[string]any{"question_id": 42, "pre_codes": ages}, map[string]any{"question_id": 43, "pre_codes": []int{2}},
		map[string]any{"question_id": 45, "pre_codes": []string{"10001", "10002"}}}
	rt := w.buyer.Do(t, "POST", "/api/v1/campaigns/realtime_feasibility", map[string]any{"incidence": 40, "length_of_interview": 12,
		"days_in_field": 10, "country_language_id": 1, "campaign_quotas": []any{map[string]any{"num_respondents": 60,
			"campaign_qualifications": target}}}).Expect(t, 200).Object(t)
	if !strings.Contains(string(est.Body), fmt.Sprintf(`<strong id="quota-estimate">%v</strong>`, rt["estimated_completes"])) ||
		rt["estimated_completes"] == float64(0) || !strings.Contains(string(est.Body), "10001\n 10002 \n</textarea>") {
		t.Fatalf("feasibility shown differs from the API's %v:\n%s", rt, est.Body)
	}
	if n := w.count(`SELECT count(*) FROM campaign_quotas WHERE campaign_id = $1`, id); n != 0 {
		t.Fatalf("the feasibility check stored %d quotas", n)
	}
	// Refused as the API refuses it: an age out of range, next to the age question.
	bad := url.Values{"num_respondents": {"60"}, "q42-from": {"18"}, "q42-to": {"130"}}
	want = w.apiRefusal("POST", fmt.Sprintf("/api/v1/campaigns/%d/campaign_quotas", id), map[string]any{"num_respondents": 60,
		"is_global": false, "is_click_balanced": false, "campaign_qualifications": []any{map[string]any{"question_id": 42,
			"pre_codes": func() []int {
				out := []int{}
				for a := 18; a <= 130; a++ {
					out = append(out, a)
				}
				return out
			}()}}})
	r = post(quotaPath, bad)
	expectQuotaFormPage(t, r, http.StatusUnprocessableEntity, `href="#q42-from"`)
	if got := fieldError(r.Body, "q42"); got != template.HTMLEscapeString(want) {
		t.Fatalf("age to 130: the form shows %q, the API answers %q", got, want)
	}
	want = w.apiRefusal("POST", fmt.Sprintf("/api/v1/campaigns/%d/campaign_quotas", id), map[string]any{"num_respondents": 0,
		"campaign_qualifications": []any{}})
	r = post(quotaPath, url.Values{"num_respondents": {"0"}})
	if got := fieldError(r.Body, "num_respondents"); got != template.HTMLEscapeString(want) {
		t.Fatalf("0 completes: the form shows %q, the API answers %q", got, want)
	}
	quota.Set("do", "save")
	expectSeeOther(t, post(quotaPath, quota), fmt.Sprintf("/console/campaigns/%d/edit?done=quota-added", id))
	q := w.buyer.Do(t, "GET", fmt.Sprintf("/api/v1/campaigns/%d", id), nil).Expect(t, 200).Object(t)["campaign_quotas"].([]any)
	stored, _ := json.Marshal(q[0].(map[string]any)["campaign_qualifications"])
	wantQuals, _ := json.Marshal(target)
	if len(q) != 1 || string(stored) != string(wantQuals) {
		t.Fatalf("stored targeting %s, want %s", stored, wantQuals)
	}

	// Clone: the copy has the quotas; a copy to a country whose catalog lacks a targeted
	// question is refused whole, naming the quota, and leaves nothing.
	qid := int64(q[0].(map[string]any)["id"].(float64))
	hispanic := url.Values{"num_respondents": {"10"}, "q47": {"1"}}
	expectSeeOther(t, post(quotaPath, hispanic), "/console/campaigns/")
	cloneForm := c.do("GET", fmt.Sprintf("/console/campaigns/%d/clone", id), nil, nil)
	expectConsolePage(t, cloneForm, http.StatusOK, `value="Copy of Commuters 2026"`)
	before = campaigns()
	uk := w.campaignForm("Commuters UK")
	uk.Set("country_language_id", "3")
	r = post(fmt.Sprintf("/console/campaigns/%d/clone", id), uk)
	expectConsolePage(t, r, http.StatusUnprocessableEntity, "The copy of quota 2 was refused: campaign_qualifications[0].question_id 47 is not a qualification of country_language_id 3")
	if n := campaigns(); n != before {
		t.Fatalf("a refused clone left %d campaigns, want %d", n, before)
	}
	loc = expectSeeOther(t, post(fmt.Sprintf("/console/campaigns/%d/clone", id), w.campaignForm("Commuters again")), "/console/campaigns/")
	var clone int64
	fmt.Sscanf(loc.Path, "/console/campaigns/%d/edit", &clone)
	cq := w.buyer.Do(t, "GET", fmt.Sprintf("/api/v1/campaigns/%d", clone), nil).Expect(t, 200).Object(t)["campaign_quotas"].([]any)
	copied, _ := json.Marshal(cq[0].(map[string]any)["campaign_qualifications"])
	if clone == id || len(cq) != 2 || string(copied) != string(stored) {
		t.Fatalf("clone %d has quotas %v", clone, cq)
	}

	// Edit a quota: its form shows the stored targeting; the change is what PUT stores.
	editPath := fmt.Sprintf("/console/campaigns/%d/quotas/%d/edit", id, qid)
	expectQuotaFormPage(t, c.do("GET", editPath, nil, nil), http.StatusOK, `id="q42-from" name="q42-from" inputmode="numeric" value="18"`,
		`value="34"`, `id="q43-2" name="q43" value="2" checked`, "10001\n10002</textarea>")
	expectSeeOther(t, post(editPath, url.Values{"num_respondents": {"75"}, "q42-from": {"21"}, "q42-to": {"30"}, "q43": {"1", "2"}}),
		fmt.Sprintf("/console/campaigns/%d/edit?done=quota-saved", id))
	eq := w.buyer.Do(t, "GET", fmt.Sprintf("/api/v1/campaigns/%d/campaign_quotas/%d", id, qid), nil).Expect(t, 200).Object(t)
	if eq["num_respondents"] != float64(75) || eq["name"] != nil || fmt.Sprint(eq["campaign_qualifications"]) !=
		"[map[pre_codes:[21 22 23 24 25 26 27 28 29 30] question_id:42] map[pre_codes:[1 2] question_id:43]]" {
		t.Fatalf("edited quota %v", eq)
	}

	// Edit the campaign: no supplier excluded any more, no cap cleared.
	v = w.campaignForm("Commuters 2026")
	v.Set("max_daily_completes", "25")
	expectSeeOther(t, post(fmt.Sprintf("/console/campaigns/%d/edit", id), v), fmt.Sprintf("/console/campaigns/%d/edit?done=saved", id))
	got = w.buyer.Do(t, "GET", fmt.Sprintf("/api/v1/campaigns/%d", id), nil).Expect(t, 200).Object(t)
	if fmt.Sprint(got["excluded_supplier_ids"]) != "[]" || got["max_daily_completes"] != float64(25) {
		t.Fatalf("edited campaign %v", got)
	}
	v.Set("days_in_field", "")
	want = w.apiRefusal("PUT", fmt.Sprintf("/api/v1/campaigns/%d", id), map[string]any{"days_in_field": ""})
	if got := fieldError(post(fmt.Sprintf("/console/campaigns/%d/edit", id), v).Body, "days_in_field"); got != template.HTMLEscapeString(want) {
		t.Fatalf("days in field emptied: the form shows %q, the API answers %q", got, want)
	}

	// Custom screeners and exclusions, through the edit page.
	sq := w.screener(clone)
	ep := c.do("GET", fmt.Sprintf("/console/campaigns/%d/edit", id), nil, nil)
	expectConsolePage(t, ep, http.StatusOK, fmt.Sprintf(`id="attach-%d"`, sq))
	want = w.apiRefusal("POST", fmt.Sprintf("/api/v1/campaigns/%d/campaign_qualifications", id), map[string]any{"question_id": sq})
	r = post(fmt.Sprintf("/console/campaigns/%d/screeners", id), url.Values{"question_id": {strconv.Itoa(sq)}})
	if got := fieldError(r.Body, fmt.Sprintf("screener-%d", sq)); got != template.HTMLEscapeString(want) {
		t.Fatalf("a screener without answers: the form shows %q, the API answers %q", got, want)
	}
	expectSeeOther(t, post(fmt.Sprintf("/console/campaigns/%d/screeners", id), url.Values{"question_id": {strconv.Itoa(sq)},
		"pre_code_values": {"1"}}), fmt.Sprintf("/console/campaigns/%d/edit?done=screener", id))
	got = w.buyer.Do(t, "GET", fmt.Sprintf("/api/v1/campaigns/%d", id), nil).Expect(t, 200).Object(t)
	if fmt.Sprint(got["custom_campaign_qualifications"]) == "[]" {
		t.Fatalf("no screener attached: %v", got)
	}
	r = post(fmt.Sprintf("/console/campaigns/%d/exclusions", id), url.Values{"player_ids": {"rid-1\nrid-2"}})
	expectConsolePage(t, r, http.StatusOK, `id="exclusion-result"`, "rid-1 rid-2")

	// Read-only: no link, no form, no post.
	_, readToken, err := w.s.DB.Accounts.IssueScopedBuyerToken(context.Background(), w.buyer.Email, w.s.Env, persistence.ScopeRead)
	if err != nil {
		t.Fatal(err)
	}
	ro := w.console()
	ro.signIn(w.buyer.Email, readToken)
	for _, p := range []string{"/console/campaigns", fmt.Sprintf("/console/campaigns/%d", id)} {
		body := string(ro.do("GET", p, nil, nil).Expect(t, 200).Body)
		for _, ctl := range []string{`id="new-campaign"`, `id="edit-campaign"`, `id="clone-campaign"`} {
			if strings.Contains(body, ctl) {
				t.Fatalf("%s shows %s to a read-only session", p, ctl)
			}
		}
	}
	roCSRF := ro.csrf()
	before = campaigns()
	for _, p := range []string{"/console/campaigns/new", fmt.Sprintf("/console/campaigns/%d/edit", id), fmt.Sprintf("/console/campaigns/%d/clone", id),
		quotaPath, editPath} {
		expectConsolePage(t, ro.do("GET", p, nil, nil), http.StatusForbidden, "This session is read-only")
		v := w.campaignForm("Read-only")
		v.Set("csrf", roCSRF)
		v.Set("num_respondents", "5")
		expectConsolePage(t, ro.do("POST", p, v, nil), http.StatusForbidden, "This session is read-only")
	}
	if n := campaigns(); n != before || w.count(`SELECT num_respondents FROM campaign_quotas WHERE id = $1`, qid) != 75 {
		t.Fatal("a read-only session's posts changed something")
	}

	// CSRF: a post without the form's value, or from another site, is refused.
	v = w.campaignForm("Forged")
	expectConsolePage(t, c.do("POST", "/console/campaigns/new", v, nil), http.StatusForbidden, "This form has expired")
	v.Set("csrf", csrf)
	expectConsolePage(t, c.do("POST", "/console/campaigns/new", v, map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}),
		http.StatusForbidden, "This form has expired")
	if n := campaigns(); n != before {
		t.Fatal("a forged post created a campaign")
	}

}

// TestConsoleActionRefusalHTTP: the campaign page's own forms (a quota's target, a status)
// show the API's message for the same input as it is, its field named once.
func TestConsoleActionRefusalHTTP(t *testing.T) {
	w := newWorld(t)
	id, _ := w.campaign("Refusals")
	c := w.console()
	c.signIn(w.buyer.Email, w.buyer.Token)
	csrf := c.csrf()
	var quota int64
	if err := w.s.DB.Pool.QueryRow(context.Background(), `SELECT id FROM campaign_quotas WHERE campaign_id = $1`, id).Scan(&quota); err != nil {
		t.Fatal(err)
	}
	want := w.apiRefusal("PUT", fmt.Sprintf("/api/v1/campaigns/%d/campaign_quotas/%d", id, quota), map[string]any{"num_respondents": 0})
	r := c.do("POST", fmt.Sprintf("/console/campaigns/%d/quotas/%d", id, quota), url.Values{"csrf": {csrf}, "num_respondents": {"0"}}, nil)
	expectConsolePage(t, r, http.StatusUnprocessableEntity, "<p>"+template.HTMLEscapeString(want)+"</p>")
}
