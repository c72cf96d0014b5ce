package admin_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/persistence"
)

// concrete turns a route pattern into a path with every id 1.
func concrete(pattern string) string {
	for _, p := range []string{"{id}", "{quota_id}", "{question_id}", "{qualification_id}", "{project_id}", "{campaign_id}"} {
		pattern = strings.ReplaceAll(pattern, p, "1")
	}
	return pattern
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	b := s.NewBuyer(t)
	live := s.NewBuyerIn(t, persistence.EnvLive)
	csvRoute := csvRoutes()
	for _, rt := range apiRoutes() {
		method, pattern, _ := strings.Cut(rt, " ")
		p := concrete(pattern)
		t.Run(rt, func(t *testing.T) {
			// 406 comes first, even without credentials.
			accept := "text/csv" // CSV routes admit it: they refuse what admits neither CSV nor JSON
			if csvRoute[rt] {
				accept = "text/html"
			}
			req := s.NewRequest(t, method, p, nil)
			req.Header.Set("Accept", accept)
			if r := s.Send(t, req); r.Status != 406 || !strings.Contains(string(r.Body), "message") {
				t.Errorf("Accept %s: %d %s", accept, r.Status, r.Body)
			}
			check401 := func(what string, r apptest.Response) {
				t.Helper()
				if r.Status != 401 || r.Header.Get("WWW-Authenticate") != `Basic realm="switchboard"` || r.Message(t) == "" {
					t.Errorf("%s: %d %v %s", what, r.Status, r.Header, r.Body)
				}
			}
			check401("no credentials", s.Send(t, s.NewRequest(t, method, p, nil)))
			req = s.NewRequest(t, method, p, nil)
			req.SetBasicAuth(b.Email, "wrong-token")
			check401("wrong token", s.Send(t, req))
			req = s.NewRequest(t, method, p, nil)
			req.SetBasicAuth("someone@else.test", b.Token)
			check401("wrong email", s.Send(t, req))
			check401("live token on staging", live.Do(t, method, p, nil))
			req = s.NewRequest(t, method, p, nil)
			req.Header.Set("Authorization", "Bearer "+b.Token)
			check401("bearer", s.Send(t, req))
		})
	}
	// A cached authentication still checks the e-mail.
	b.Do(t, "GET", "/api/v1/campaigns", nil).Expect(t, 200)
	time.Sleep(50 * time.Millisecond)
	req := s.NewRequest(t, "GET", "/api/v1/campaigns", nil)
	req.SetBasicAuth("other@example.test", b.Token)
	s.Send(t, req).Expect(t, 401)
	// Accept variants that admit JSON.
	for _, accept := range []string{"", "*/*", "application/*", "text/html, application/json;q=0.5"} {
		req := b.Request(t, "GET", "/api/v1/country_languages", nil)
		req.Header.Set("Accept", accept)
		if r := s.Send(t, req); r.Status != 200 || r.Header.Get("Content-Type") != "application/json; charset=utf-8" {
			t.Errorf("Accept %q: %d %v", accept, r.Status, r.Header)
		}
	}
}

func TestLiveEnvironment(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{Environment: persistence.EnvLive})
	s.NewBuyerIn(t, persistence.EnvLive).Do(t, "GET", "/api/v1/campaigns", nil).Expect(t, 200)
	s.NewBuyerIn(t, persistence.EnvStaging).Do(t, "GET", "/api/v1/campaigns", nil).Expect(t, 401)
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{RateLimit: 0.5, RateBurst: 2})
	b, c := s.NewBuyer(t), s.NewBuyer(t)
	b.Do(t, "GET", "/api/v1/country_languages", nil).Expect(t, 200)
	b.Do(t, "GET", "/api/v1/country_languages", nil).Expect(t, 200)
	r := b.Do(t, "POST", "/api/v1/campaigns", campaignBody()).Expect(t, 429)
	if ra := r.Header.Get("Retry-After"); ra != "1" && ra != "2" {
		t.Errorf("Retry-After %q", ra)
	}
	if r.Message(t) == "" {
		t.Error("no message")
	}
	// Per token: another buyer is not limited.
	c.Do(t, "GET", "/api/v1/country_languages", nil).Expect(t, 200)
}

