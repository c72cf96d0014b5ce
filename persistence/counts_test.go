package persistence_test

import (
	"context"
	"slices"
	"testing"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// The counters' safety reconciliation walks the active campaigns a slice at a time: every
// active campaign is read once per walk, with the same counts Counts reads, paused ones
// never, and the walk starts over after its last slice.
func TestCountsAfterWalksActiveCampaigns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := persistence.Open(ctx, pgtest.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	buyer, _, err := db.Accounts.CreateBuyer(ctx, "counts@example.test", "Buyer", persistence.EnvStaging)
	if err != nil {
		t.Fatal(err)
	}
	var active []int64
	for i := range 7 {
		id := newCampaign(t, db, buyer.ID, "walk")
		status := persistence.StatusActive
		if i%3 == 2 {
			status = persistence.StatusPaused
		} else {
			active = append(active, id)
		}
		if _, err := db.Pool.Exec(ctx, `UPDATE campaigns SET status = $2 WHERE id = $1`, id, status); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Pool.Exec(ctx, `INSERT INTO campaign_quotas (campaign_id, num_respondents, completes, entries)
			VALUES ($1, 100, $2, $3)`, id, i, 2*i); err != nil {
			t.Fatal(err)
		}
	}
	var all, rows persistence.CountRows
	if err := db.Feed.Counts(ctx, nil, &all); err != nil {
		t.Fatal(err)
	}
	wantQ := all.Quotas

	for _, slice := range []int{1, 2, 4, 100} {
		var got []persistence.QuotaCount
		var after int64
		var calls int
		for {
			// One CountRows for the whole walk, as the router's mirror reads: each read
			// empties it first.
			last, err := db.Feed.CountsAfter(ctx, after, slice, &rows)
			if err != nil {
				t.Fatal(err)
			}
			qs := rows.Quotas
			calls++
			if last == 0 {
				if len(qs) != 0 {
					t.Fatalf("slice %d: the end of the walk read %d quotas", slice, len(qs))
				}
				break
			}
			if last <= after {
				t.Fatalf("slice %d: the walk went back from %d to %d", slice, after, last)
			}
			got = append(got, qs...)
			after = last
		}
		if want := (len(active)+slice-1)/slice + 1; calls != want {
			t.Errorf("slice %d: %d calls, want %d", slice, calls, want)
		}
		byQuota := func(a, b persistence.QuotaCount) int { return int(a.QuotaID - b.QuotaID) }
		slices.SortFunc(got, byQuota)
		w := slices.Clone(wantQ)
		slices.SortFunc(w, byQuota)
		if !slices.Equal(got, w) {
			t.Errorf("slice %d: walk read %v, Counts reads %v", slice, got, w)
		}
		for _, q := range got {
			if !slices.Contains(active, q.CampaignID) {
				t.Errorf("slice %d: read campaign %d, which is not active", slice, q.CampaignID)
			}
		}
	}
}

// CountsOf reads the quota rows of both lists, each row once however the lists overlap, and
// the campaign counts of the whole list only.
func TestCountsOf(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migratedDB(t)
	buyer := newBuyer(t, db, "countsof@example.test")
	a, b := newCampaign(t, db, buyer, "a"), newCampaign(t, db, buyer, "b")
	for _, id := range []int64{a, a, b} {
		if _, err := db.Pool.Exec(ctx, `INSERT INTO campaign_quotas (campaign_id, num_respondents, entries) VALUES ($1, 10, 1)`, id); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []int64{a, b} {
		if _, err := db.Pool.Exec(ctx, `INSERT INTO campaign_daily_counts (campaign_id, day, outcomes, completes)
			VALUES ($1, (now() AT TIME ZONE 'UTC')::date, 3, 2)`, id); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		whole, quotasOnly []int64
		quotas            int
		campaigns         []int64
	}{
		{nil, []int64{a}, 2, nil},
		{[]int64{a}, nil, 2, []int64{a}},
		{[]int64{a}, []int64{a, b}, 3, []int64{a}},
		{[]int64{a, b}, []int64{b, a}, 3, []int64{a, b}},
		{nil, nil, 0, nil},
	} {
		var rows persistence.CountRows
		if err := db.Feed.CountsOf(ctx, tc.whole, tc.quotasOnly, &rows); err != nil {
			t.Fatal(err)
		}
		var camps []int64
		for _, c := range rows.Campaigns {
			camps = append(camps, c.CampaignID)
			if c.Completes != 2 || c.Outcomes != 3 || c.DayCompletes != 2 {
				t.Errorf("whole %v, quotas only %v: campaign %d read as %+v", tc.whole, tc.quotasOnly, c.CampaignID, c)
			}
		}
		slices.Sort(camps)
		if len(rows.Quotas) != tc.quotas || !slices.Equal(camps, tc.campaigns) {
			t.Errorf("whole %v, quotas only %v: %d quota rows and campaigns %v, want %d and %v",
				tc.whole, tc.quotasOnly, len(rows.Quotas), camps, tc.quotas, tc.campaigns)
		}
	}
}
