package router_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestSweeperArchivesFinishedCampaigns: the sweeper, on its own period and with the default
// age, moves a campaign complete for 91 days to 4 Archived, whose status the buyer can then
// no longer change (docs/rules.md §4); one complete for 89 days stays 3.
func TestSweeperArchivesFinishedCampaigns(t *testing.T) {
	w := newWorld(t, "")
	s := w.startSweepingEvery(50 * time.Millisecond)
	base := s.URL
	old, _ := w.campaign(base, campaignOpts{quota: 10})
	young, _ := w.campaign(base, campaignOpts{quota: 10})
	path := func(id int64) string { return fmt.Sprintf("/api/v1/campaigns/%d", id) }
	for _, id := range []int64{old, young} {
		w.mustAPI(base, "PUT", path(id), map[string]any{"status": 3}, 200)
	}
	// One statement ages both: the sweep that archives old has seen young aged too.
	if _, err := w.db.Pool.Exec(context.Background(), `UPDATE campaigns SET status_changed_at = now() -
		CASE WHEN id = $1 THEN interval '91 days' ELSE interval '89 days' END WHERE id IN ($1, $2)`, old, young); err != nil {
		t.Fatal(err)
	}
	status := func(id int64) int64 { return w.count(`SELECT status FROM campaigns WHERE id = $1`, id) }
	waitFor(t, "the sweeper to archive the campaign complete for 91 days", 10*time.Second, func() bool {
		return status(old) == 4
	})
	if st := status(young); st != 3 {
		t.Errorf("campaign complete for 89 days: status %d, want 3", st)
	}
	if code, body := w.api(base, "PUT", path(old), map[string]any{"status": 2}); code != 422 || !strings.Contains(string(body), "status") {
		t.Errorf("status change of an archived campaign: %d %s, want 422 naming status", code, body)
	}
	w.mustAPI(base, "PUT", path(young), map[string]any{"status": 5}, 200)
}