func TestNotFoundAndMethods(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	b := s.NewBuyer(t)
	id := createCampaign(t, b, nil)
	createQuota(t, b, id, nil)
	for _, p := range []string{"/api/v1/campaigns/abc", "/api/v1/campaigns/1.5", "/api/v1/campaigns/-1", "/api/v1/campaigns/0",
		"/api/v1/campaigns/99999999999999999999", "/api/v1/campaigns/1/campaign_quotas/x", "/api/v1/campaigns/77",
		"/api/v1/campaigns/1/campaign_quotas/77", "/api/v1/nope", "/api/v1/qualifications/abc?country_language_id=1",
		"/api/v1/qualifications/43?country_language_id=99", "/api/v1/qualifications/999?country_language_id=1"} {
		r := b.Do(t, "GET", p, nil)
		if r.Status != 404 || r.Message(t) == "" {
			t.Errorf("GET %s: %d %s", p, r.Status, r.Body)
		}
	}
	for _, c := range []struct{ method, path, allow string }{
		{"DELETE", "/api/v1/campaigns/1", "GET, PUT"},
		{"PATCH", "/api/v1/campaigns", "GET, POST"},
		{"GET", "/api/v1/campaign_relationships", "POST"},
		{"PUT", "/api/v1/campaigns/1/campaign_retargets", "DELETE, POST"},
	} {
		r := b.Do(t, c.method, c.path, nil)
		if r.Status != 405 || r.Header.Get("Allow") != c.allow {
			t.Errorf("%s %s: %d Allow %q %s", c.method, c.path, r.Status, r.Header.Get("Allow"), r.Body)
		}
	}
	// Trailing slash.
	b.Do(t, "GET", "/api/v1/campaigns/1/", nil).Expect(t, 200)
	b.Do(t, "POST", "/api/v1/campaign_relationships/", map[string]any{"campaign_id": id, "related_campaign_id": createCampaign(t, b, nil)}).Expect(t, 201)
	// Bad query parameters.
	b.Do(t, "GET", "/api/v1/campaigns?country_language_id=x", nil).Expect(t, 400)
	b.Do(t, "GET", "/api/v1/qualifications?country_language_id=", nil).Expect(t, 400)
	b.Do(t, "GET", "/api/v1/qualifications/43", nil).Expect(t, 400)
	var list []map[string]any
	b.Do(t, "GET", "/api/v1/campaigns?country_language_id=3", nil).Expect(t, 200).Decode(t, &list)
	if len(list) != 0 {
		t.Errorf("filter: %v", list)
	}
}

