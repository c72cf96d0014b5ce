package admin_test

import (
	"context"
	"testing"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
)

// quotaCounters is what every quota read carries of its live counters.
type quotaCounters struct {
	ID         int64 `json:"id"`
	Completes  *int  `json:"completes"`
	InProgress *int  `json:"in_progress"`
	Entries    *int  `json:"entries"`
}

func (q quotaCounters) equal(completes, inProgress, entries int) bool {
	return q.Completes != nil && q.InProgress != nil && q.Entries != nil &&
		*q.Completes == completes && *q.InProgress == inProgress && *q.Entries == entries
}

// TestQuotaCounters reads a quota's counter columns back through every quota read: the
// single quota, and the quotas of the campaign read, after creating and updating.
func TestQuotaCounters(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	b := s.NewBuyer(t)
	cid := createCampaign(t, b, nil)
	var created quotaCounters
	b.Do(t, "POST", path("/api/v1/campaigns/%d/campaign_quotas", cid), quotaBody()).Expect(t, 201).Decode(t, &created)
	if !created.equal(0, 0, 0) {
		t.Fatalf("new quota counters %+v, want zeros present", created)
	}
	other := createQuota(t, b, cid, nil)
	if _, err := s.DB.Pool.Exec(context.Background(), `UPDATE campaign_quotas SET completes = 3, in_progress = 2, entries = 9 WHERE id = $1`,
		created.ID); err != nil {
		t.Fatal(err)
	}
	var shown quotaCounters
	b.Do(t, "GET", path("/api/v1/campaigns/%d/campaign_quotas/%d", cid, created.ID), nil).Expect(t, 200).Decode(t, &shown)
	if !shown.equal(3, 2, 9) {
		t.Errorf("show quota: %+v, want 3 completes, 2 in progress, 9 entries", shown)
	}
	var updated quotaCounters
	b.Do(t, "PUT", path("/api/v1/campaigns/%d/campaign_quotas/%d", cid, created.ID), map[string]any{"num_respondents": 50}).
		Expect(t, 200).Decode(t, &updated)
	if !updated.equal(3, 2, 9) {
		t.Errorf("update quota: %+v", updated)
	}
	var c struct {
		CampaignQuotas []quotaCounters `json:"campaign_quotas"`
	}
	b.Do(t, "GET", path("/api/v1/campaigns/%d", cid), nil).Expect(t, 200).Decode(t, &c)
	if len(c.CampaignQuotas) != 2 || c.CampaignQuotas[0].ID != created.ID || !c.CampaignQuotas[0].equal(3, 2, 9) ||
		c.CampaignQuotas[1].ID != other || !c.CampaignQuotas[1].equal(0, 0, 0) {
		t.Errorf("campaign quotas: %+v", c.CampaignQuotas)
	}
}
