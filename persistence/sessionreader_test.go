package persistence_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// TestSessionReaderPlansPerCall checks on one connection that the callbacks' session lookup
// never runs a generic plan: sessions are partitioned, and a generic plan made while the
// newest partition was empty reads all of it once it fills.
func TestSessionReaderPlansPerCall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.URL(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	db, err := persistence.Open(ctx, url+sep+"pool_max_conns=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r := db.NewSessionReader(1)
	defer r.Close()
	for i := range 12 { // more than the five custom plans after which PostgreSQL may go generic
		if _, err := r.ByTID(ctx, fmt.Sprintf("no-such-tid-%d", i)); fault.KindOf(err) != fault.KindNotFound {
			t.Fatalf("lookup %d of an unknown tid: %v, want not found", i, err)
		}
	}
	var generic, custom int64
	if err := db.Pool.QueryRow(ctx, `SELECT coalesce(sum(generic_plans), 0), coalesce(sum(custom_plans), 0)
		FROM pg_prepared_statements WHERE statement LIKE '%s.tid = ANY%' AND statement NOT LIKE '%pg_prepared_statements%'`).Scan(&generic, &custom); err != nil {
		t.Fatal(err)
	}
	if generic != 0 || custom < 12 {
		t.Fatalf("session lookup: %d generic and %d custom plans, want 0 and at least 12", generic, custom)
	}
}
