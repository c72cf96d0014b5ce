package admin_test

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
)

func TestCampaignLifecycle(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	b := s.NewBuyer(t)
	ctx := context.Background()
	type camp struct {
		ID             int64   `json:"id"`
		CPI            string  `json:"cpi"`
		Status         int     `json:"status"`
		TotalRemaining int     `json:"total_remaining"`
		Reentry        *int    `json:"reentry_interval"`
		MaxDaily       *int    `json:"max_daily_completes"`
		ProjectID      int64   `json:"project_id"`
		Wave           int     `json:"wave_number"`
		Devices        []int   `json:"supported_devices"`
		Account        *int64  `json:"buyer_account_id"`
		Redirect       string  `json:"redirect_test_url"`
		Quotas         []quota `json:"campaign_quotas"`
	}
	var c camp
	// cpi: rate card (loi 12 → 15-minute row, incidence 40 → 30% row: 1.95) vs bid.
	b.Do(t, "POST", "/api/v1/campaigns", merge(campaignBody(), map[string]any{"cpi": 1.2, "reentry_interval": 0,
		"supported_devices": []int{2, 1, 2}})).Expect(t, 201).Decode(t, &c)
	if c.CPI != "1.95" || c.Status != 5 || c.Reentry == nil || *c.Reentry != 0 || c.MaxDaily != nil || c.Wave != 1 ||
		len(c.Devices) != 2 || c.Devices[0] != 1 || !strings.HasPrefix(c.Redirect, s.PublicURL+"/router/test/"+itoa64(c.ID)+"?sig=") {
		t.Errorf("created: %+v", c)
	}
	b.Do(t, "PUT", path("/api/v1/campaigns/%d", c.ID), map[string]any{"cpi": "3.456"}).Expect(t, 200).Decode(t, &c)
	if c.CPI != "3.46" {
		t.Errorf("bid 3.456: cpi %s", c.CPI)
	}
	b.Do(t, "PUT", path("/api/v1/campaigns/%d", c.ID), map[string]any{"length_of_interview": 60, "incidence": 5, "reentry_interval": nil, "max_daily_completes": 9}).Expect(t, 200).Decode(t, &c)
	if c.CPI != "12.80" || c.Reentry != nil || c.MaxDaily == nil || *c.MaxDaily != 9 {
		t.Errorf("repriced: %+v", c)
	}
	// Absent fields are left alone; null clears.
	b.Do(t, "PUT", path("/api/v1/campaigns/%d", c.ID), map[string]any{"name": "renamed"}).Expect(t, 200).Decode(t, &c)
	if c.MaxDaily == nil || c.CPI != "12.80" {
		t.Errorf("absent fields changed: %+v", c)
	}
	// Status rules.
	b.Do(t, "PUT", path("/api/v1/campaigns/%d", c.ID), map[string]any{"status": 2}).Expect(t, 422)
	q1 := createQuota(t, b, c.ID, nil)
	q2 := createQuota(t, b, c.ID, map[string]any{"num_respondents": 30, "campaign_qualifications": []any{}})
	createQuota(t, b, c.ID, map[string]any{"num_respondents": 1000, "is_global": true, "campaign_qualifications": []any{}})
	var changed0 time.Time
	s.DB.Pool.QueryRow(ctx, `SELECT status_changed_at FROM campaigns WHERE id=$1`, c.ID).Scan(&changed0)
	b.Do(t, "PUT", path("/api/v1/campaigns/%d", c.ID), map[string]any{"status": 2}).Expect(t, 200).Decode(t, &c)
	if c.Status != 2 || c.TotalRemaining != 130 {
		t.Errorf("activated: %+v", c)
	}
	var changed time.Time
	var completed *time.Time
	s.DB.Pool.QueryRow(ctx, `SELECT status_changed_at, completed_at FROM campaigns WHERE id=$1`, c.ID).Scan(&changed, &completed)
	if !changed.After(changed0) || completed != nil {
		t.Errorf("status_changed_at %v (was %v), completed_at %v", changed, changed0, completed)
	}
	// total_remaining follows completes and never goes negative per quota.
	s.DB.Pool.Exec(ctx, `UPDATE campaign_quotas SET completes = 40 WHERE id = $1`, q2)
	s.DB.Pool.Exec(ctx, `UPDATE campaign_quotas SET completes = 25 WHERE id = $1`, q1)
	b.Do(t, "GET", path("/api/v1/campaigns/%d", c.ID), nil).Expect(t, 200).Decode(t, &c)
	if c.TotalRemaining != 75 {
		t.Errorf("total_remaining %d, want 75", c.TotalRemaining)
	}
	b.Do(t, "PUT", path("/api/v1/campaigns/%d", c.ID), map[string]any{"status": 3}).Expect(t, 200)
	s.DB.Pool.QueryRow(ctx, `SELECT completed_at FROM campaigns WHERE id=$1`, c.ID).Scan(&completed)
	if completed == nil {
		t.Error("completed_at not set on 3")
	}
	b.Do(t, "PUT", path("/api/v1/campaigns/%d", c.ID), map[string]any{"status": 5}).Expect(t, 200)
	s.DB.Pool.QueryRow(ctx, `SELECT completed_at FROM campaigns WHERE id=$1`, c.ID).Scan(&completed)
	if completed != nil {
		t.Error("completed_at kept after leaving 3")
	}
	for _, st := range []int{4, 6} {
		s.DB.Pool.Exec(ctx, `UPDATE campaigns SET status = $2 WHERE id = $1`, c.ID, st)
		if r := b.Do(t, "PUT", path("/api/v1/campaigns/%d", c.ID), map[string]any{"status": 2}); r.Status != 422 {
			t.Errorf("status change from %d: %d", st, r.Status)
		}
		b.Do(t, "PUT", path("/api/v1/campaigns/%d", c.ID), map[string]any{"name": "still editable"}).Expect(t, 200)
	}
	// Projects and waves.
	var w2, w3 camp
	b.Do(t, "POST", "/api/v1/campaigns", merge(campaignBody(), map[string]any{"project_id": c.ProjectID})).Expect(t, 201).Decode(t, &w2)
	b.Do(t, "POST", "/api/v1/campaigns", merge(campaignBody(), map[string]any{"project_id": c.ProjectID})).Expect(t, 201).Decode(t, &w3)
	var ptype string
	s.DB.Pool.QueryRow(ctx, `SELECT project_type FROM projects WHERE id=$1`, c.ProjectID).Scan(&ptype)
	if w2.ProjectID != c.ProjectID || w2.Wave != 2 || w3.Wave != 3 || ptype != "recurring" {
		t.Errorf("waves: %+v %+v %s", w2, w3, ptype)
	}
	var own camp
	b.Do(t, "POST", "/api/v1/campaigns", campaignBody()).Expect(t, 201).Decode(t, &own)
	s.DB.Pool.QueryRow(ctx, `SELECT project_type FROM projects WHERE id=$1`, own.ProjectID).Scan(&ptype)
	if own.ProjectID == c.ProjectID || ptype != "one_time" {
		t.Errorf("new project: %+v %s", own, ptype)
	}
	// The list aggregates in SQL and filters by country language.
	createCampaign(t, b, map[string]any{"country_language_id": 3})
	var list []camp
	b.Do(t, "GET", "/api/v1/campaigns?country_language_id=3", nil).Expect(t, 200).Decode(t, &list)
	if len(list) != 1 {
		t.Errorf("filtered list: %+v", list)
	}
	b.Do(t, "GET", "/api/v1/campaigns", nil).Expect(t, 200).Decode(t, &list)
	if len(list) != 5 || list[0].TotalRemaining != 75 || list[0].Quotas != nil {
		t.Errorf("list: %+v", list)
	}
}

