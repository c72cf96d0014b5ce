package persistence_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestMigrateEmptyThenNoop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := persistence.Open(ctx, pgtest.EmptyURL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	migs, err := persistence.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	applied, err := db.Migrate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(applied) != len(migs) {
		t.Fatalf("first migrate applied %v, want all %d migrations", applied, len(migs))
	}
	again, err := db.Migrate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 0 {
		t.Fatalf("second migrate applied %v, want nothing", again)
	}
	var langs, countries int
	if err := db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM country_languages), (SELECT count(*) FROM countries)`).Scan(&langs, &countries); err != nil {
		t.Fatal(err)
	}
	if langs != 8 || countries != 6 {
		t.Fatalf("reference data: %d country languages, %d countries; want 8 and 6", langs, countries)
	}
}

// Processes starting together must not race: every migration is applied exactly once.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.EmptyURL(t)
	const procs = 4
	var wg sync.WaitGroup
	results := make([][]int, procs)
	errs := make([]error, procs)
	for i := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := persistence.Open(ctx, url, nil)
			if err != nil {
				errs[i] = err
				return
			}
			defer db.Close()
			results[i], errs[i] = db.Migrate(ctx)
		}()
	}
	wg.Wait()
	total := 0
	for i := range procs {
		if errs[i] != nil {
			t.Fatalf("migrator %d: %v", i, errs[i])
		}
		total += len(results[i])
	}
	migs, _ := persistence.Migrations()
	if total != len(migs) {
		t.Fatalf("migrations applied %d times in all, want %d (exactly once each)", total, len(migs))
	}
}

func TestReferenceCatalog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := persistence.Open(ctx, pgtest.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Pool.Query(ctx, `SELECT country_language_id, count(*) FROM qualifications WHERE buyer_id IS NULL GROUP BY 1 ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var cl, count int
		if err := rows.Scan(&cl, &count); err != nil {
			t.Fatal(err)
		}
		if count < 12 {
			t.Errorf("country language %d has %d standard questions, want at least 12", cl, count)
		}
		n++
	}
	if n != 8 {
		t.Fatalf("standard questions in %d country languages, want 8", n)
	}
	fixed := map[int]string{42: "AGE", 43: "GENDER", 45: "ZIP", 47: "HISPANIC"}
	for id, name := range fixed {
		var got string
		if err := db.Pool.QueryRow(ctx, `SELECT name FROM qualifications WHERE question_id = $1 AND country_language_id = 1`, id).Scan(&got); err != nil || got != name {
			t.Errorf("question %d: name %q, err %v; want %s", id, got, err, name)
		}
	}
}

// TestMigrateRefusesNewerSchema: a database migrated past this binary's newest migration is
// refused with a *SchemaNewerError naming both versions, and applies nothing.
func TestMigrateRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := persistence.Open(ctx, pgtest.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	migs, err := persistence.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	newest := migs[len(migs)-1].Version
	if _, err := db.Pool.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, 'newer.sql')`, newest+1); err != nil {
		t.Fatal(err)
	}
	applied, err := db.Migrate(ctx)
	var newer *persistence.SchemaNewerError
	if !errors.As(err, &newer) || newer.Database != newest+1 || newer.Binary != newest || len(applied) != 0 {
		t.Fatalf("Migrate on a newer schema: applied %v, error %v; want a SchemaNewerError %d > %d", applied, err, newest+1, newest)
	}
	states, err := db.MigrationStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	last := states[len(states)-1]
	if len(states) != len(migs)+1 || last.Version != newest+1 || last.Embedded || !last.Applied() {
		t.Fatalf("status: %d states, last %+v; want %d, the newer migration applied and not embedded", len(states), last, len(migs)+1)
	}
}
