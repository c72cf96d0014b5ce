package router_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
)

// TestYoungTablesAnalyzedWithinSeconds: a routing table that has about doubled since its
// last ANALYZE gets fresh statistics within seconds on the default period, not at the next
// sweep (30 s), so that a fresh marketplace's first entries and callbacks do not run on plans
// made when the table was empty.
func TestYoungTablesAnalyzedWithinSeconds(t *testing.T) {
	w := newWorld(t, "")
	apptest.Start(t, apptest.Options{DatabaseURL: w.dbURL, RateLimit: -1})
	ctx := context.Background()
	// Only the process analyzes the table here: autovacuum could get there first.
	if _, err := w.db.Pool.Exec(ctx, `ALTER TABLE respondents SET (autovacuum_enabled = false)`); err != nil {
		t.Fatal(err)
	}
	if _, err := w.db.Pool.Exec(ctx, `INSERT INTO respondents (buyer_id, participant_id, respondent_id)
		SELECT 1, i, 'young-' || i FROM generate_series(1, 1500) i`); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "respondents to be analyzed after 1,500 inserts", 15*time.Second, func() bool {
		return w.count(`SELECT count(*) FROM pg_stat_user_tables WHERE relname = 'respondents' AND last_analyze IS NOT NULL`) == 1
	})
}
