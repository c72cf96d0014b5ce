package persistence_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

func TestSplitStatements(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sql   string
		want  []string
		lines []int
	}{
		{"plain", "-- head\nSELECT 1;\n\nSELECT 2;\n-- tail\n", []string{"-- head\nSELECT 1;", "SELECT 2;"}, []int{2, 4}},
		{"no final semicolon", "SELECT 1", []string{"SELECT 1"}, []int{1}},
		{"quotes", "SELECT 'a;b''c;';\nSELECT \"x;y\" FROM t;", []string{"SELECT 'a;b''c;';", "SELECT \"x;y\" FROM t;"}, []int{1, 2}},
		{"comments", "SELECT 1 /* ; */; -- ;\nSELECT 2;", []string{"SELECT 1 /* ; */;", "-- ;\nSELECT 2;"}, []int{1, 2}},
		{"dollar quotes", "CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql;\nDO $body$ BEGIN PERFORM 1; END $body$;\nSELECT $1;",
			[]string{"CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql;", "DO $body$ BEGIN PERFORM 1; END $body$;", "SELECT $1;"}, []int{1, 2, 3}},
		{"only comments", "-- nothing\n/* at all */\n", nil, nil},
	} {
		got, lines := persistence.SplitStatements(tc.sql)
		if !reflect.DeepEqual(got, tc.want) || !reflect.DeepEqual(lines, tc.lines) {
			t.Errorf("%s: %q at %v, want %q at %v", tc.name, got, lines, tc.want, tc.lines)
		}
	}
}

// TestMigrateNoTransaction: a migration marked no-transaction builds an index on sessions
// with CREATE INDEX CONCURRENTLY (which a transaction refuses); one that fails half way says
// which statement failed and what took effect, stays pending, and applies once re-run.
func TestMigrateNoTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := persistence.Open(ctx, pgtest.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	valid := func(index string) (exists, ok bool) {
		err := db.Pool.QueryRow(ctx, `SELECT count(*) > 0, coalesce(bool_and(indisvalid), false) FROM pg_index WHERE indexrelid = to_regclass($1)`,
			index).Scan(&exists, &ok)
		if err != nil {
			t.Fatal(err)
		}
		return exists, ok
	}
	// In a transaction, as every other migration runs, the statement is refused.
	inTx := fstest.MapFS{"m/9001_outbox_index.sql": {Data: []byte(
		"CREATE INDEX CONCURRENTLY postback_outbox_retried ON postback_outbox (retried_at);\n")}}
	if _, err := db.MigrateWith(ctx, inTx, "m"); err == nil || !strings.Contains(err.Error(), "transaction block") {
		t.Fatalf("CREATE INDEX CONCURRENTLY in a transaction: %v", err)
	}
	// (On postback_outbox: sessions is partitioned since 0036, and PostgreSQL builds no index
	// of a partitioned table concurrently.)
	noTx := fstest.MapFS{"m/9001_outbox_index.sql": {Data: []byte(persistence.NoTransaction + `
-- an index built without blocking writes to the outbox
DROP INDEX CONCURRENTLY IF EXISTS postback_outbox_retried;
CREATE INDEX CONCURRENTLY postback_outbox_retried ON postback_outbox (retried_at) WHERE retried_at IS NOT NULL;
`)}}
	applied, err := db.MigrateWith(ctx, noTx, "m")
	if err != nil || !reflect.DeepEqual(applied, []int{9001}) {
		t.Fatalf("no-transaction migration: applied %v, %v", applied, err)
	}
	if exists, ok := valid("postback_outbox_retried"); !exists || !ok {
		t.Fatalf("index postback_outbox_retried: exists %v, valid %v", exists, ok)
	}

	// A unique index over duplicates fails after its DROP took effect, leaving an invalid
	// index behind; the file is written to be re-run.
	if _, err := db.Pool.Exec(ctx, `CREATE TABLE probe (x int); INSERT INTO probe VALUES (1), (1)`); err != nil {
		t.Fatal(err)
	}
	failing := fstest.MapFS{"m/9001_outbox_index.sql": noTx["m/9001_outbox_index.sql"],
		"m/9002_probe_unique.sql": {Data: []byte(persistence.NoTransaction + `
DROP INDEX CONCURRENTLY IF EXISTS probe_x;
CREATE UNIQUE INDEX CONCURRENTLY probe_x ON probe (x);
`)}}
	_, err = db.MigrateWith(ctx, failing, "m")
	if err == nil {
		t.Fatal("a unique index over duplicates was built")
	}
	for _, want := range []string{"9002_probe_unique.sql", "no transaction", "statement 2 of 2 (line 3)", "the 1 before it took effect", "runs again", "could not create unique index"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if exists, ok := valid("probe_x"); !exists || ok {
		t.Fatalf("after the failure: index exists %v, valid %v; want an invalid one", exists, ok)
	}
	var recorded bool
	if err := db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = 9002)`).Scan(&recorded); err != nil || recorded {
		t.Fatalf("failed migration recorded: %v %v", recorded, err)
	}
	if _, err := db.Pool.Exec(ctx, `DELETE FROM probe WHERE ctid = (SELECT max(ctid) FROM probe)`); err != nil {
		t.Fatal(err)
	}
	applied, err = db.MigrateWith(ctx, failing, "m")
	if err != nil || !reflect.DeepEqual(applied, []int{9002}) {
		t.Fatalf("re-run: applied %v, %v", applied, err)
	}
	if exists, ok := valid("probe_x"); !exists || !ok {
		t.Fatalf("after the re-run: index exists %v, valid %v", exists, ok)
	}
}
