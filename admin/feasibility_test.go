package admin_test

import (
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/engine"
)

// seedPanel puts n US participants into the app's panel: the first women aged 30, the rest
// men aged 50, all active today.
func seedPanel(t *testing.T, s *apptest.Server, women, men int) {
	t.Helper()
	now := time.Now().Unix()
	for i := 0; i < women+men; i++ {
		gender, age := int32(2), int32(30)
		if i >= women {
			gender, age = 1, 50
		}
		_, err := s.App.Panel.Upsert(1, "user-"+itoa64(int64(i)), engine.Participant{ID: int64(1_000_000 + i), CountryID: 1,
			Answers: []engine.Answer{{QuestionID: 42, Codes: []int32{age}}, {QuestionID: 43, Codes: []int32{gender}}}}, now)
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestFeasibility(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	b := s.NewBuyer(t)
	seedPanel(t, s, 300, 100)
	id := createCampaign(t, b, nil)
	women := createQuota(t, b, id, map[string]any{"num_respondents": 50, "campaign_qualifications": []any{
		map[string]any{"question_id": 43, "pre_codes": []int{2}}}})
	men := createQuota(t, b, id, map[string]any{"num_respondents": 50, "campaign_qualifications": []any{
		map[string]any{"question_id": 43, "pre_codes": []int{1}}}})

	type item struct {
		ID        int64  `json:"id"`
		Estimated *int   `json:"estimated_completes"`
		Message   string `json:"message"`
	}
	var res struct {
		ID        int64  `json:"id"`
		Estimated int    `json:"estimated_completes"`
		Days      int    `json:"over_num_days"`
		Quotas    []item `json:"campaign_quotas"`
	}
	b.Do(t, "GET", path("/api/v1/campaigns/%d/feasibility", id), nil).Expect(t, 200).Decode(t, &res)
	if res.ID != id || res.Days != 5 || len(res.Quotas) != 2 || res.Quotas[0].ID != women || res.Quotas[1].ID != men {
		t.Fatalf("campaign feasibility: %+v", res)
	}
	w, m := *res.Quotas[0].Estimated, *res.Quotas[1].Estimated
	if w <= m || m <= 0 || res.Estimated <= 0 {
		t.Errorf("the panel has 3 women for each man: estimates women %d, men %d, total %d", w, m, res.Estimated)
	}

	var q struct {
		ID        int64 `json:"id"`
		Estimated int   `json:"estimated_completes"`
		Days      int   `json:"over_num_days"`
	}
	b.Do(t, "GET", path("/api/v1/campaigns/%d/campaign_quotas/%d/feasibility", id, women), nil).Expect(t, 200).Decode(t, &q)
	if q.ID != women || q.Estimated != w || q.Days != 5 {
		t.Errorf("quota feasibility %+v, want the campaign's per-quota figure %d", q, w)
	}
	b.Do(t, "GET", path("/api/v1/campaigns/%d/campaign_quotas/%d/feasibility", id, men+1000), nil).Expect(t, 404)

	// Realtime: no ids; an unknown question id gets the message docs/feasibility.md states and a total of 0.
	var rt struct {
		Estimated int    `json:"estimated_completes"`
		Days      int    `json:"over_num_days"`
		Quotas    []item `json:"campaign_quotas"`
	}
	b.Do(t, "POST", "/api/v1/campaigns/realtime_feasibility", map[string]any{"incidence": 40, "length_of_interview": 12,
		"days_in_field": 10, "campaign_quotas": []any{map[string]any{"num_respondents": 50, "campaign_qualifications": []any{
			map[string]any{"question_id": 43, "pre_codes": []int{2}}}}}}).Expect(t, 200).Decode(t, &rt)
	if rt.Days != 10 || len(rt.Quotas) != 1 || rt.Quotas[0].ID != 0 || rt.Quotas[0].Estimated == nil || rt.Estimated <= 0 {
		t.Errorf("realtime: %+v", rt)
	}
	b.Do(t, "POST", "/api/v1/campaigns/realtime_feasibility", map[string]any{"incidence": 40, "length_of_interview": 12,
		"campaign_quotas": []any{map[string]any{"num_respondents": 50, "campaign_qualifications": []any{
			map[string]any{"question_id": 723, "pre_codes": []int{1}}}}}}).Expect(t, 200).Decode(t, &rt)
	if rt.Estimated != 0 || len(rt.Quotas) != 1 || rt.Quotas[0].Message != "We can't estimate feasibility for question ids: ( 723 )" {
		t.Errorf("unknown question: %+v", rt)
	}
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"length_of_interview": 12, "campaign_quotas": []any{}}, "incidence"},
		{map[string]any{"incidence": 0, "length_of_interview": 12}, "incidence"},
		{map[string]any{"incidence": 10}, "length_of_interview"},
		{map[string]any{"incidence": 10, "length_of_interview": 12}, "campaign_quotas"},
		{map[string]any{"incidence": 10, "length_of_interview": 12, "country_language_id": 99,
			"campaign_quotas": []any{map[string]any{"num_respondents": 5, "campaign_qualifications": []any{}}}}, "country_language_id"},
		{map[string]any{"incidence": 10, "length_of_interview": 12,
			"campaign_quotas": []any{map[string]any{"campaign_qualifications": []any{}}}}, "campaign_quotas[0].num_respondents"},
	} {
		msg := b.Do(t, "POST", "/api/v1/campaigns/realtime_feasibility", tc.body).Expect(t, 422).Message(t)
		if len(msg) < len(tc.field) || msg[:len(tc.field)] != tc.field {
			t.Errorf("%v: message %q does not name %s", tc.body, msg, tc.field)
		}
	}
}
