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
	buyer, _, err := db.CreateBuyer(ctx, "counts@example.test", "Buyer", persistence.EnvStaging)
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
	if err := db.Counts(ctx, nil, &all); err != nil {
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
			last, err := db.CountsAfter(ctx, after, slice, &rows)
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
