package admin_test

import (
	"context"
	"testing"
	"time"

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

// campaignStatsRead is the stats object of a campaign read.
type campaignStatsRead struct {
	Entries          int64    `json:"entries"`
	Completes        int64    `json:"completes"`
	Conversion       float64  `json:"conversion"`
	MedianLOIMinutes *float64 `json:"median_loi_minutes"`
	ActualIncidence  float64  `json:"actual_incidence"`
	AbandonRate      float64  `json:"abandon_rate"`
	CompletesToday   int64    `json:"completes_today"`
}

// TestCampaignStats stores sessions of every kind on a campaign (length_of_interview 12:
// the session max age is 34 minutes) and reads the statistics back through the campaign
// reads that carry them.
func TestCampaignStats(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	b := s.NewBuyer(t)
	cid := createCampaign(t, b, nil)
	empty := createCampaign(t, b, nil)
	now := time.Now().UTC()
	today := func(entered time.Time, loi int) int64 {
		if y, m, d := entered.Add(time.Duration(loi) * time.Minute).UTC().Date(); y == now.Year() && m == now.Month() && d == now.Day() {
			return 1
		}
		return 0
	}
	var wantToday int64
	store := func(tid string, x stored, loi int) {
		t.Helper()
		x.tid, x.respondent = tid, "r-"+tid
		sid := storeSession(t, s, b, cid, x)
		if loi > 0 {
			if _, err := s.DB.Pool.Exec(context.Background(), `UPDATE sessions SET outcome_at = entered_at + $2 * interval '1 minute' WHERE id = $1`,
				sid, loi); err != nil {
				t.Fatal(err)
			}
			if x.outcome == "complete" && !x.rejected {
				wantToday += today(x.entered, loi)
			}
		}
	}
	store("c1", stored{outcome: "complete", entered: now.Add(-72 * time.Hour)}, 8)
	store("c2", stored{outcome: "complete", entered: now.Add(-15 * time.Minute)}, 10)
	store("c3", stored{outcome: "complete", entered: now.Add(-time.Hour)}, 20)
	store("rejected", stored{outcome: "complete", rejected: true, entered: now.Add(-2 * time.Hour)}, 1)
	store("dq", stored{outcome: "disqualified", entered: now.Add(-time.Hour)}, 0)
	store("oq", stored{outcome: "over_quota", entered: now.Add(-time.Hour)}, 0)
	store("qt", stored{outcome: "quality_term", entered: now.Add(-time.Hour)}, 0)
	store("abandoned", stored{entered: now.Add(-2 * time.Hour)}, 0)
	store("released", stored{released: true, entered: now.Add(-3 * time.Hour)}, 0)
	store("waiting", stored{entered: now.Add(-5 * time.Minute)}, 0)
	store("test", stored{outcome: "complete", test: true, entered: now.Add(-time.Hour)}, 0)
	if wantToday == 0 {
		t.Log("the completes of the test straddle midnight UTC; completes_today checked as 0")
	}

	ten := 10.0
	want := campaignStatsRead{Entries: 10, Completes: 3, Conversion: 0.3, MedianLOIMinutes: &ten,
		ActualIncidence: 0.6, AbandonRate: 0.2, CompletesToday: wantToday}
	check := func(what string, r apptest.Response, want campaignStatsRead) {
		t.Helper()
		var c struct {
			Stats *campaignStatsRead `json:"stats"`
		}
		r.Decode(t, &c)
		if c.Stats == nil {
			t.Fatalf("%s: no stats in %s", what, r.Body)
		}
		got := *c.Stats
		if (got.MedianLOIMinutes == nil) != (want.MedianLOIMinutes == nil) ||
			(got.MedianLOIMinutes != nil && *got.MedianLOIMinutes != *want.MedianLOIMinutes) {
			t.Errorf("%s: median_loi_minutes %v, want %v", what, got.MedianLOIMinutes, want.MedianLOIMinutes)
		}
		got.MedianLOIMinutes, want.MedianLOIMinutes = nil, nil
		if got != want {
			t.Errorf("%s: stats %+v, want %+v", what, got, want)
		}
	}
	check("show", b.Do(t, "GET", path("/api/v1/campaigns/%d", cid), nil).Expect(t, 200), want)
	check("update", b.Do(t, "PUT", path("/api/v1/campaigns/%d", cid), map[string]any{"name": "Renamed"}).Expect(t, 200), want)
	// A longer interview moves the session max age to 2 × 60 + 10 minutes: the session
	// entered 2 hours ago is no longer abandoned.
	want.AbandonRate = 0.1
	check("update loi", b.Do(t, "PUT", path("/api/v1/campaigns/%d", cid), map[string]any{"length_of_interview": 60}).Expect(t, 200), want)
	check("empty", b.Do(t, "GET", path("/api/v1/campaigns/%d", empty), nil).Expect(t, 200), campaignStatsRead{})
	check("create", b.Do(t, "POST", "/api/v1/campaigns", campaignBody()).Expect(t, 201), campaignStatsRead{})
	// The list read stays one statement without statistics.
	var list []map[string]any
	b.Do(t, "GET", "/api/v1/campaigns", nil).Expect(t, 200).Decode(t, &list)
	for _, c := range list {
		if _, ok := c["stats"]; ok {
			t.Errorf("list read carries stats: %v", c)
		}
	}
}
