package persistence_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/switchboard/switchboard/persistence"
)

// BenchmarkReleaseStaleSessions measures one release on a market at the bench's entry
// rates: 200 campaigns holding places, each with 2,000 sessions inside their callback
// window and none past it, the sweep marks at their first sessions. "unbounded" has no
// clock reading but the release's own (as on a database just migrated to session_clock):
// the read goes through every campaign's sessions again, up to the limit, and releases
// nothing, as every sweep did before the clock. "bounded" has a reading within the window
// taken before those sessions were drawn, as a sweep a little earlier would have left it:
// the read stops at once. Both release nothing; the difference is what a sweep reads.
func BenchmarkReleaseStaleSessions(b *testing.B) {
	const campaigns, perCampaign = 200, 2_000
	ctx := context.Background()
	db := migratedDB(b)
	buyer := newBuyer(b, db, "release-bench@example.test")
	if _, err := db.Maintenance.EnsureSessionPartitions(ctx, persistence.PartitionPolicy{}); err != nil {
		b.Fatal(err)
	}
	camps := make([]int64, campaigns)
	for i := range camps {
		camps[i], _ = newActiveCampaign(b, db, buyer, fmt.Sprintf("Release %d", i), nil) // window 30 minutes
	}
	var first int64
	if err := db.Pool.QueryRow(ctx, `SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END FROM sessions_id_seq`).Scan(&first); err != nil {
		b.Fatal(err)
	}
	exec := func(sql string, args ...any) {
		b.Helper()
		if _, err := db.Pool.Exec(ctx, sql, args...); err != nil {
			b.Fatal(err)
		}
	}
	exec(`INSERT INTO sessions (tid, campaign_id, buyer_id, quota_ids, entered_at)
		SELECT 'rel-' || c.id || '-' || g, c.id, c.buyer_id, ARRAY[q.id], now() - interval '5 minutes'
		FROM generate_series(1, $2::int) g, campaigns c JOIN campaign_quotas q ON q.campaign_id = c.id
		WHERE c.id = ANY($1) ORDER BY g, c.id`, camps, perCampaign)
	exec(`UPDATE campaign_quotas SET in_progress = $2 WHERE campaign_id = ANY($1)`, camps, perCampaign)
	exec(`INSERT INTO session_sweep_marks (campaign_id, next_id) SELECT unnest($1::bigint[]), $2`, camps, first)
	exec(`ANALYZE`)
	release := func(b *testing.B, setup func()) {
		for b.Loop() {
			b.StopTimer()
			setup()
			b.StartTimer()
			moved, _, err := db.Maintenance.ReleaseStaleSessions(ctx, 5000)
			if err != nil || len(moved) != 0 {
				b.Fatalf("released %v (%v), want nothing", moved, err)
			}
		}
	}
	b.Run("unbounded", func(b *testing.B) {
		release(b, func() { exec(`DELETE FROM session_clock`) })
	})
	b.Run("bounded", func(b *testing.B) {
		release(b, func() {
			exec(`INSERT INTO session_clock (at, next_id) VALUES (now() - interval '29 minutes', $1) ON CONFLICT DO NOTHING`, first)
		})
	})
}