// TestIsolation: every route on another buyer's resources answers 404 (or 422 for ids in
// bodies), and changes nothing.
func TestIsolation(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	a, other := s.NewBuyer(t), s.NewBuyer(t)
	c1 := createCampaign(t, a, nil)
	c2 := createCampaign(t, a, nil)
	q := createQuota(t, a, c1, nil)
	var cq struct {
		QuestionID int `json:"question_id"`
	}
	a.Do(t, "POST", "/api/v1/custom_qualifications", map[string]any{"question_text": "Q?", "answer_type": 0, "country_language_id": 1}).Expect(t, 201).Decode(t, &cq)
	a.Do(t, "POST", path("/api/v1/custom_qualifications/%d/custom_qualification_answers", cq.QuestionID), map[string]any{"option_text": "A"}).Expect(t, 201)
	var att struct{ ID int64 }
	a.Do(t, "POST", path("/api/v1/campaigns/%d/campaign_qualifications", c1), map[string]any{"question_id": cq.QuestionID, "pre_code_values": "1"}).Expect(t, 201).Decode(t, &att)
	var rel struct{ ID int64 }
	a.Do(t, "POST", "/api/v1/campaign_relationships", map[string]any{"campaign_id": c1, "related_campaign_id": c2}).Expect(t, 201).Decode(t, &rel)
	var acct struct{ ID int64 }
	a.Do(t, "POST", "/api/v1/adhoc_accounts", map[string]any{"buyer_name": "N", "buyer_identifier": "I"}).Expect(t, 201).Decode(t, &acct)
	before := a.Do(t, "GET", path("/api/v1/campaigns/%d", c1), nil).Expect(t, 200).Body

	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", path("/api/v1/campaigns/%d", c1), nil},
		{"PUT", path("/api/v1/campaigns/%d", c1), map[string]any{"name": "mine"}},
		{"POST", path("/api/v1/campaigns/%d/campaign_quotas", c1), quotaBody()},
		{"GET", path("/api/v1/campaigns/%d/campaign_quotas/%d", c1, q), nil},
		{"PUT", path("/api/v1/campaigns/%d/campaign_quotas/%d", c1, q), map[string]any{"num_respondents": 1}},
		{"DELETE", path("/api/v1/campaigns/%d/campaign_quotas/%d", c1, q), nil},
		{"POST", path("/api/v1/campaigns/%d/campaign_retargets", c1), map[string]any{"retargeting_type": 2, "retargeting_ids": []string{"d"}}},
		{"DELETE", path("/api/v1/campaigns/%d/campaign_retargets", c1), map[string]any{"retargeting_type": 2, "retargeting_ids": []string{"d"}}},
		{"POST", path("/api/v1/campaigns/%d/campaign_exclusions", c1), map[string]any{"player_ids": []string{"x"}}},
		{"DELETE", path("/api/v1/campaign_relationships/%d", rel.ID), nil},
		{"POST", path("/api/v1/custom_qualifications/%d/custom_qualification_answers", cq.QuestionID), map[string]any{"option_text": "B"}},
		{"GET", path("/api/v1/qualifications/%d?country_language_id=1", cq.QuestionID), nil},
		{"POST", path("/api/v1/campaigns/%d/campaign_qualifications", c1), map[string]any{"question_id": cq.QuestionID, "pre_code_values": "1"}},
		{"PUT", path("/api/v1/campaigns/%d/campaign_qualifications/%d", c1, att.ID), map[string]any{"pre_code_values": "1"}},
		{"DELETE", path("/api/v1/campaigns/%d/campaign_qualifications/%d", c1, att.ID), nil},
	} {
		if r := other.Do(t, c.method, c.path, c.body); r.Status != 404 {
			t.Errorf("%s %s by another buyer: %d %s", c.method, c.path, r.Status, r.Body)
		}
	}
	// Ids in bodies: 422 naming the field.
	oc := createCampaign(t, other, nil)
	for _, c := range []struct {
		path  string
		body  map[string]any
		field string
	}{
		{"/api/v1/campaign_relationships", map[string]any{"campaign_id": c1, "related_campaign_id": oc}, "campaign_id"},
		{"/api/v1/campaign_relationships", map[string]any{"campaign_id": oc, "related_campaign_id": c1}, "related_campaign_id"},
		{"/api/v1/campaigns", merge(campaignBody(), map[string]any{"buyer_account_id": acct.ID}), "buyer_account_id"},
		{"/api/v1/campaigns", merge(campaignBody(), map[string]any{"project_id": 1}), "project_id"},
		{path("/api/v1/campaigns/%d/campaign_quotas", oc), map[string]any{"num_respondents": 5, "campaign_qualifications": []any{
			map[string]any{"question_id": cq.QuestionID, "pre_codes": []int{1}}}}, "campaign_qualifications[0].question_id"},
		{path("/api/v1/campaigns/%d/campaign_qualifications", oc), map[string]any{"question_id": cq.QuestionID, "pre_code_values": "1"}, "question_id"},
	} {
		r := other.Do(t, "POST", c.path, c.body)
		if r.Status != 422 || !strings.HasPrefix(r.Message(t), c.field+" ") {
			t.Errorf("POST %s %v: %d %s, want 422 naming %s", c.path, c.body, r.Status, r.Body, c.field)
		}
	}
	other.Do(t, "PUT", path("/api/v1/campaigns/%d", oc), map[string]any{"buyer_account_id": acct.ID}).Expect(t, 422)
	var qs []map[string]any
	other.Do(t, "GET", "/api/v1/qualifications?country_language_id=1", nil).Expect(t, 200).Decode(t, &qs)
	for _, q := range qs {
		if q["question_id"].(float64) >= 100000 {
			t.Errorf("another buyer's custom question is listed: %v", q)
		}
	}
	var list []any
	other.Do(t, "GET", "/api/v1/campaigns", nil).Expect(t, 200).Decode(t, &list)
	if len(list) != 1 {
		t.Errorf("other buyer lists %d campaigns", len(list))
	}
	if after := a.Do(t, "GET", path("/api/v1/campaigns/%d", c1), nil).Expect(t, 200).Body; string(after) != string(before) {
		t.Errorf("campaign changed by another buyer:\n%s\n%s", before, after)
	}
}