type quota struct {
	ID             int64  `json:"id"`
	Name           string `json:"name"`
	NumRespondents int    `json:"num_respondents"`
	IsGlobal       bool   `json:"is_global"`
	Quals          []struct {
		QuestionID int   `json:"question_id"`
		PreCodes   []any `json:"pre_codes"`
	} `json:"campaign_qualifications"`
}

func itoa64(n int64) string { return path("%d", n) }

func TestQuotas(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	b := s.NewBuyer(t)
	id := createCampaign(t, b, nil)
	var q quota
	b.Do(t, "POST", path("/api/v1/campaigns/%d/campaign_quotas", id), map[string]any{"num_respondents": 10, "campaign_qualifications": []any{
		map[string]any{"question_id": 45, "pre_codes": []any{" sw1a 1aa ", 94105, "94105"}},
		map[string]any{"question_id": 42, "pre_codes": []any{"30", 31}},
	}}).Expect(t, 201).Decode(t, &q)
	if len(q.Quals) != 2 || len(q.Quals[0].PreCodes) != 2 || q.Quals[0].PreCodes[0] != "SW1A1AA" || q.Quals[0].PreCodes[1] != "94105" ||
		q.Quals[1].PreCodes[0] != float64(30) {
		t.Errorf("created: %+v", q)
	}
	var texts []string
	s.DB.Pool.QueryRow(context.Background(), `SELECT text_values FROM quota_qualifications WHERE quota_id=$1 AND question_id=45`, q.ID).Scan(&texts)
	if len(texts) != 2 || texts[0] != "SW1A1AA" {
		t.Errorf("stored text values %v", texts)
	}
	qp := path("/api/v1/campaigns/%d/campaign_quotas/%d", id, q.ID)
	// Empty or absent campaign_qualifications leave them; non-empty replaces.
	b.Do(t, "PUT", qp, map[string]any{"name": "renamed", "campaign_qualifications": []any{}}).Expect(t, 200).Decode(t, &q)
	if q.Name != "renamed" || len(q.Quals) != 2 {
		t.Errorf("empty update: %+v", q)
	}
	b.Do(t, "PUT", qp, map[string]any{"is_global": true, "campaign_qualifications": []any{map[string]any{"question_id": 43, "pre_codes": []int{1}}}}).Expect(t, 200).Decode(t, &q)
	if len(q.Quals) != 1 || q.Quals[0].QuestionID != 43 || !q.IsGlobal || q.NumRespondents != 10 {
		t.Errorf("replaced: %+v", q)
	}
	var named map[string]any
	b.Do(t, "PUT", qp, map[string]any{"name": nil}).Expect(t, 200).Decode(t, &named)
	if named["name"] != nil {
		t.Errorf("name null: %+v", named)
	}
	b.Do(t, "GET", qp, nil).Expect(t, 200)
	// Ids are unique across campaigns.
	other := createCampaign(t, b, nil)
	q2 := createQuota(t, b, other, nil)
	if q2 <= q.ID {
		t.Errorf("quota ids %d then %d", q.ID, q2)
	}
	b.Do(t, "GET", path("/api/v1/campaigns/%d/campaign_quotas/%d", other, q.ID), nil).Expect(t, 404)
	if r := b.Do(t, "DELETE", qp, nil).Expect(t, 204); len(r.Body) != 0 {
		t.Errorf("204 with body %q", r.Body)
	}
	b.Do(t, "DELETE", qp, nil).Expect(t, 404)
}

