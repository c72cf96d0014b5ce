package persistence_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/switchboard/switchboard/persistence"
)

// TestAdmitChecksNotCompiled: the admission's checks, planned once per connection (a
// generic plan), are not compiled when they run even when their plan's cost crosses
// jit_above_cost (here set to 0; in a bench run, stale statistics): seconds per call.
func TestAdmitChecksNotCompiled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migratedDB(t)
	pub := newPublisher(t, db)
	camp := newCampaign(t, db, newBuyer(t, db, "plans@example.test"), "Plans")
	p, err := db.ImpanelParticipant(ctx, persistence.Impanel{PublisherID: pub, User: "plan-user", CountryID: 1},
		"test", func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.EnsureSessionPartitions(ctx, persistence.PartitionPolicy{}); err != nil {
		t.Fatal(err)
	}
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var plan []string
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		// jit on as PostgreSQL's default has it (the pool's connections turn it off): the
		// admission's own setting is what this test is about.
		if _, err := tx.Exec(ctx, `SET LOCAL jit = on; SET LOCAL jit_above_cost = 0`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, persistence.AdmitSettingsSQL); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `PREPARE admit_checks(bigint[], bigint[], bigint[]) AS `+persistence.AdmitChecksSQL); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, fmt.Sprintf(`EXPLAIN (ANALYZE, TIMING OFF) EXECUTE admit_checks('{%d}', '{%d}', '{7}')`, camp, p.ID),
			pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			return err
		}
		plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DEALLOCATE admit_checks`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(plan, "\n")
	if !strings.Contains(text, "$") { // a generic plan keeps its parameters
		t.Fatalf("not a generic plan:\n%s", text)
	}
	if strings.Contains(text, "JIT:") { // shown only with costs
		t.Errorf("the checks are compiled when they run:\n%s", text)
	}
}
