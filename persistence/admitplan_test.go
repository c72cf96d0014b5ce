package persistence_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/switchboard/switchboard/persistence"
)

// TestAdmitChecksPlanReadsByKey: the admission's checks, planned once per connection (a
// generic plan), read every table by key even when the plan is made while respondents and
// the partition of sessions being filled are empty and analyzed so, as on a fresh database:
// such a plan is kept while those tables grow by thousands of rows a second, and a
// sequential scan in it read them whole for every entry. And it is not compiled (JIT) when
// it runs: seconds per call.
func TestAdmitChecksPlanReadsByKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migratedDB(t)
	b, _, err := db.CreateBuyer(ctx, "plans@example.test", "Plans", persistence.EnvStaging)
	if err != nil {
		t.Fatal(err)
	}
	pub, _, err := db.CreatePublisher(ctx, persistence.NewPublisher{Name: "Partner", CurrencyName: "coins", ExchangeRate: 100,
		RevenueShare: 0.5, RedirectURL: "https://partner.example/back", Environment: persistence.EnvStaging})
	if err != nil {
		t.Fatal(err)
	}
	camp := newCampaign(t, db, b.ID, "Plans")
	p, err := db.ImpanelParticipant(ctx, persistence.Impanel{PublisherID: pub.ID, User: "plan-user", CountryID: 1},
		"test", func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.EnsureSessionPartitions(ctx, persistence.PartitionPolicy{}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `ANALYZE`); err != nil { // every table known empty
		t.Fatal(err)
	}
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var plan []string
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
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
	// session_partitions is a catalog of a dozen rows, read whole by design.
	for _, m := range regexp.MustCompile(`Seq Scan on (\w+)`).FindAllStringSubmatch(text, -1) {
		if m[1] != "session_partitions" {
			t.Errorf("the checks' generic plan scans %s whole:\n%s", m[1], text)
		}
	}
}
