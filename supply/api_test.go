package supply_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/internal/entrytoken"
	"github.com/switchboard/switchboard/supply"
)

func TestAuthOnEverySupplyRoute(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	p := newPartner(t, s)
	routes := []struct{ method, path string }{
		{"GET", "/supply_api/v4/countries"},
		{"GET", "/supply_api/v4/qualifications?country_id=1"},
		{"POST", "/supply_api/v4/players/impanel"},
		{"GET", "/supply_api/v4/campaigns?user_ip=1.2.3.4&device_type=1"},
		{"GET", "/supply_api/v4/countries/"},
		{"GET", "/supply_api/v4/postbacks?status=failed"},
		{"POST", "/supply_api/v4/postbacks/test"},
		{"GET", "/supply_api/v4/stats?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z"},
		{"GET", "/supply_api/v4/statements?month=2026-01"},
	}
	for _, rt := range routes {
		for _, tok := range []string{"", "wrong-token", p.Token + "x"} {
			q := *p
			q.Token = tok
			r := q.do(t, rt.method, rt.path, map[string]string{"X-User-Identifier": "u"}, map[string]any{})
			expectError(t, r, 401, "token")
		}
	}
	// A token of the other environment is unknown here.
	live := apptest.Start(t, apptest.Options{Environment: "live"})
	pl := newPartner(t, s) // staging publisher
	pl.s = live
	if err := live.App.Supply.ReloadPublishers(context.Background()); err != nil {
		t.Fatal(err)
	}
	expectError(t, pl.do(t, "GET", "/supply_api/v4/countries", nil, nil), 401, "token")
}

func TestCountries(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	p := newPartner(t, s)
	r := p.do(t, "GET", "/supply_api/v4/countries", nil, nil).Expect(t, 200)
	var got []struct {
		ID                 int    `json:"id"`
		Name               string `json:"name"`
		ISOCode            string `json:"iso_code"`
		CountryLanguageIDs []int  `json:"country_language_ids"`
	}
	r.Decode(t, &got)
	want := map[int]string{1: "US", 2: "GB", 3: "CA", 4: "DE", 5: "FR", 6: "AU"}
	if len(got) != 6 {
		t.Fatalf("countries %s", r.Body)
	}
	for _, c := range got {
		if want[c.ID] != c.ISOCode || c.Name == "" || len(c.CountryLanguageIDs) == 0 {
			t.Fatalf("country %+v", c)
		}
	}
	if mustJSON(t, got[0].CountryLanguageIDs) != "[1,2]" || mustJSON(t, got[2].CountryLanguageIDs) != "[4,5]" {
		t.Fatalf("language ids %s", r.Body)
	}
}

func TestQualifications(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	p := newPartner(t, s)
	type qual struct {
		QuestionID   int    `json:"question_id"`
		QuestionText string `json:"question_text"`
		CountryID    int    `json:"country_id"`
		Name         string `json:"name"`
		AnswerType   string `json:"answer_type"`
		Answers      []struct {
			OptionText string `json:"option_text"`
			PreCode    int    `json:"pre_code"`
		} `json:"qualification_answers"`
		Required bool `json:"required"`
	}
	for _, country := range []string{"1", "2", "3", "4", "5", "6"} {
		r := p.do(t, "GET", "/supply_api/v4/qualifications?country_id="+country, nil, nil).Expect(t, 200)
		var qs []qual
		r.Decode(t, &qs)
		if len(qs) < 12 {
			t.Fatalf("country %s: %d questions", country, len(qs))
		}
		byID := map[int]qual{}
		for _, q := range qs {
			byID[q.QuestionID] = q
			if q.AnswerType != "Single select" && q.AnswerType != "Multi select" && q.AnswerType != "Text" {
				t.Fatalf("answer_type %q", q.AnswerType)
			}
			if (q.AnswerType == "Text") != (len(q.Answers) == 0) {
				t.Fatalf("question %d: %s with %d answers", q.QuestionID, q.AnswerType, len(q.Answers))
			}
			if q.Required != (q.QuestionID == 42 || q.QuestionID == 43 || q.QuestionID == 45) {
				t.Fatalf("question %d required=%v", q.QuestionID, q.Required)
			}
			if q.CountryID == 0 || q.Name == "" || q.QuestionText == "" {
				t.Fatalf("question %+v", q)
			}
		}
		if byID[42].AnswerType != "Text" || byID[43].AnswerType != "Single select" || len(byID[43].Answers) != 2 {
			t.Fatalf("country %s: AGE/GENDER %+v %+v", country, byID[42], byID[43])
		}
		if _, ok := byID[47]; ok != (country == "1") {
			t.Fatalf("country %s: HISPANIC present=%v", country, ok)
		}
	}
	// Germany's primary language is German.
	var de []qual
	p.do(t, "GET", "/supply_api/v4/qualifications/?country_id=4", nil, nil).Expect(t, 200).Decode(t, &de)
	if de[0].QuestionText == "What is your age?" {
		t.Fatalf("de-DE question text %q is English", de[0].QuestionText)
	}
	expectError(t, p.do(t, "GET", "/supply_api/v4/qualifications", nil, nil), 400, "country_id")
	expectError(t, p.do(t, "GET", "/supply_api/v4/qualifications?country_id=x", nil, nil), 400, "country_id")
	expectError(t, p.do(t, "GET", "/supply_api/v4/qualifications?country_id=99", nil, nil), 422, "country_id")
}

