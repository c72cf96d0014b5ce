package persistence_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// TestAnalyzeGrowingTables: a routing table is analyzed once it has about doubled since its
// last analyze (at least 1,000 changes), and not again until it doubles again.
func TestAnalyzeGrowingTables(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := persistence.Open(ctx, pgtest.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Only this step analyzes the table here: autovacuum could get there first.
	if _, err := db.Pool.Exec(ctx, `ALTER TABLE respondents SET (autovacuum_enabled = false)`); err != nil {
		t.Fatal(err)
	}
	grow := func(from, n int) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, `INSERT INTO respondents (buyer_id, participant_id, respondent_id)
			SELECT 1, i, 'r' || i FROM generate_series($1::int, $1::int + $2::int - 1) i`, from, n); err != nil {
			t.Fatal(err)
		}
	}
	// analyzed waits for the table statistics to show the inserts (each backend reports its
	// counts within a second or so), then runs the step.
	analyzed := func(wantMods int64) []string {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			var mods int64
			if err := db.Pool.QueryRow(ctx, `SELECT n_mod_since_analyze FROM pg_stat_user_tables WHERE relname = 'respondents'`).Scan(&mods); err != nil {
				t.Fatal(err)
			}
			if mods >= wantMods || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		got, err := db.Maintenance.AnalyzeGrowingTables(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	reltuples := func() float64 {
		var n float64
		if err := db.Pool.QueryRow(ctx, `SELECT reltuples FROM pg_class WHERE oid = 'respondents'::regclass`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	inserted, analyzedAt := 0, 0 // rows in the table, and at its last analyze
	for _, step := range []struct {
		rows     int  // inserted now
		analyzed bool // want the table analyzed after them
		why      string
	}{
		{500, false, "500 changes: fewer than 1,000"},
		{1500, true, "2,000 changes to a table never analyzed"},
		{1500, false, "1,500 changes to the 2,000 rows held at the last analyze"},
		{1000, true, "2,500 changes to those 2,000 rows: it about doubled"},
	} {
		grow(inserted, step.rows)
		inserted += step.rows
		if got := analyzed(int64(inserted - analyzedAt)); slices.Contains(got, "respondents") != step.analyzed {
			t.Fatalf("%s: analyzed %v", step.why, got)
		}
		if step.analyzed {
			if n := reltuples(); n != float64(inserted) {
				t.Fatalf("%s: reltuples %v after the analyze, want %d", step.why, n, inserted)
			}
			analyzedAt = inserted
		}
	}
}