func TestRetargetsAndExclusions(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	b, other := s.NewBuyer(t), s.NewBuyer(t)
	ctx := context.Background()
	id := createCampaign(t, b, nil)
	otherCampaign := createCampaign(t, other, nil)
	p1 := seedSession(t, s, b, id, "u1", "RESP1", "TID1")
	p2 := seedSession(t, s, other, otherCampaign, "u2", "RESP2", "TID2")
	rp := path("/api/v1/campaigns/%d/campaign_retargets", id)
	b.Do(t, "POST", rp, map[string]any{"retargeting_type": 0, "retargeting_ids": []any{
		map[string]any{"id": "TID1", "replacement_id": "x"}, map[string]any{"id": "TID2"}, "TID-UNKNOWN"}}).Expect(t, 200)
	b.Do(t, "POST", rp, map[string]any{"retargeting_type": 1, "retargeting_ids": []string{"RESP1", "RESP2"}, "expiration_date": "6-30-2099"}).Expect(t, 200)
	rows, _ := s.DB.Pool.Query(ctx, `SELECT retargeting_type, identifier, COALESCE(replacement_id, ''), participant_id, expires_at
		FROM campaign_retargets WHERE campaign_id = $1 ORDER BY retargeting_type, identifier`, id)
	type rec struct {
		typ         int16
		id, repl    string
		participant *int64
		exp         time.Time
	}
	var got []rec
	for rows.Next() {
		var r rec
		if err := rows.Scan(&r.typ, &r.id, &r.repl, &r.participant, &r.exp); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if len(got) != 5 {
		t.Fatalf("records: %+v", got)
	}
	pid := func(r rec) int64 {
		if r.participant == nil {
			return 0
		}
		return *r.participant
	}
	// Sorted: TID-UNKNOWN, TID1, TID2, RESP1, RESP2.
	if pid(got[1]) != p1 || got[1].repl != "x" || pid(got[0]) != 0 || pid(got[2]) != 0 || pid(got[3]) != p1 || pid(got[4]) != 0 {
		t.Errorf("participants (p1 %d, other buyer's p2 %d): %+v", p1, p2, got)
	}
	if d := time.Until(got[0].exp); d < 29*24*time.Hour || d > 31*24*time.Hour {
		t.Errorf("default expiry in %v", d)
	}
	if !got[3].exp.Equal(time.Date(2099, 7, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("expiration_date 6-30-2099 → %v", got[3].exp)
	}
	s.DB.Pool.Exec(ctx, `UPDATE campaign_retargets SET expires_at = now() - interval '1 minute' WHERE identifier = 'TID-UNKNOWN'`)
	var sum struct {
		RetargetCount int  `json:"retarget_count"`
		IsMaid        bool `json:"is_maid_targeted"`
	}
	b.Do(t, "DELETE", rp, map[string]any{"retargeting_type": 1, "retargeting_ids": []string{"RESP2", "nope"}}).Expect(t, 200).Decode(t, &sum)
	if sum.RetargetCount != 3 {
		t.Errorf("retarget_count %d, want 3 (one expired, one removed)", sum.RetargetCount)
	}
	h := hashedMAID("abc-def")
	b.Do(t, "POST", rp, map[string]any{"retargeting_type": 3, "retargeting_ids": []string{h}}).Expect(t, 200).Decode(t, &sum)
	if !sum.IsMaid {
		t.Error("is_maid_targeted false after type 3")
	}
	b.Do(t, "DELETE", rp, map[string]any{"retargeting_type": 3, "retargeting_ids": []string{h}}).Expect(t, 200).Decode(t, &sum)
	if sum.IsMaid {
		t.Error("is_maid_targeted true after removing type 3")
	}

	var ex map[string][]string
	b.Do(t, "POST", path("/api/v1/campaigns/%d/campaign_exclusions", id), map[string]any{
		"player_ids": []string{"RESP1", "RESP2", "RESP1"}, "transaction_ids": []string{"TID1", "TID2"}}).Expect(t, 200).Decode(t, &ex)
	want := map[string][]string{"player_ids_excluded": {"RESP1"}, "player_ids_not_found": {"RESP2"},
		"transaction_ids_excluded": {"TID1"}, "transaction_ids_not_found": {"TID2"}}
	for k, v := range want {
		if len(ex[k]) != len(v) || ex[k][0] != v[0] {
			t.Errorf("%s = %v, want %v", k, ex[k], v)
		}
	}
	var n int
	s.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM campaign_exclusions WHERE campaign_id=$1 AND participant_id=$2`, id, p1).Scan(&n)
	if n != 1 {
		t.Errorf("exclusions stored: %d", n)
	}
	b.Do(t, "POST", path("/api/v1/campaigns/%d/campaign_exclusions", id), map[string]any{}).Expect(t, 200)
}

func TestNotifications(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	b := s.NewBuyer(t)
	ch := listenCampaigns(t, s)
	c1 := createCampaign(t, b, nil)
	c2 := createCampaign(t, b, nil)
	q := createQuota(t, b, c1, nil)
	b.Do(t, "PUT", path("/api/v1/campaigns/%d/campaign_quotas/%d", c1, q), map[string]any{"num_respondents": 3}).Expect(t, 200)
	b.Do(t, "POST", path("/api/v1/campaigns/%d/campaign_retargets", c2), map[string]any{"retargeting_type": 2, "retargeting_ids": []string{"dev"}}).Expect(t, 200)
	b.Do(t, "POST", "/api/v1/campaign_relationships", map[string]any{"campaign_id": c1, "related_campaign_id": c2}).Expect(t, 201)
	b.Do(t, "DELETE", path("/api/v1/campaigns/%d/campaign_quotas/%d", c1, q), nil).Expect(t, 204)
	b.Do(t, "PUT", path("/api/v1/campaigns/%d", c1), map[string]any{"status": 2}).Expect(t, 422) // rolled back: no notification
	want := []int64{c1, c2, c1, c1, c2, c1, c2, c1}
	var got []int64
	timeout := time.After(5 * time.Second)
	for len(got) < len(want) {
		select {
		case id := <-ch:
			got = append(got, id)
		case <-timeout:
			t.Fatalf("notifications %v, want %v", got, want)
		}
	}
	// The relationship's two notifications may come in either order.
	sort.Slice(got[5:7], func(i, j int) bool { return got[5+i] < got[5+j] })
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("notifications %v, want %v", got, want)
		}
	}
	select {
	case id := <-ch:
		t.Errorf("unexpected notification for %d", id)
	case <-time.After(200 * time.Millisecond):
	}
}

func TestCustomScreeners(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	b := s.NewBuyer(t)
	id := createCampaign(t, b, nil)
	var q struct {
		QuestionID int    `json:"question_id"`
		Name       string `json:"name"`
		CL         int    `json:"country_language_id"`
	}
	b.Do(t, "POST", "/api/v1/custom_qualifications", map[string]any{"question_text": "Pets?", "answer_type": 1, "country_language_id": 1, "customer_id": 999}).Expect(t, 201).Decode(t, &q)
	if q.QuestionID < 100000 || q.Name != path("CUSTOM_%d", q.QuestionID) || q.CL != 1 {
		t.Errorf("custom question %+v", q)
	}
	for i, text := range []string{"Dog", "Cat", "Fish"} {
		var a struct {
			PreCode int `json:"pre_code"`
		}
		b.Do(t, "POST", path("/api/v1/custom_qualifications/%d/custom_qualification_answers", q.QuestionID), map[string]any{"option_text": text}).Expect(t, 201).Decode(t, &a)
		if a.PreCode != i+1 {
			t.Errorf("answer %s pre_code %d", text, a.PreCode)
		}
	}
	var detail struct {
		Answers []any `json:"qualification_answers"`
	}
	b.Do(t, "GET", path("/api/v1/qualifications/%d?country_language_id=1", q.QuestionID), nil).Expect(t, 200).Decode(t, &detail)
	if len(detail.Answers) != 3 {
		t.Errorf("answers %v", detail.Answers)
	}
	type cq struct {
		ID       int64 `json:"id"`
		PreCodes []int `json:"pre_codes"`
	}
	var att cq
	b.Do(t, "POST", path("/api/v1/campaigns/%d/campaign_qualifications", id), map[string]any{"question_id": q.QuestionID, "pre_code_values": 2}).Expect(t, 201).Decode(t, &att)
	if len(att.PreCodes) != 1 || att.PreCodes[0] != 2 {
		t.Errorf("attached %+v", att)
	}
	b.Do(t, "POST", path("/api/v1/campaigns/%d/campaign_qualifications", id), map[string]any{"question_id": q.QuestionID, "pre_code_values": "1"}).Expect(t, 422)
	b.Do(t, "PUT", path("/api/v1/campaigns/%d/campaign_qualifications/%d", id, att.ID), map[string]any{"pre_code_values": " 1, 3 "}).Expect(t, 200).Decode(t, &att)
	if len(att.PreCodes) != 2 || att.PreCodes[1] != 3 {
		t.Errorf("updated %+v", att)
	}
	b.Do(t, "PUT", path("/api/v1/campaigns/%d/campaign_qualifications/%d", id, att.ID), map[string]any{}).Expect(t, 200).Decode(t, &att)
	if len(att.PreCodes) != 2 {
		t.Errorf("empty update changed it: %+v", att)
	}
	var c struct {
		Custom []cq `json:"custom_campaign_qualifications"`
	}
	b.Do(t, "GET", path("/api/v1/campaigns/%d", id), nil).Expect(t, 200).Decode(t, &c)
	if len(c.Custom) != 1 || c.Custom[0].ID != att.ID {
		t.Errorf("custom_campaign_qualifications %+v", c.Custom)
	}
	// A custom question may target quotas too.
	createQuota(t, b, id, map[string]any{"num_respondents": 5, "campaign_qualifications": []any{map[string]any{"question_id": q.QuestionID, "pre_codes": []int{1, 3}}}})
	b.Do(t, "DELETE", path("/api/v1/campaigns/%d/campaign_qualifications/%d", id, att.ID), nil).Expect(t, 204)
	b.Do(t, "DELETE", path("/api/v1/campaigns/%d/campaign_qualifications/%d", id, att.ID), nil).Expect(t, 404)
	b.Do(t, "POST", path("/api/v1/custom_qualifications/%d/custom_qualification_answers", 43), map[string]any{"option_text": "x"}).Expect(t, 404)
}
