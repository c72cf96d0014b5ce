package router_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app"
	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/engine"
)

// TestQuotaCountsNotification: a campaign announced as having only its quota counts changed
// (an admitted entry) has its quota counts re-read and its campaign counts (today's
// completes, outcomes) left as they were; announced wholly, both are re-read. The counts
// are written in the database, as another process's would be, and reach the engine only
// through the notification (the safety walk is an hour away).
func TestQuotaCountsNotification(t *testing.T) {
	w := newWorld(t, "")
	s := apptest.Start(t, apptest.Options{DatabaseURL: w.dbURL, RateLimit: -1,
		Configure: func(c *app.Config) { c.Router.ReconcileEvery = time.Hour }})
	w.publicURL = s.PublicURL
	camp, quota := w.campaign(s.URL, campaignOpts{quota: 10})
	w.settle()
	ctx := context.Background()
	if _, err := w.db.Pool.Exec(ctx, `UPDATE campaign_quotas SET entries = 3, in_progress = 3 WHERE id = $1`, quota); err != nil {
		t.Fatal(err)
	}
	if _, err := w.db.Pool.Exec(ctx, `INSERT INTO campaign_daily_counts (campaign_id, day, outcomes, completes)
		VALUES ($1, (now() AT TIME ZONE 'UTC')::date, 4, 2)`, camp); err != nil {
		t.Fatal(err)
	}
	c := s.App.Engine.Counters()
	before := c.Campaign(camp, time.Now().Unix())
	if err := w.db.Feed.NotifyQuotaCounts(ctx, []int64{camp}); err != nil {
		t.Fatal(err)
	}
	want := engine.QuotaCounts{InProgress: 3, Entries: 3}
	waitFor(t, "the quota's counts re-read", 10*time.Second, func() bool { return c.Quota(quota) == want })
	if got := c.Campaign(camp, time.Now().Unix()); got != before {
		t.Errorf("campaign counts after a quota-only notification: %+v, want them unchanged (%+v)", got, before)
	}
	if err := w.db.Feed.NotifyCounts(ctx, []int64{camp}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the campaign's counts re-read", 10*time.Second, func() bool {
		got := c.Campaign(camp, time.Now().Unix())
		return got.DayCompletes == 2 && got.Sessions == 4 && got.Completes == 2
	})
}