func merge(a, b map[string]any) map[string]any {
	for k, v := range b {
		a[k] = v
	}
	return a
}

// TestBodies: bad JSON is 400 and an oversized body 413 on every route that reads a body.
func TestBodies(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	b := s.NewBuyer(t)
	id := createCampaign(t, b, nil)
	q := createQuota(t, b, id, nil)
	big := `{"name":"` + strings.Repeat("x", 1<<20) + `"}`
	for _, p := range []struct{ method, path string }{
		{"POST", "/api/v1/campaigns"},
		{"PUT", path("/api/v1/campaigns/%d", id)},
		{"POST", path("/api/v1/campaigns/%d/campaign_quotas", id)},
		{"PUT", path("/api/v1/campaigns/%d/campaign_quotas/%d", id, q)},
		{"POST", path("/api/v1/campaigns/%d/campaign_retargets", id)},
		{"DELETE", path("/api/v1/campaigns/%d/campaign_retargets", id)},
		{"POST", path("/api/v1/campaigns/%d/campaign_exclusions", id)},
		{"POST", "/api/v1/campaign_relationships"},
		{"POST", "/api/v1/custom_qualifications"},
		{"POST", path("/api/v1/campaigns/%d/campaign_qualifications", id)},
		{"POST", "/api/v1/adhoc_accounts"},
	} {
		for _, bad := range []string{`{"name":`, `[1,2]`, `{"a":1} {"b":2}`, `nonsense`} {
			if r := b.Do(t, p.method, p.path, bad); r.Status != 400 || r.Message(t) == "" {
				t.Errorf("%s %s %q: %d %s", p.method, p.path, bad, r.Status, r.Body)
			}
		}
		if r := b.Do(t, p.method, p.path, big); r.Status != 413 {
			t.Errorf("%s %s 1 MiB: %d %s", p.method, p.path, r.Status, r.Body)
		}
	}
}

