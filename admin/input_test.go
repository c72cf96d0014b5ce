package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
)

// badTexts are the two texts PostgreSQL refuses: a NUL (the JSON escape \u0000) and bytes
// that are not UTF-8. Each replaces the placeholder "@@" inside the JSON of a body.
var badTexts = map[string]string{"nul": `x\u0000y`, "invalid utf-8": "x\xffy"}

// withBad encodes body as JSON and puts bad where the placeholder "@@" is.
func withBad(t *testing.T, body any, bad string) string {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "@@") {
		t.Fatalf("no placeholder in %s", b)
	}
	return strings.ReplaceAll(string(b), "@@", bad)
}

// snapshot counts the rows the buyer's writes would add, and reads the campaign as it is.
func snapshot(t *testing.T, s *apptest.Server, b *apptest.Buyer, campaignID int64) string {
	t.Helper()
	var n [6]int64
	err := s.DB.Pool.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM campaigns WHERE buyer_id = $1),
		(SELECT count(*) FROM campaign_quotas q JOIN campaigns c ON c.id = q.campaign_id WHERE c.buyer_id = $1),
		(SELECT count(*) FROM adhoc_accounts WHERE buyer_id = $1),
		(SELECT count(*) FROM campaign_retargets WHERE campaign_id = $2),
		(SELECT count(*) FROM campaign_exclusions WHERE campaign_id = $2),
		(SELECT count(*) FROM reconciliations WHERE campaign_id = $2)`, b.ID, campaignID).
		Scan(&n[0], &n[1], &n[2], &n[3], &n[4], &n[5])
	if err != nil {
		t.Fatal(err)
	}
	c := b.Do(t, "GET", path("/api/v1/campaigns/%d", campaignID), nil).Expect(t, 200).Body
	out, _ := json.Marshal(n)
	return string(out) + string(c)
}

// TestTextInput: a NUL or invalid UTF-8 in any text of a buyer body is a 422 naming the
// field, and nothing is stored (it was a 500 from PostgreSQL: "invalid byte sequence for
// encoding UTF8: 0x00").
func TestTextInput(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	b := s.NewBuyer(t)
	id := createCampaign(t, b, nil)
	q := createQuota(t, b, id, nil)
	cp := path("/api/v1/campaigns/%d", id)
	qp := path("/api/v1/campaigns/%d/campaign_quotas", id)
	rp := path("/api/v1/campaigns/%d/campaign_retargets", id)
	qual45 := func(v any) map[string]any {
		return map[string]any{"num_respondents": 5, "campaign_qualifications": []any{
			map[string]any{"question_id": 45, "pre_codes": []any{v}}}}
	}
	cases := []struct {
		method, path string
		body         any // holds the placeholder "@@"
		field        string
	}{
		{"POST", "/api/v1/campaigns", merge(campaignBody(), map[string]any{"name": "@@"}), "name"},
		{"POST", "/api/v1/campaigns", merge(campaignBody(), map[string]any{"supplier_link": "https://x.test/?id={ID}&a=@@"}), "supplier_link"},
		{"PUT", cp, map[string]any{"name": "n@@"}, "name"},
		{"POST", qp, merge(quotaBody(), map[string]any{"name": "@@"}), "name"},
		{"POST", qp, qual45("@@"), "campaign_qualifications[0].pre_codes[0]"},
		{"PUT", path("/api/v1/campaigns/%d/campaign_quotas/%d", id, q), map[string]any{"name": "@@"}, "name"},
		{"PUT", path("/api/v1/campaigns/%d/campaign_quotas/%d", id, q), qual45("@@"), "campaign_qualifications[0].pre_codes[0]"},
		{"POST", "/api/v1/adhoc_accounts", map[string]any{"buyer_name": "@@", "buyer_identifier": "i"}, "buyer_name"},
		{"POST", "/api/v1/adhoc_accounts", map[string]any{"buyer_name": "n", "buyer_identifier": "@@"}, "buyer_identifier"},
		{"POST", path("/api/v1/campaigns/%d/reject_completes", id), map[string]any{"transaction_ids": []string{"a", "@@"}}, "transaction_ids[1]"},
		{"POST", path("/api/v1/campaigns/%d/campaign_exclusions", id), map[string]any{"player_ids": []string{"@@"}}, "player_ids[0]"},
		{"POST", path("/api/v1/campaigns/%d/campaign_exclusions", id), map[string]any{"transaction_ids": []string{"@@"}}, "transaction_ids[0]"},
		{"POST", path("/api/v1/campaigns/%d/export_demographics", id), map[string]any{"transaction_ids": "@@"}, "transaction_ids"},
		{"POST", path("/api/v1/campaigns/%d/export_demographics", id), map[string]any{"player_ids": []string{"p", "@@"}}, "player_ids[1]"},
		{"POST", rp, map[string]any{"retargeting_type": 1, "retargeting_ids": []string{"@@"}}, "retargeting_ids[0]"},
		{"POST", rp, map[string]any{"retargeting_type": 1, "retargeting_ids": []any{map[string]any{"id": "a", "replacement_id": "@@"}}}, "retargeting_ids[0].replacement_id"},
		{"DELETE", rp, map[string]any{"retargeting_type": 1, "retargeting_ids": []any{map[string]any{"id": "@@"}}}, "retargeting_ids[0].id"},
		{"POST", path("/api/v1/campaigns/%d/reconcile", id), map[string]any{"accepted_ids": []string{"@@"}}, "accepted_ids[0]"},
		{"POST", path("/api/v1/campaigns/%d/reconcile", id), map[string]any{"accepted_ids": []string{}, "purchase_order": "@@"}, "purchase_order"},
		{"POST", "/api/v1/custom_qualifications", map[string]any{"question_text": "@@", "answer_type": 0, "country_language_id": 1}, "question_text"},
		{"POST", "/api/v1/campaigns", merge(campaignBody(), map[string]any{"na@@me": "x"}), "body"},
	}
	before := snapshot(t, s, b, id)
	for _, c := range cases {
		for name, bad := range badTexts {
			body := withBad(t, c.body, bad)
			r := b.Do(t, c.method, c.path, body)
			if r.Status != 422 {
				t.Errorf("%s %s with %s %s: status %d, want 422; %s", c.method, c.path, name, body, r.Status, r.Body)
				continue
			}
			if msg := r.Message(t); !strings.HasPrefix(msg, c.field+" ") || !strings.Contains(msg, "UTF-8") {
				t.Errorf("%s %s with %s: message %q does not name %s", c.method, c.path, name, msg, c.field)
			}
		}
	}
	if after := snapshot(t, s, b, id); after != before {
		t.Errorf("refused writes stored something:\nbefore %s\nafter  %s", before, after)
	}
}

// TestNumbersOutOfRange: every integer field of the buyer API states its own bounds when a
// value lies outside them: below its least value, past 32 bits and past 64 alike get one
// message naming the field and its real bounds (or its codes), never the bounds of a
// storage type (num_respondents: 2147483648 is not "from -2147483648 to 2147483647"). Text
// numbers and query parameters are told the same way.
func TestNumbersOutOfRange(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	b := s.NewBuyer(t)
	id := createCampaign(t, b, nil)
	q := createQuota(t, b, id, nil)
	cp := path("/api/v1/campaigns/%d", id)
	qp := path("/api/v1/campaigns/%d/campaign_quotas", id)
	const int32s, int64s = "an integer from %d to 2147483647", "an integer from %d to 9223372036854775807"
	big, huge := json.Number("2147483648"), json.Number("99999999999999999999999")
	fields := []struct {
		method, path string
		body         func(v json.Number) any
		field        string
		lo           int64
		want         string // after "<field> must be "
		wide         bool   // an int64 field: 2^31 is in its bounds
	}{
		{"POST", qp, func(v json.Number) any { return merge(quotaBody(), map[string]any{"num_respondents": v}) }, "num_respondents", 1, int32s, false},
		{"PUT", path("/api/v1/campaigns/%d/campaign_quotas/%d", id, q), func(v json.Number) any { return map[string]any{"num_respondents": v} },
			"num_respondents", 1, int32s, false},
		{"POST", qp, func(v json.Number) any {
			return map[string]any{"num_respondents": 5, "campaign_qualifications": []any{map[string]any{"question_id": v, "pre_codes": []any{1}}}}
		}, "campaign_qualifications[0].question_id", 1, int32s, false},
		{"POST", "/api/v1/campaigns", func(v json.Number) any { return merge(campaignBody(), map[string]any{"days_in_field": v}) }, "days_in_field", 1, "an integer from 1 to 365", false},
		{"PUT", cp, func(v json.Number) any { return map[string]any{"days_in_field": v} }, "days_in_field", 1, "an integer from 1 to 365", false},
		{"POST", "/api/v1/campaigns", func(v json.Number) any { return merge(campaignBody(), map[string]any{"incidence": v}) }, "incidence", 1, "an integer from 1 to 100", false},
		{"POST", "/api/v1/campaigns", func(v json.Number) any { return merge(campaignBody(), map[string]any{"length_of_interview": v}) }, "length_of_interview", 1, "an integer from 1 to 120", false},
		{"POST", "/api/v1/campaigns", func(v json.Number) any { return merge(campaignBody(), map[string]any{"country_language_id": v}) }, "country_language_id", 1, int32s, false},
		{"POST", "/api/v1/campaigns", func(v json.Number) any { return merge(campaignBody(), map[string]any{"max_daily_completes": v}) }, "max_daily_completes", 1, "null or " + int32s, false},
		{"POST", "/api/v1/campaigns", func(v json.Number) any { return merge(campaignBody(), map[string]any{"reentry_interval": v}) }, "reentry_interval", 0, "null or " + int32s, false},
		{"POST", "/api/v1/campaigns", func(v json.Number) any {
			return merge(campaignBody(), map[string]any{"supported_devices": []any{1, v}})
		},
			"supported_devices[1]", 0, "0 (tablet), 1 (mobile) or 2 (desktop)", false},
		{"POST", "/api/v1/campaigns", func(v json.Number) any { return merge(campaignBody(), map[string]any{"project_id": v}) }, "project_id", 1, int64s, true},
		{"POST", "/api/v1/campaigns", func(v json.Number) any { return merge(campaignBody(), map[string]any{"buyer_account_id": v}) }, "buyer_account_id", 1, "null or " + int64s, true},
		{"PUT", cp, func(v json.Number) any { return map[string]any{"status": v} }, "status", 2, "2 (active), 3 (complete) or 5 (paused)", false},
		{"POST", path("/api/v1/campaigns/%d/campaign_retargets", id), func(v json.Number) any {
			return map[string]any{"retargeting_type": v, "retargeting_ids": []string{"a"}}
		}, "retargeting_type", 0, "0 (transaction id), 1 (respondent id), 2 (device id) or 3 (hashed mobile ad id)", false},
		{"POST", "/api/v1/campaign_relationships", func(v json.Number) any { return map[string]any{"campaign_id": v, "related_campaign_id": id} }, "campaign_id", 1, int64s, true},
		{"POST", "/api/v1/campaign_relationships", func(v json.Number) any { return map[string]any{"campaign_id": id, "related_campaign_id": v} }, "related_campaign_id", 1, int64s, true},
		{"POST", "/api/v1/custom_qualifications", func(v json.Number) any {
			return map[string]any{"question_text": "Q", "answer_type": v, "country_language_id": 1}
		}, "answer_type", 0, "0 (single select) or 1 (multi select)", false},
		{"POST", "/api/v1/custom_qualifications", func(v json.Number) any {
			return map[string]any{"question_text": "Q", "answer_type": 0, "country_language_id": v}
		}, "country_language_id", 1, int32s, false},
		{"POST", qp, func(v json.Number) any {
			return map[string]any{"num_respondents": 5, "campaign_qualifications": []any{map[string]any{"question_id": 43, "pre_codes": []any{1, v}}}}
		}, "campaign_qualifications[0].pre_codes[1]", math.MinInt32, int32s, false},
		{"POST", path("/api/v1/campaigns/%d/campaign_qualifications", id), func(v json.Number) any { return map[string]any{"question_id": v, "pre_code_values": "1"} },
			"question_id", 1, int32s, false},
		{"POST", "/api/v1/campaigns/realtime_feasibility", func(v json.Number) any {
			return map[string]any{"incidence": 50, "length_of_interview": 10, "days_in_field": v, "campaign_quotas": []any{quotaBody()}}
		}, "days_in_field", 1, "an integer from 1 to 365", false},
		{"POST", "/api/v1/campaigns/realtime_feasibility", func(v json.Number) any {
			return map[string]any{"incidence": v, "length_of_interview": 10, "campaign_quotas": []any{quotaBody()}}
		}, "incidence", 1, "an integer from 1 to 100", false},
	}
	for _, c := range fields {
		want := c.field + " must be " + c.want
		if strings.Contains(want, "%d") {
			want = fmt.Sprintf(want, c.lo)
		}
		values := []json.Number{json.Number(strconv.FormatInt(c.lo-1, 10)), huge, json.Number("-" + string(huge))}
		if !c.wide {
			values = append(values, big)
		}
		for _, v := range values {
			r := b.Do(t, c.method, c.path, c.body(v))
			if r.Status != 422 {
				t.Errorf("%s %s %s: status %d, want 422; %s", c.method, c.path, short(c.body(v)), r.Status, r.Body)
				continue
			}
			if msg := r.Message(t); msg != want {
				t.Errorf("%s %s %s: message %q, want %q", c.method, c.path, short(c.body(v)), msg, want)
			}
		}
	}
	for _, c := range []struct {
		method, path string
		body         any
		status       int
		msg          string
	}{
		{"POST", path("/api/v1/campaigns/%d/campaign_qualifications", id), map[string]any{"question_id": 1, "pre_code_values": "1,2147483648"}, 422,
			"pre_code_values must hold pre_codes from 1 to 2147483647"},
		{"GET", "/api/v1/qualifications?country_language_id=2147483648", nil, 400, "query parameter country_language_id must be an integer from 1 to 2147483647"},
		{"GET", "/api/v1/campaigns?country_language_id=-99999999999", nil, 400, "query parameter country_language_id must be an integer from 1 to 2147483647"},
		{"GET", "/api/v1/campaigns?country_language_id=0", nil, 400, "query parameter country_language_id must be an integer from 1 to 2147483647"},
		{"GET", "/insights_api/projects?page=99999999999999999999", nil, 400, "query parameter page must be an integer from 1 to 9223372036854775807"},
	} {
		r := b.Do(t, c.method, c.path, c.body)
		if msg := r.Message(t); r.Status != c.status || msg != c.msg {
			t.Errorf("%s %s %s: %d %q, want %d %q", c.method, c.path, short(c.body), r.Status, msg, c.status, c.msg)
		}
	}
}
