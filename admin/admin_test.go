package admin_test

import (
	"testing"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// campaignBody is a valid campaign create body.
func campaignBody() map[string]any {
	return map[string]any{
		"name":                "Coffee habits",
		"incidence":           40,
		"length_of_interview": 12,
		"country_language_id": 1,
		"supplier_link":       "https://survey.example/s/1?tid={ID}",
	}
}

// quotaBody is a valid quota create body for an en-US campaign.
func quotaBody() map[string]any {
	return map[string]any{
		"name":            "Women 18-24",
		"num_respondents": 100,
		"campaign_qualifications": []any{
			map[string]any{"question_id": 43, "pre_codes": []any{2}},
			map[string]any{"question_id": 42, "pre_codes": []any{18, 19, 20, 21, 22, 23, 24}},
		},
	}
}

func createCampaign(t testing.TB, b *apptest.Buyer, overrides map[string]any) int64 {
	t.Helper()
	body := campaignBody()
	for k, v := range overrides {
		body[k] = v
	}
	var c struct {
		ID int64 `json:"id"`
	}
	b.Do(t, "POST", "/api/v1/campaigns", body).Expect(t, 201).Decode(t, &c)
	return c.ID
}

func createQuota(t testing.TB, b *apptest.Buyer, campaignID int64, body map[string]any) int64 {
	t.Helper()
	if body == nil {
		body = quotaBody()
	}
	var q struct {
		ID int64 `json:"id"`
	}
	b.Do(t, "POST", path("/api/v1/campaigns/%d/campaign_quotas", campaignID), body).Expect(t, 201).Decode(t, &q)
	return q.ID
}