func TestImpanel(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	p := newPartner(t, s)
	ctx := context.Background()

	user := newUser()
	p.impanel(t, user, 1, usProfile(35, 2, " 94105 ", answer(47, 1), answer(110, 1, 3, 3))...)
	var prof, attrs string
	var country int
	if err := s.DB.Pool.QueryRow(ctx, `SELECT profile::text, attributes::text, country_id FROM participants WHERE publisher_id=$1 AND user_identifier=$2`,
		p.ID, user).Scan(&prof, &attrs, &country); err != nil {
		t.Fatal(err)
	}
	if prof != `{"42": [35], "43": [2], "45": ["94105"], "47": [1], "110": [1, 3]}` || country != 1 || attrs != "{}" {
		t.Fatalf("stored %s %s %d", prof, attrs, country)
	}
	got, ok := s.App.Panel.Get(p.ID, user)
	if !ok || len(got.Answers) != 5 || got.Answers[2].Text != "94105" {
		t.Fatalf("panel %+v", got)
	}

	// A later impanel updates only what it carries; no required question is needed then.
	body := p.impanelBody(user, 1, []map[string]any{answer(42, "36")})
	body["attributes_hash"] = map[string]any{"vip": true, "level": 7, "tier": "gold"}
	p.impanelRaw(t, user, "dev-1", body).Expect(t, 200)
	if err := s.DB.Pool.QueryRow(ctx, `SELECT profile::text, attributes::text FROM participants WHERE publisher_id=$1 AND user_identifier=$2`,
		p.ID, user).Scan(&prof, &attrs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(prof, `"42": [36]`) || !strings.Contains(prof, `"43": [2]`) || attrs != `{"vip": true, "tier": "gold", "level": 7}` {
		t.Fatalf("after update %s %s", prof, attrs)
	}
	if got, _ := s.App.Panel.Get(p.ID, user); got.Answers[0].Codes[0] != 36 {
		t.Fatalf("panel age %+v", got.Answers[0])
	}

	fresh := newUser()
	cases := []struct {
		name   string
		user   string
		body   any
		status int
		msg    string
	}{
		{"missing user header", "", p.impanelBody("", 1, usProfile(30, 1, "10001")), 400, "X-User-Identifier"},
		{"not json", fresh, "{", 400, "JSON"},
		{"array body", fresh, "[]", 400, "object"},
		{"missing ts", fresh, map[string]any{"country_id": 1, "sech": "00"}, 401, "ts"},
		{"missing sech", fresh, map[string]any{"country_id": 1, "ts": time.Now().Unix()}, 401, "sech"},
		{"wrong sech", fresh, func() any {
			b := p.impanelBody(fresh, 1, usProfile(30, 1, "10001"))
			b["sech"] = supply.Sech("other", fresh, b["ts"].(int64))
			return b
		}(), 401, "sech"},
		{"sech of another user", fresh, func() any { b := p.impanelBody("someone", 1, usProfile(30, 1, "10001")); return b }(), 401, "sech"},
		{"stale ts", fresh, func() any {
			ts := time.Now().Unix() - 301
			return map[string]any{"country_id": 1, "ts": ts, "sech": supply.Sech(p.Secret, fresh, ts), "profile_data": usProfile(30, 1, "1")}
		}(), 401, "ts"},
		{"future ts", fresh, func() any {
			ts := time.Now().Unix() + 400
			return map[string]any{"country_id": 1, "ts": ts, "sech": supply.Sech(p.Secret, fresh, ts)}
		}(), 401, "ts"},
		{"missing country", fresh, func() any { b := p.impanelBody(fresh, 1, usProfile(30, 1, "1")); delete(b, "country_id"); return b }(), 422, "country_id"},
		{"unknown country", fresh, p.impanelBody(fresh, 9, usProfile(30, 1, "1")), 422, "country_id"},
		{"string country", fresh, func() any { b := p.impanelBody(fresh, 1, usProfile(30, 1, "1")); b["country_id"] = "US"; return b }(), 422, "country_id"},
		{"unknown question", fresh, p.impanelBody(fresh, 1, usProfile(30, 1, "1", answer(999999, 1))), 422, "profile_data[3].question_id"},
		{"US-only question in GB", fresh, p.impanelBody(fresh, 2, usProfile(30, 1, "SW1A 1AA", answer(47, 1))), 422, "profile_data[3].question_id"},
		{"pre_code not in question", fresh, p.impanelBody(fresh, 1, usProfile(30, 7, "1")), 422, "profile_data[1].values[0]"},
		{"select takes integers", fresh, p.impanelBody(fresh, 1, usProfile(30, 1, "1", answer(110, "1"))), 422, "profile_data[3].values[0]"},
		{"single select takes one", fresh, p.impanelBody(fresh, 1, []map[string]any{answer(42, 30), answer(43, 1, 2), answer(45, "1")}), 422, "profile_data[1].values"},
		{"empty values", fresh, p.impanelBody(fresh, 1, []map[string]any{answer(42, 30), answer(43), answer(45, "1")}), 422, "profile_data[1].values"},
		{"age out of range", fresh, p.impanelBody(fresh, 1, usProfile(121, 1, "1")), 422, "profile_data[0].values[0]"},
		{"age not numeric", fresh, p.impanelBody(fresh, 1, []map[string]any{answer(42, "old"), answer(43, 1), answer(45, "1")}), 422, "profile_data[0].values[0]"},
		{"zip must be a string", fresh, p.impanelBody(fresh, 1, []map[string]any{answer(42, 30), answer(43, 1), answer(45, 94105)}), 422, "profile_data[2].values[0]"},
		{"duplicate question", fresh, p.impanelBody(fresh, 1, usProfile(30, 1, "1", answer(43, 2))), 422, "profile_data[3].question_id"},
		{"entry not an object", fresh, func() any { b := p.impanelBody(fresh, 1, nil); b["profile_data"] = []any{1}; return b }(), 422, "profile_data[0]"},
		{"required missing on first impanel", fresh, p.impanelBody(fresh, 1, []map[string]any{answer(42, 30), answer(43, 1)}), 422, "profile_data"},
		{"no profile on first impanel", fresh, p.impanelBody(fresh, 1, nil), 422, "required question 42"},
		{"attributes not an object", fresh, func() any {
			b := p.impanelBody(fresh, 1, usProfile(30, 1, "1"))
			b["attributes_hash"] = []int{1}
			return b
		}(), 422, "attributes_hash"},
		{"attribute value nested", fresh, func() any {
			b := p.impanelBody(fresh, 1, usProfile(30, 1, "1"))
			b["attributes_hash"] = map[string]any{"x": map[string]any{}}
			return b
		}(), 422, "attributes_hash.x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := p.impanelRaw(t, c.user, "", c.body)
			expectError(t, r, c.status, c.msg)
		})
	}
	var n int
	if err := s.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM participants WHERE user_identifier=$1`, fresh).Scan(&n); err != nil || n != 0 {
		t.Fatalf("a failed impanel stored a participant: %d %v", n, err)
	}
	if _, ok := s.App.Panel.Get(p.ID, fresh); ok {
		t.Fatal("a failed impanel reached the panel")
	}
	// Upper-case hex sech is the same hash.
	b := p.impanelBody(fresh, 1, usProfile(30, 1, "1"))
	b["sech"] = strings.ToUpper(b["sech"].(string))
	p.impanelRaw(t, fresh, "", b).Expect(t, 200)
}

// TestImpanelDatabaseDown stops PostgreSQL under a running server: GET /campaigns keeps
// answering from memory, writes answer 503, and once PostgreSQL is back everything recovers
// without a restart (writes, and buyer changes reaching the engine through LISTEN again).
func TestImpanelDatabaseDown(t *testing.T) {
	s := apptest.Start(t, apptest.Options{})
	p := newPartner(t, s)
	b := s.NewBuyer(t)
	user := newUser()
	p.impanel(t, user, 1, usProfile(30, 1, "10001")...)
	var camp struct {
		ID int64 `json:"id"`
	}
	b.Do(t, "POST", "/api/v1/campaigns", map[string]any{"name": "Outage", "incidence": 50, "length_of_interview": 10,
		"country_language_id": 1, "supplier_link": "https://survey.example/s?tid={ID}"}).Expect(t, 201).Decode(t, &camp)
	b.Do(t, "POST", "/api/v1/campaigns/"+itoa(camp.ID)+"/campaign_quotas",
		map[string]any{"num_respondents": 10, "campaign_qualifications": []any{}}).Expect(t, 201)
	b.Do(t, "PUT", "/api/v1/campaigns/"+itoa(camp.ID), map[string]any{"status": 2}).Expect(t, 200)
	eventually(t, "campaign offered", func() bool { return p.campaigns(t, user, "", 1).has(camp.ID) })

	c := pgtestCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	r := p.impanelRaw(t, "x", "", p.impanelBody("x", 1, usProfile(30, 1, "10001")))
	r.Expect(t, 503)
	errorOf(t, r)
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
	b.Do(t, "PUT", "/api/v1/campaigns/"+itoa(camp.ID), map[string]any{"status": 5}).Expect(t, 503)
	if o := p.campaigns(t, user, "", 1); !o.has(camp.ID) {
		t.Fatalf("offers while the database is down: %+v", o)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "impanel after restart", func() bool {
		return p.impanelRaw(t, "x", "", p.impanelBody("x", 1, usProfile(30, 1, "10001"))).Status == 200
	})
	eventually(t, "buyer write after restart", func() bool {
		return b.Do(t, "PUT", "/api/v1/campaigns/"+itoa(camp.ID), map[string]any{"status": 5}).Status == 200
	})
	eventually(t, "paused campaign gone from offers", func() bool { return !p.campaigns(t, user, "", 1).has(camp.ID) })
}

func TestCampaignsRequestValidation(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	p := newPartner(t, s)
	u := newUser()
	expectError(t, p.campaignsRaw(t, "", "", "user_ip=1.2.3.4&device_type=1"), 400, "X-User-Identifier")
	expectError(t, p.campaignsRaw(t, u, "", "device_type=1"), 400, "user_ip")
	expectError(t, p.campaignsRaw(t, u, "", "user_ip=nope&device_type=1"), 400, "user_ip")
	expectError(t, p.campaignsRaw(t, u, "", "user_ip=1.2.3.4"), 400, "device_type")
	expectError(t, p.campaignsRaw(t, u, "", "user_ip=1.2.3.4&device_type=4"), 400, "device_type")
	expectError(t, p.campaignsRaw(t, u, "", "user_ip=1.2.3.4&device_type=0"), 400, "device_type")
	expectError(t, p.campaignsRaw(t, u, strings.Repeat("d", 256), "user_ip=1.2.3.4&device_type=1"), 400, "X-Device-Identifier")
	p.campaignsRaw(t, u, "", "user_ip=2a00:1450:4001:80b::200e&device_type=3").Expect(t, 200)
}

func TestProfileSurveyForUnprofiled(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	p := newPartner(t, s)
	u := newUser()
	o := p.campaigns(t, u, "dev", 2)
	if len(o.Surveys) != 1 || o.Surveys[0].Identifier != "profile" || !o.Eligibility.IsEligible || o.Eligibility.Reason != 0 {
		t.Fatalf("unprofiled answer %+v", o)
	}
	sv := o.Surveys[0]
	if !strings.HasPrefix(sv.OfferEntryURL, s.PublicURL+"/supply_api/v4/profile?token=") ||
		!strings.HasPrefix(sv.SupportURL, s.PublicURL+"/support?token=") || sv.CurrencyName != `Gems "blue"` {
		t.Fatalf("profile survey %+v", sv)
	}
	c, err := s.App.Supply.Key().Verify(tokenOf(t, sv.OfferEntryURL), time.Now().Unix())
	if err != nil || c.Kind != entrytoken.KindProfile || c.UserID != u || c.PublisherID != p.ID || c.DeviceID != "dev" || c.DeviceType != 2 {
		t.Fatalf("profile token %+v %v", c, err)
	}
	r := get(t, s, sv.OfferEntryURL).Expect(t, 200)
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") || !strings.Contains(string(r.Body), "Where do you live?") {
		t.Fatalf("profiler page %s %s", r.Header.Get("Content-Type"), r.Body)
	}
	get(t, s, sv.SupportURL).Expect(t, 200)
	get(t, s, sv.OfferEntryURL+"x").Expect(t, 403)
	get(t, s, s.PublicURL+"/supply_api/v4/profile").Expect(t, 403)
	get(t, s, strings.Replace(sv.SupportURL, "/support?", "/supply_api/v4/profile?", 1)).Expect(t, 403) // wrong kind

	// After impanel the same request gets offers (an empty market: reason 2).
	p.impanel(t, u, 1, usProfile(30, 1, "10001")...)
	o = p.campaigns(t, u, "dev", 2)
	if len(o.Surveys) != 0 || o.Eligibility.IsEligible || o.Eligibility.Reason != 2 {
		t.Fatalf("after impanel %+v", o)
	}
}

func TestOfferFields(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	p := newPartner(t, s)
	m := newMarket(t, s)
	hi := m.create(campaignSpec{CPICents: 400, LOI: 12, Incidence: 50})
	lo := m.create(campaignSpec{CPICents: 150, LOI: 7, Incidence: 40})
	waitEngine(t, s, hi, true)
	waitEngine(t, s, lo, true)
	u := newUser()
	p.impanel(t, u, 1, usProfile(30, 1, "10001")...)
	r := p.campaignsRaw(t, u, "", "user_ip=1.2.3.4&device_type=1").Expect(t, 200)
	var raw map[string]json.RawMessage
	r.Decode(t, &raw)
	var o offers
	r.Decode(t, &o)
	if len(o.Surveys) != 2 || !o.Eligibility.IsEligible || o.Eligibility.Reason != 0 {
		t.Fatalf("offers %s", r.Body)
	}
	first := o.Surveys[0]
	// epc = 4.00 × 0.5 × 0.5 = 1.0; reward = round(4.00 × 0.5 × 100) = 200.
	if first.Identifier != itoa(hi) || first.LengthInMinutes != 12 || first.ConversionRate != 50 || first.RewardAmount != 200 ||
		first.EPC != 1 || first.CurrencyName != `Gems "blue"` {
		t.Fatalf("first survey %+v", first)
	}
	if o.Surveys[1].Identifier != itoa(lo) || o.Surveys[1].EPC != 0.3 || o.Surveys[1].RewardAmount != 75 {
		t.Fatalf("second survey %+v", o.Surveys[1])
	}
	if !strings.HasPrefix(first.OfferEntryURL, s.PublicURL+"/supply_api/v4/entry?token=") {
		t.Fatalf("offer url %s", first.OfferEntryURL)
	}
	c, err := s.App.Supply.Key().Verify(tokenOf(t, first.OfferEntryURL), time.Now().Unix())
	pp, _ := s.App.Panel.Get(p.ID, u)
	if err != nil || c.Kind != entrytoken.KindOffer || c.CampaignID != hi || c.ParticipantID != pp.ID || c.DeviceType != 1 ||
		c.Expires < time.Now().Unix()+29*60 || c.Expires > time.Now().Unix()+30*60+1 {
		t.Fatalf("offer token %+v %v", c, err)
	}
	if _, err := s.App.Supply.Key().Verify(tokenOf(t, first.OfferEntryURL), time.Now().Unix()+31*60); err == nil {
		t.Fatal("offer token valid after 31 minutes")
	}
	get(t, s, first.SupportURL).Expect(t, 200)

	// Hot tiles: once a minute has closed, the top decile of what was served is hot.
	s.App.Supply.RollHotTiles()
	u2 := newUser()
	p.impanel(t, u2, 1, usProfile(31, 1, "10001")...)
	o = p.campaigns(t, u2, "", 1)
	if !o.Surveys[0].IsHotTile || o.Surveys[1].IsHotTile {
		t.Fatalf("hot tiles %+v", o.Surveys)
	}

	// The same request again is answered from the cache: byte for byte the same.
	a1 := p.campaignsRaw(t, u2, "", "user_ip=1.2.3.4&device_type=1").Body
	a2 := p.campaignsRaw(t, u2, "", "user_ip=1.2.3.4&device_type=1").Body
	if string(a1) != string(a2) {
		eventually(t, "a cached answer", func() bool {
			first := p.campaignsRaw(t, u2, "", "user_ip=1.2.3.4&device_type=1").Body
			second := p.campaignsRaw(t, u2, "", "user_ip=1.2.3.4&device_type=1").Body
			return string(first) == string(second)
		})
	}
	// An impanel retires it at once.
	p.impanel(t, u2, 1, answer(43, 2))
	if a3 := p.campaignsRaw(t, u2, "", "user_ip=1.2.3.4&device_type=1").Body; string(a3) == string(a1) {
		t.Fatal("cached answer survived an impanel")
	}
	// A buyer change retires it too.
	a4 := p.campaignsRaw(t, u2, "", "user_ip=1.2.3.4&device_type=1").Body
	m.exec(lo, `UPDATE campaigns SET status = 5 WHERE id = $1`, lo)
	waitEngine(t, s, lo, false)
	o = p.campaigns(t, u2, "", 1)
	if len(o.Surveys) != 1 || string(a4) == mustJSON(t, o) {
		t.Fatalf("after pause %+v", o)
	}
}