func TestValidation(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	b := s.NewBuyer(t)
	id := createCampaign(t, b, nil)
	q := createQuota(t, b, id, nil)
	var cq struct {
		QuestionID int `json:"question_id"`
	}
	b.Do(t, "POST", "/api/v1/custom_qualifications", map[string]any{"question_text": "Q?", "answer_type": 1, "country_language_id": 1}).Expect(t, 201).Decode(t, &cq)
	b.Do(t, "POST", path("/api/v1/custom_qualifications/%d/custom_qualification_answers", cq.QuestionID), map[string]any{"option_text": "A"}).Expect(t, 201)
	manyIDs := make([]string, 10_001)
	for i := range manyIDs {
		manyIDs[i] = "x"
	}
	camp := func(k string, v any) map[string]any { return merge(campaignBody(), map[string]any{k: v}) }
	without := func(k string) map[string]any { m := campaignBody(); delete(m, k); return m }
	quota := func(quals ...any) map[string]any {
		return map[string]any{"num_respondents": 5, "campaign_qualifications": quals}
	}
	qual := func(id int, codes ...any) map[string]any {
		return map[string]any{"question_id": id, "pre_codes": codes}
	}
	cp := path("/api/v1/campaigns/%d", id)
	gb := createCampaign(t, b, map[string]any{"country_language_id": 3})
	qp := path("/api/v1/campaigns/%d/campaign_quotas", id)
	rp := path("/api/v1/campaigns/%d/campaign_retargets", id)
	cases := []struct {
		method, path string
		body         any
		field        string
	}{
		{"POST", "/api/v1/campaigns", without("name"), "name"},
		{"POST", "/api/v1/campaigns", camp("name", "  "), "name"},
		{"POST", "/api/v1/campaigns", camp("name", strings.Repeat("n", 256)), "name"},
		{"POST", "/api/v1/campaigns", camp("name", 5), "name"},
		{"POST", "/api/v1/campaigns", without("incidence"), "incidence"},
		{"POST", "/api/v1/campaigns", camp("incidence", 101), "incidence"},
		{"POST", "/api/v1/campaigns", camp("incidence", "40"), "incidence"},
		{"POST", "/api/v1/campaigns", camp("incidence", 40.5), "incidence"},
		{"POST", "/api/v1/campaigns", without("length_of_interview"), "length_of_interview"},
		{"POST", "/api/v1/campaigns", camp("length_of_interview", 121), "length_of_interview"},
		{"POST", "/api/v1/campaigns", camp("length_of_interview", 0), "length_of_interview"},
		{"POST", "/api/v1/campaigns", without("country_language_id"), "country_language_id"},
		{"POST", "/api/v1/campaigns", camp("country_language_id", 99), "country_language_id"},
		{"POST", "/api/v1/campaigns", without("supplier_link"), "supplier_link"},
		{"POST", "/api/v1/campaigns", camp("supplier_link", "ftp://x.test/{ID}"), "supplier_link"},
		{"POST", "/api/v1/campaigns", camp("supplier_link", "/relative?id={ID}"), "supplier_link"},
		{"POST", "/api/v1/campaigns", camp("supplier_link", "https://x.test/?a={ID}&b={ID}"), "supplier_link"},
		{"POST", "/api/v1/campaigns", camp("supplier_link", "https://x.test/?h={LINK_HASH}"), "supplier_link"},
		{"POST", "/api/v1/campaigns", camp("supplier_link", "https://x.test/?security_hash={LINK_HASH}&a=1"), "supplier_link"},
		{"POST", "/api/v1/campaigns", camp("supplier_link", "https://x.test/?a={id}&b={ID}"), "supplier_link"},
		{"POST", "/api/v1/campaigns", camp("supplier_link", "https://x.test:99999/?{ID}"), "supplier_link"},
		{"POST", "/api/v1/campaigns", camp("supplier_link", "https://x.test;script-src,default-src/?{ID}"), "supplier_link"},
		{"POST", "/api/v1/campaigns", camp("supplier_link", "https://user:pw@x.test/?{ID}"), "supplier_link"},
		{"POST", "/api/v1/campaigns", camp("supplier_link", "https://x.test/s#{ID}"), "supplier_link"},
		{"PUT", cp, map[string]any{"supplier_link": "https://x.test:0/?{ID}"}, "supplier_link"},
		{"POST", "/api/v1/campaigns", camp("cpi", -1), "cpi"},
		{"POST", "/api/v1/campaigns", camp("cpi", "abc"), "cpi"},
		{"POST", "/api/v1/campaigns", camp("cpi", true), "cpi"},
		{"POST", "/api/v1/campaigns", camp("cpi", "10000.01"), "cpi"}, // the money bounds (docs/rules.md §7)
		{"POST", "/api/v1/campaigns", camp("cpi", 1e13), "cpi"},
		{"POST", "/api/v1/campaigns", camp("days_in_field", 0), "days_in_field"},
		{"POST", "/api/v1/campaigns", camp("max_daily_completes", 0), "max_daily_completes"},
		{"POST", "/api/v1/campaigns", camp("max_daily_completes", "x"), "max_daily_completes"},
		{"POST", "/api/v1/campaigns", camp("reentry_interval", -1), "reentry_interval"},
		{"POST", "/api/v1/campaigns", camp("supported_devices", []int{0, 3}), "supported_devices[1]"},
		{"POST", "/api/v1/campaigns", camp("supported_devices", 1), "supported_devices"},
		{"POST", "/api/v1/campaigns", camp("is_retarget", "yes"), "is_retarget"},
		{"POST", "/api/v1/campaigns", camp("buyer_account_id", 12345), "buyer_account_id"},
		{"POST", "/api/v1/campaigns", camp("project_id", 12345), "project_id"},
		{"PUT", cp, map[string]any{"cpi": "10000.01"}, "cpi"},
		{"PUT", cp, map[string]any{"status": 4}, "status"},
		{"PUT", cp, map[string]any{"status": 7}, "status"},
		{"PUT", cp, map[string]any{"status": "2"}, "status"},
		{"PUT", cp, map[string]any{"incidence": 0}, "incidence"},
		{"PUT", cp, map[string]any{"name": ""}, "name"},
		{"PUT", cp, map[string]any{"supplier_link": "x"}, "supplier_link"},
		{"PUT", cp, map[string]any{"country_language_id": 99}, "country_language_id"},
		{"POST", qp, map[string]any{"campaign_qualifications": []any{}}, "num_respondents"},
		{"POST", qp, map[string]any{"num_respondents": 5}, "campaign_qualifications"},
		{"POST", qp, map[string]any{"num_respondents": 0, "campaign_qualifications": []any{}}, "num_respondents"},
		{"POST", qp, map[string]any{"num_respondents": "5", "campaign_qualifications": []any{}}, "num_respondents"},
		{"POST", qp, map[string]any{"num_respondents": 5, "campaign_qualifications": "x"}, "campaign_qualifications"},
		{"POST", qp, map[string]any{"num_respondents": 5, "is_global": 1, "campaign_qualifications": []any{}}, "is_global"},
		{"POST", qp, quota(map[string]any{"pre_codes": []int{1}}), "campaign_qualifications[0].question_id"},
		{"POST", qp, quota(qual(43, 1), qual(9999, 1)), "campaign_qualifications[1].question_id"},
		{"POST", path("/api/v1/campaigns/%d/campaign_quotas", gb), quota(qual(47, 1)), "campaign_qualifications[0].question_id"},
		{"POST", qp, quota(qual(43)), "campaign_qualifications[0].pre_codes"},
		{"POST", qp, quota(qual(43, 9)), "campaign_qualifications[0].pre_codes"},
		{"POST", qp, quota(qual(43, "male")), "campaign_qualifications[0].pre_codes[0]"},
		{"POST", qp, quota(qual(43, true)), "campaign_qualifications[0].pre_codes[0]"},
		{"POST", qp, quota(qual(42, 18, 121)), "campaign_qualifications[0].pre_codes[1]"},
		{"POST", qp, quota(qual(42, 18.5)), "campaign_qualifications[0].pre_codes[0]"},
		{"POST", qp, quota(qual(45, "  ")), "campaign_qualifications[0].pre_codes[0]"},
		{"POST", qp, quota(qual(43, 1), qual(43, 2)), "campaign_qualifications[1].question_id"},
		{"POST", qp, quota(qual(cq.QuestionID, 2)), "campaign_qualifications[0].pre_codes"},
		{"PUT", path("/api/v1/campaigns/%d/campaign_quotas/%d", id, q), map[string]any{"num_respondents": -3}, "num_respondents"},
		{"PUT", path("/api/v1/campaigns/%d/campaign_quotas/%d", id, q), quota(qual(43, 3)), "campaign_qualifications[0].pre_codes"},
		{"POST", rp, map[string]any{"retargeting_ids": []string{"a"}}, "retargeting_type"},
		{"POST", rp, map[string]any{"retargeting_type": 4, "retargeting_ids": []string{"a"}}, "retargeting_type"},
		{"POST", rp, map[string]any{"retargeting_type": 1}, "retargeting_ids"},
		{"POST", rp, map[string]any{"retargeting_type": 1, "retargeting_ids": []string{}}, "retargeting_ids"},
		{"POST", rp, map[string]any{"retargeting_type": 1, "retargeting_ids": manyIDs}, "retargeting_ids"},
		{"POST", rp, map[string]any{"retargeting_type": 1, "retargeting_ids": []any{map[string]any{"replacement_id": "r"}}}, "retargeting_ids[0].id"},
		{"POST", rp, map[string]any{"retargeting_type": 1, "retargeting_ids": []any{7}}, "retargeting_ids[0]"},
		{"POST", rp, map[string]any{"retargeting_type": 3, "retargeting_ids": []string{"not-a-hash"}}, "retargeting_ids[0].id"},
		{"POST", rp, map[string]any{"retargeting_type": 1, "retargeting_ids": []string{"a"}, "expiration_date": "2026-12-31"}, "expiration_date"},
		{"POST", rp, map[string]any{"retargeting_type": 1, "retargeting_ids": []string{"a"}, "expiration_date": "01-01-2001"}, "expiration_date"},
		{"DELETE", rp, map[string]any{"retargeting_type": 1}, "retargeting_ids"},
		{"POST", path("/api/v1/campaigns/%d/campaign_exclusions", id), map[string]any{"player_ids": manyIDs}, "player_ids"},
		{"POST", path("/api/v1/campaigns/%d/campaign_exclusions", id), map[string]any{"transaction_ids": manyIDs}, "transaction_ids"},
		{"POST", path("/api/v1/campaigns/%d/campaign_exclusions", id), map[string]any{"transaction_ids": "x"}, "transaction_ids"},
		{"POST", "/api/v1/campaign_relationships", map[string]any{"related_campaign_id": id}, "campaign_id"},
		{"POST", "/api/v1/campaign_relationships", map[string]any{"campaign_id": id}, "related_campaign_id"},
		{"POST", "/api/v1/campaign_relationships", map[string]any{"campaign_id": id, "related_campaign_id": id}, "related_campaign_id"},
		{"POST", "/api/v1/campaign_relationships", map[string]any{"campaign_id": id, "related_campaign_id": 424242}, "related_campaign_id"},
		{"POST", "/api/v1/custom_qualifications", map[string]any{"answer_type": 0, "country_language_id": 1}, "question_text"},
		{"POST", "/api/v1/custom_qualifications", map[string]any{"question_text": "Q", "country_language_id": 1}, "answer_type"},
		{"POST", "/api/v1/custom_qualifications", map[string]any{"question_text": "Q", "answer_type": 5, "country_language_id": 1}, "answer_type"},
		{"POST", "/api/v1/custom_qualifications", map[string]any{"question_text": "Q", "answer_type": 0}, "country_language_id"},
		{"POST", "/api/v1/custom_qualifications", map[string]any{"question_text": "Q", "answer_type": 0, "country_language_id": 42}, "country_language_id"},
		{"POST", path("/api/v1/custom_qualifications/%d/custom_qualification_answers", cq.QuestionID), map[string]any{}, "option_text"},
		{"POST", path("/api/v1/campaigns/%d/campaign_qualifications", id), map[string]any{"pre_code_values": "1"}, "question_id"},
		{"POST", path("/api/v1/campaigns/%d/campaign_qualifications", id), map[string]any{"question_id": cq.QuestionID}, "pre_code_values"},
		{"POST", path("/api/v1/campaigns/%d/campaign_qualifications", id), map[string]any{"question_id": cq.QuestionID, "pre_code_values": "1,x"}, "pre_code_values"},
		{"POST", path("/api/v1/campaigns/%d/campaign_qualifications", id), map[string]any{"question_id": cq.QuestionID, "pre_code_values": "2"}, "pre_code_values"},
		{"POST", path("/api/v1/campaigns/%d/campaign_qualifications", id), map[string]any{"question_id": 43, "pre_code_values": "1"}, "question_id"},
		{"POST", "/api/v1/adhoc_accounts", map[string]any{"buyer_name": strings.Repeat("n", 256)}, "buyer_name"},
		{"POST", "/api/v1/adhoc_accounts", map[string]any{"buyer_identifier": 5}, "buyer_identifier"},
		{"POST", "/api/v1/adhoc_accounts", map[string]any{}, "buyer_name"},
		{"POST", "/api/v1/adhoc_accounts", map[string]any{"buyer_name": " ", "buyer_identifier": ""}, "buyer_name"},
		{"POST", "/api/v1/adhoc_accounts", map[string]any{"buyer_name": "n", "buyer_identifier": strings.Repeat("i", 256)}, "buyer_identifier"},
	}
	for _, c := range cases {
		r := b.Do(t, c.method, c.path, c.body)
		if r.Status != 422 {
			t.Errorf("%s %s %s: status %d, want 422; %s", c.method, c.path, short(c.body), r.Status, r.Body)
			continue
		}
		if msg := r.Message(t); !strings.HasPrefix(msg, c.field+" ") {
			t.Errorf("%s %s %s: message %q does not name %s", c.method, c.path, short(c.body), msg, c.field)
		}
	}
	// None of it was stored.
	var d struct {
		Quotas []any `json:"campaign_quotas"`
		Status int   `json:"status"`
	}
	b.Do(t, "GET", cp, nil).Expect(t, 200).Decode(t, &d)
	if len(d.Quotas) != 1 || d.Status != 5 {
		t.Errorf("after rejected writes: %+v", d)
	}
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 120 {
		return string(b[:120]) + "…"
	}
	return string(b)
}

