package maintenance_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/maintenance"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// migratedDB opens a fresh migrated database for t.
func migratedDB(t *testing.T) *persistence.DB {
	t.Helper()
	ctx := context.Background()
	db, err := persistence.Open(ctx, pgtest.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestSweepersTakeTurns: two processes' sweepers on one database sweep in turns: over a
// stretch of time the fleet's sweeps are about as many as one process's ticks, not twice
// that, and it does sweep.
func TestSweepersTakeTurns(t *testing.T) {
	db := migratedDB(t)
	every := 100 * time.Millisecond
	began := time.Now()
	for range 2 {
		startSweeper(t, db, every, nil)
	}
	time.Sleep(20 * every)
	var turns int64
	if err := db.Pool.QueryRow(context.Background(), `SELECT turn FROM sweeper_turns WHERE name = 'sweep'`).Scan(&turns); err != nil {
		t.Fatal(err)
	}
	// Claims are at least nine tenths of a period apart: at most this many in the time gone.
	most := int64(time.Since(began)/(every*9/10)) + 1
	if turns < 3 || turns > most {
		t.Errorf("%d sweeps by two processes in %v of 100 ms periods, want 3 to %d", turns, time.Since(began).Round(time.Millisecond), most)
	}
}

// startSweeper starts a process's maintenance on db whose sweeper ticks every every, from
// when after closes, until t ends.
func startSweeper(t testing.TB, db *persistence.DB, every time.Duration, after <-chan struct{}) {
	t.Helper()
	f, err := maintenance.New(maintenance.Deps{Store: db.Maintenance, Config: maintenance.Config{SweepEvery: every, BrokenLinkEntries: -1}})
	if err != nil {
		t.Fatal(err)
	}
	f.Start(context.Background(), after)
	t.Cleanup(f.Close)
}
