package persistence_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// TestCreateOnce: a create under a key commits with the key and its answer, or not at all.
// A failed create keeps neither the key nor what it wrote (its Tx joined the key's
// transaction); the same key and body replay the answer without running the create; a
// second request while the first runs waits for it and replays its answer; a key row
// without an answer (left by a version that stored it in a transaction of its own) holds
// the key until IdempotencyClaimTimeout, then is taken over.
func TestCreateOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := persistence.Open(ctx, pgtest.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	buyer, _, err := db.Accounts.CreateBuyer(ctx, "idem@example.test", "Buyer", persistence.EnvStaging)
	if err != nil {
		t.Fatal(err)
	}
	sum := []byte("0123456789abcdef0123456789abcdef")
	accounts := func() (n int64) {
		t.Helper()
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM adhoc_accounts WHERE buyer_id = $1`, buyer.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// create stores an account through Tx, as the creates do, and answers its id.
	create := func(fail error, hold time.Duration) func(context.Context) (persistence.IdempotentAnswer, error) {
		return func(ctx context.Context) (persistence.IdempotentAnswer, error) {
			var id string
			if err := db.Tx(ctx, func(tx pgx.Tx) error {
				return tx.QueryRow(ctx, `INSERT INTO adhoc_accounts (buyer_id, buyer_name, buyer_identifier) VALUES ($1, 'n', 'i')
					RETURNING id::text`, buyer.ID).Scan(&id)
			}); err != nil {
				return persistence.IdempotentAnswer{}, err
			}
			time.Sleep(hold)
			return persistence.IdempotentAnswer{Status: 201, Body: []byte(id)}, fail
		}
	}
	once := func(key string, c func(context.Context) (persistence.IdempotentAnswer, error)) (persistence.IdempotencyState, string) {
		t.Helper()
		st, ans, err := db.CreateOnce(ctx, buyer.ID, "/api/v1/adhoc_accounts", key, sum, c)
		if err != nil {
			t.Fatal(err)
		}
		return st, string(ans.Body)
	}

	boom := errors.New("boom")
	if _, _, err := db.CreateOnce(ctx, buyer.ID, "/r", "k0", sum, create(boom, 0)); !errors.Is(err, boom) {
		t.Fatalf("failed create: %v, want its error", err)
	}
	var keys int64
	_ = db.Pool.QueryRow(ctx, `SELECT count(*) FROM idempotency_keys WHERE buyer_id = $1`, buyer.ID).Scan(&keys)
	if n := accounts(); n != 0 || keys != 0 {
		t.Fatalf("after a failed create: %d accounts, %d keys; want none", n, keys)
	}

	st, first := once("k1", create(nil, 0))
	if st != persistence.IdempotencyCreated || first == "" {
		t.Fatalf("first create: state %d answer %q", st, first)
	}
	if st, again := once("k1", create(nil, 0)); st != persistence.IdempotencyReplay || again != first || accounts() != 1 {
		t.Fatalf("same key again: state %d answer %q (first %q), %d accounts", st, again, first, accounts())
	}

	// Two requests with one key at once: the second waits for the first and replays it.
	done := make(chan string, 1)
	go func() { _, ans := once("k2", create(nil, 300*time.Millisecond)); done <- ans }()
	time.Sleep(100 * time.Millisecond)
	st, second := once("k2", create(nil, 0))
	if winner := <-done; st != persistence.IdempotencyReplay || second != winner || accounts() != 2 {
		t.Fatalf("concurrent same key: state %d answer %q (first %q), %d accounts, want a replay and 2", st, second, winner, accounts())
	}

	if _, err := db.Pool.Exec(ctx, `INSERT INTO idempotency_keys (buyer_id, route, key, body_sha256) VALUES ($1, '/api/v1/adhoc_accounts', 'k3', $2)`,
		buyer.ID, sum); err != nil {
		t.Fatal(err)
	}
	if st, _ := once("k3", create(nil, 0)); st != persistence.IdempotencyInProgress {
		t.Fatalf("a key row without an answer: state %d, want in progress", st)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE idempotency_keys SET created_at = now() - interval '3 minutes' WHERE key = 'k3'`); err != nil {
		t.Fatal(err)
	}
	if st, _ := once("k3", create(nil, 0)); st != persistence.IdempotencyCreated {
		t.Fatalf("after the claim timed out: state %d, want created", st)
	}
}
