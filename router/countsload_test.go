package router_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app"
	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
)

// A process's first load of the counters reads the market a slice of campaigns at a time
// (each slice one snapshot): when it is ready, every active campaign's quota and campaign
// counts are the database's, in the first slice, the last and those between.
func TestCountsLoadedBySlices(t *testing.T) {
	w := newWorld(t, "")
	s1 := w.startInProcess()
	ctx := context.Background()
	const n = 5
	camps, quotas := make([]int64, n), make([]int64, n)
	for i := range n {
		camps[i], quotas[i] = w.campaign(s1.URL, campaignOpts{quota: 100})
		if _, err := w.db.Pool.Exec(ctx, `UPDATE campaign_quotas SET completes = $2, in_progress = $3, entries = $4 WHERE id = $1`,
			quotas[i], i+1, 10*(i+1), 20*(i+1)); err != nil {
			t.Fatal(err)
		}
		if _, err := w.db.Pool.Exec(ctx, `INSERT INTO campaign_daily_counts (campaign_id, day, outcomes, completes)
			VALUES ($1, (now() AT TIME ZONE 'UTC')::date, $2, $3), ($1, (now() AT TIME ZONE 'UTC')::date - 3, 7, 1)
			ON CONFLICT (campaign_id, day) DO UPDATE SET outcomes = EXCLUDED.outcomes, completes = EXCLUDED.completes`,
			camps[i], 2*(i+1), i+1); err != nil {
			t.Fatal(err)
		}
	}
	s2 := apptest.Start(t, apptest.Options{DatabaseURL: w.dbURL, RateLimit: -1,
		Configure: func(c *app.Config) { c.Router.CountsLoadSlice = 2 }})
	counters := s2.App.Engine.Counters()
	for i := range n {
		q := counters.Quota(quotas[i])
		if q.Completes != int64(i+1) || q.InProgress != int64(10*(i+1)) || q.Entries != int64(20*(i+1)) {
			t.Errorf("campaign %d of %d: quota counts %+v, want completes %d, in progress %d, entries %d",
				i+1, n, q, i+1, 10*(i+1), 20*(i+1))
		}
		c := counters.Campaign(camps[i], time.Now().Unix())
		if c.DayCompletes != int64(i+1) || c.Completes != int64(i+2) || c.Sessions != int64(2*(i+1)+7) {
			t.Errorf("campaign %d of %d: campaign counts %+v, want today's completes %d, completes %d, sessions %d",
				i+1, n, c, i+1, i+2, 2*(i+1)+7)
		}
	}
}
