package supply_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
)

func TestStats(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	p, other := newPartner(t, s), newPartner(t, s)
	m := newMarket(t, s)
	c1, c2 := m.create(campaignSpec{}), m.create(campaignSpec{})
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	seq := 0
	session := func(pub, campaign int64, at time.Time, outcome string, rejected, test bool, payout string, reward int64) {
		t.Helper()
		seq++
		var out, pay, rew any
		if outcome != "" {
			out = outcome
		}
		if payout != "" {
			pay, rew = payout, reward
		}
		if _, err := s.DB.Pool.Exec(context.Background(), `INSERT INTO sessions (tid, campaign_id, buyer_id, publisher_id,
			entered_at, outcome, outcome_at, rejected, is_test, payout_usd, reward)
			VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $6::text IS NOT NULL THEN $5::timestamptz + interval '10 minutes' END, $7, $8, $9::numeric, $10)`,
			"stats-"+itoa(pub)+"-"+itoa(int64(seq)), campaign, m.buyerID, pub, at, out, rejected, test, pay, rew); err != nil {
			t.Fatal(err)
		}
	}
	// 10:xx: two completes (one rejected), a termination, one waiting; 12:xx: an over-quota.
	session(p.ID, c1, base.Add(5*time.Minute), "complete", false, false, "1.2500", 125)
	session(p.ID, c2, base.Add(20*time.Minute), "complete", true, false, "0.7500", 75)
	session(p.ID, c1, base.Add(30*time.Minute), "disqualified", false, false, "", 0)
	session(p.ID, c1, base.Add(59*time.Minute), "", false, false, "", 0)
	session(p.ID, c2, base.Add(2*time.Hour+time.Minute), "over_quota", false, false, "", 0)
	session(p.ID, c1, base.Add(2*time.Hour+2*time.Minute), "complete", false, false, "0.0100", 1)
	// Not counted: a test session, another publisher's, outside the window.
	session(p.ID, c1, base.Add(time.Minute), "complete", false, true, "9.0000", 900)
	session(other.ID, c1, base.Add(time.Minute), "complete", false, false, "9.0000", 900)
	session(p.ID, c1, base.Add(-time.Minute), "complete", false, false, "9.0000", 900)
	session(p.ID, c1, base.Add(3*time.Hour), "complete", false, false, "9.0000", 900)

	type hour struct {
		Hour            time.Time `json:"hour"`
		Entries         int64     `json:"entries"`
		Completes       int64     `json:"completes"`
		Terminations    int64     `json:"terminations"`
		Rejected        int64     `json:"rejected"`
		RevenueUSD      string    `json:"revenue_usd"`
		RevenueCurrency int64     `json:"revenue_currency"`
	}
	var got struct {
		From  time.Time `json:"from"`
		To    time.Time `json:"to"`
		Hours []hour    `json:"hours"`
	}
	q := url.Values{"from": {"2026-03-01T11:00:00+01:00"}, "to": {base.Add(3 * time.Hour).Format(time.RFC3339)}}
	p.do(t, "GET", "/supply_api/v4/stats?"+q.Encode(), nil, nil).Expect(t, 200).Decode(t, &got)
	want := []hour{
		{base, 4, 1, 1, 1, "1.2500", 125},
		{base.Add(2 * time.Hour), 2, 1, 1, 0, "0.0100", 1},
	}
	if mustJSON(t, got.Hours) != mustJSON(t, want) || !got.From.Equal(base) {
		t.Fatalf("stats %s\nwant %s", mustJSON(t, got), mustJSON(t, want))
	}

	for _, tc := range []struct{ query, field string }{
		{"to=2026-03-02T00:00:00Z", "from"},
		{"from=2026-03-01T00:00:00Z", "to"},
		{"from=yesterday&to=2026-03-02T00:00:00Z", "from"},
		{"from=2026-03-01T00:00:00Z&to=2026-03-02", "to"},
		{"from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z", "to must be after from"},
		{"from=2026-03-01T00:00:00Z&to=2026-03-01T00:00:00Z", "to must be after from"},
		{"from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:01Z", "31 days"},
	} {
		expectError(t, p.do(t, "GET", "/supply_api/v4/stats?"+tc.query, nil, nil), 400, tc.field)
	}
	// Exactly 31 days is allowed; an empty window answers no hours.
	var empty struct {
		Hours []hour `json:"hours"`
	}
	p.do(t, "GET", "/supply_api/v4/stats?from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:00Z", nil, nil).Expect(t, 200).Decode(t, &empty)
	if empty.Hours == nil || len(empty.Hours) != 0 {
		t.Fatalf("empty window %+v", empty)
	}
}

// TestStatsOffers: GET /campaigns answers are counted in memory per publisher and, once
// flushed, GET /stats shows them as the offers of their hour; a refused request (bad input)
// is not an answer, and another publisher's answers are not counted.
func TestStatsOffers(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	p, other := newPartner(t, s), newPartner(t, s)
	p.impanel(t, "offers-u1", 1, usProfile(30, 1, "10001")...)
	const n = 7
	for i := range n {
		p.campaigns(t, "offers-u"+itoa(int64(i%3+1)), "dev", 1+i%3) // profiled, unprofiled; cached or not
	}
	p.campaignsRaw(t, "offers-u1", "dev", "device_type=1").Expect(t, 400) // no user_ip
	other.campaigns(t, "offers-u1", "dev", 1)
	offers := func() (total int64, hours int) {
		t.Helper()
		now := time.Now().UTC()
		q := url.Values{"from": {now.Add(-2 * time.Hour).Format(time.RFC3339)}, "to": {now.Add(time.Hour).Format(time.RFC3339)}}
		var got struct {
			Hours []struct {
				Hour   time.Time `json:"hour"`
				Offers int64     `json:"offers"`
			} `json:"hours"`
		}
		p.do(t, "GET", "/supply_api/v4/stats?"+q.Encode(), nil, nil).Expect(t, 200).Decode(t, &got)
		for _, h := range got.Hours {
			if h.Hour != h.Hour.Truncate(time.Hour) {
				t.Fatalf("hour %v", h.Hour)
			}
			total += h.Offers
		}
		return total, len(got.Hours)
	}
	if total, _ := offers(); total != 0 {
		t.Fatalf("%d offers before the flush", total)
	}
	if err := s.App.Supply.FlushOffers(context.Background()); err != nil {
		t.Fatal(err)
	}
	if total, hours := offers(); total != n || hours < 1 || hours > 2 {
		t.Fatalf("%d offers in %d hours after the flush, want %d", total, hours, n)
	}
	// A second flush adds only what came since.
	p.campaigns(t, "offers-u1", "dev", 1)
	if err := s.App.Supply.FlushOffers(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.App.Supply.FlushOffers(context.Background()); err != nil {
		t.Fatal(err)
	}
	if total, _ := offers(); total != n+1 {
		t.Fatalf("%d offers after another answer, want %d", total, n+1)
	}
}
