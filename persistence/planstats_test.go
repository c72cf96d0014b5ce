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
		got, err := db.AnalyzeGrowingTables(ctx)
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

	grow(0, 500)
	if got := analyzed(500); slices.Contains(got, "respondents") {
		t.Fatalf("analyzed %v after 500 rows; want no analyze below 1,000 changes", got)
	}
	grow(500, 1500)
	if got := analyzed(2000); !slices.Contains(got, "respondents") {
		t.Fatalf("analyzed %v after 2,000 new rows; want respondents", got)
	}
	if n := reltuples(); n != 2000 {
		t.Fatalf("reltuples %v after the analyze, want 2000", n)
	}
	// 1,500 more: less than the 2,000 it held at the analyze.
	grow(2000, 1500)
	if got := analyzed(1500); slices.Contains(got, "respondents") {
		t.Fatalf("analyzed %v again after 1,500 changes to 2,000 rows", got)
	}
	grow(3500, 1000)
	if got := analyzed(2500); !slices.Contains(got, "respondents") {
		t.Fatalf("analyzed %v after the table doubled again; want respondents", got)
	}
}
