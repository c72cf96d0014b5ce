package persistence_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// TestOutboxWorkerStatementsPlanPerCall: the postback worker's claims and delivery marks are
// planned for each call, never from a cached generic plan. A generic plan made while the
// outbox was small (a fresh deployment, before autovacuum's first analyze) scanned the whole
// table for every mark once it had grown: 5–10 ms per batch of marks.
func TestOutboxWorkerStatementsPlanPerCall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	enqueue := func(n, from int) []int64 {
		t.Helper()
		rows, err := conn.Query(ctx, `INSERT INTO postback_outbox (tid, kind, publisher_id, url)
			SELECT 'tid-' || i, 'outcome', 1, 'http://partner.example/pb?tid=' || i FROM generate_series($1::int, $1::int + $2::int - 1) i
			RETURNING id`, from, n)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	// While the outbox is small: more calls than the five custom plans after which
	// PostgreSQL would switch to a generic one.
	ids := enqueue(10, 0)
	for i, id := range ids {
		claimed, err := persistence.SendClaimBatch(ctx, conn, 1, time.Minute)
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claim %d: %v, %v", i, claimed, err)
		}
		if err := persistence.SendMarkBatch(ctx, conn, []int64{id}); err != nil {
			t.Fatal(err)
		}
	}
	// The outbox grows; a mark and a claim still find their rows by index.
	ids = enqueue(5000, 10)
	if err := persistence.SendMarkBatch(ctx, conn, ids[:3]); err != nil {
		t.Fatal(err)
	}
	if claimed, err := persistence.SendClaimBatch(ctx, conn, 4, time.Minute); err != nil || len(claimed) != 4 {
		t.Fatalf("claim after growth: %d rows, %v", len(claimed), err)
	}
	var delivered int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM postback_outbox WHERE delivered_at IS NOT NULL`).Scan(&delivered); err != nil {
		t.Fatal(err)
	}
	if delivered != 13 {
		t.Errorf("%d postbacks marked delivered, want 13", delivered)
	}
	rows, err := conn.Query(ctx, `SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements
		WHERE statement LIKE '%postback_outbox%'`)
	if err != nil {
		t.Fatal(err)
	}
	type prepared struct {
		sql             string
		generic, custom int64
	}
	stmts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (prepared, error) {
		var p prepared
		err := r.Scan(&p.sql, &p.generic, &p.custom)
		return p, err
	})
	if err != nil {
		t.Fatal(err)
	}
	var marks, claims int
	for _, p := range stmts {
		switch {
		case strings.Contains(p.sql, "SET delivered_at"):
			marks++
		case strings.Contains(p.sql, "FOR UPDATE SKIP LOCKED"):
			claims++
		default:
			continue
		}
		if p.generic != 0 || p.custom != 11 {
			t.Errorf("%d generic and %d custom plans, want 0 and 11, for\n%s", p.generic, p.custom, p.sql)
		}
	}
	if marks != 1 || claims != 1 {
		t.Errorf("prepared statements: %d marks, %d claims, want one each", marks, claims)
	}
}