func listenCampaigns(t *testing.T, s *apptest.Server) <-chan int64 {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := pgx.Connect(ctx, s.DB.Pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+persistence.CampaignChannel); err != nil {
		t.Fatal(err)
	}
	ch := make(chan int64, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				return
			}
			var id int64
			_ = json.Unmarshal([]byte(n.Payload), &id)
			ch <- id
		}
	}()
	t.Cleanup(func() { cancel(); <-done; conn.Close(context.Background()) })
	return ch
}

// TestAdhocAccountNames: buyer_name and buyer_identifier are each optional (the buyer
// interface), an account needs at least one of them, and an empty body's 422 names both.
func TestAdhocAccountNames(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	b := s.NewBuyer(t)
	for _, body := range []map[string]any{
		{"buyer_name": "A agency"},
		{"buyer_identifier": "agency-a"},
		{"buyer_name": "B agency", "buyer_identifier": "agency-b"},
	} {
		var acct struct {
			ID              int64  `json:"id"`
			BuyerName       string `json:"buyer_name"`
			BuyerIdentifier string `json:"buyer_identifier"`
		}
		b.Do(t, "POST", "/api/v1/adhoc_accounts", body).Expect(t, 201).Decode(t, &acct)
		if acct.ID == 0 || acct.BuyerName != str(body["buyer_name"]) || acct.BuyerIdentifier != str(body["buyer_identifier"]) {
			t.Errorf("%v: account %+v", body, acct)
		}
	}
	for _, body := range []map[string]any{{}, {"buyer_name": " ", "buyer_identifier": ""}} {
		r := b.Do(t, "POST", "/api/v1/adhoc_accounts", body)
		if msg := r.Message(t); r.Status != 422 || !strings.Contains(msg, "buyer_name") || !strings.Contains(msg, "buyer_identifier") {
			t.Errorf("%v: %d %q, want a 422 naming buyer_name and buyer_identifier", body, r.Status, msg)
		}
	}
}

// str is v as a string, "" when it is none.
func str(v any) string {
	s, _ := v.(string)
	return s
}
