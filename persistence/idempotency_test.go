package persistence_test

import (
	"context"
	"testing"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// TestIdempotencyClaimTimesOut: a claim whose answer was never stored refuses a retry while
// it may still be running (409), and frees its key after IdempotencyClaimTimeout, not after
// the whole TTL.
func TestIdempotencyClaimTimesOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := persistence.Open(ctx, pgtest.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	buyer, _, err := db.CreateBuyer(ctx, "idem@example.test", "Buyer", persistence.EnvStaging)
	if err != nil {
		t.Fatal(err)
	}
	sum := []byte("0123456789abcdef0123456789abcdef")
	claim := func() persistence.IdempotencyState {
		t.Helper()
		st, _, err := db.ClaimIdempotencyKey(ctx, buyer.ID, "/api/v1/campaigns", "k1", sum)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if st := claim(); st != persistence.IdempotencyClaimed {
		t.Fatalf("first claim: state %d, want claimed", st)
	}
	if st := claim(); st != persistence.IdempotencyInProgress {
		t.Fatalf("second claim while the first runs: state %d, want in progress", st)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE idempotency_keys SET created_at = now() - interval '3 minutes' WHERE buyer_id = $1`, buyer.ID); err != nil {
		t.Fatal(err)
	}
	if st := claim(); st != persistence.IdempotencyClaimed {
		t.Fatalf("claim after an abandoned one timed out: state %d, want claimed", st)
	}
}
