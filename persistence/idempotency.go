package persistence

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// IdempotencyTTL is how long a stored answer to an Idempotency-Key is replayed; older rows
// are ignored and overwritten by the next claim.
const IdempotencyTTL = 24 * time.Hour

// IdempotencyState is what CreateOnce did with a key.
type IdempotencyState int

const (
	// IdempotencyCreated means the create ran and committed with the key and its answer.
	IdempotencyCreated IdempotencyState = iota
	// IdempotencyReplay means a stored answer with the same body exists: answer it again.
	IdempotencyReplay
	// IdempotencyMismatch means the key was used with a different body within the TTL.
	IdempotencyMismatch
	// IdempotencyInProgress means the key is held by a claim without an answer, as written
	// by versions that claimed a key, created and stored the answer in three transactions,
	// until IdempotencyClaimTimeout.
	IdempotencyInProgress
)

// IdempotencyClaimTimeout is how long a key row without an answer (IdempotencyInProgress)
// holds its key. CreateOnce never commits one.
const IdempotencyClaimTimeout = 2 * time.Minute

// IdempotentAnswer is a stored answer to replay.
type IdempotentAnswer struct {
	Status int
	Body   []byte
}

// createTxKey is the context key of an idempotent create's transaction: Tx joins it.
type createTxKey struct{}

// CreateOnce runs create, a buyer's create under an Idempotency-Key (buyer, route, key) whose
// request body hashes to sum, in one transaction with the key and its answer: the key's row
// is inserted first, create runs with a context whose Tx calls join the transaction, and
// its answer is stored before the one COMMIT. A key so maps to at most one created resource
// whatever crashes: a process killed at any point before the COMMIT leaves neither the
// resource nor the key, and after it both. A concurrent request with the same key waits on
// the key's row until the first commits, then replays its answer (or, when it rolled back,
// creates). A row older than IdempotencyTTL, or one without an answer older than
// IdempotencyClaimTimeout, is taken over. An error of create rolls everything back (no key
// is kept) and is returned.
func (db *DB) CreateOnce(ctx context.Context, buyerID int64, route, key string, sum []byte,
	create func(ctx context.Context) (IdempotentAnswer, error)) (IdempotencyState, IdempotentAnswer, error) {
	var (
		state IdempotencyState
		ans   IdempotentAnswer
	)
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		state, ans = IdempotencyCreated, IdempotentAnswer{}
		tag, err := tx.Exec(ctx, claimKeySQL, buyerID, route, key, sum,
			int64(IdempotencyTTL/time.Second), int64(IdempotencyClaimTimeout/time.Second))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			state, ans, err = storedKey(ctx, tx, buyerID, route, key, sum)
			return err
		}
		if ans, err = create(context.WithValue(ctx, createTxKey{}, tx)); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE idempotency_keys SET status = $4, response = $5
WHERE buyer_id = $1 AND route = $2 AND key = $3`, buyerID, route, key, ans.Status, ans.Body)
		return err
	})
	if err != nil {
		return 0, IdempotentAnswer{}, err
	}
	return state, ans, nil
}

// claimKeySQL inserts a key's row, or takes over an expired one (CreateOnce). Inside the
// create's transaction its row lock makes a concurrent request with the same key wait for
// that transaction's end.
const claimKeySQL = `INSERT INTO idempotency_keys (buyer_id, route, key, body_sha256) VALUES ($1, $2, $3, $4)
ON CONFLICT (buyer_id, route, key) DO UPDATE
  SET body_sha256 = EXCLUDED.body_sha256, status = 0, response = NULL, created_at = now()
  WHERE idempotency_keys.created_at < now() - $5 * interval '1 second'
     OR (idempotency_keys.status = 0 AND idempotency_keys.created_at < now() - $6 * interval '1 second')`

// storedKey reads the live row of a key that claimKeySQL did not take: a replay, a
// mismatch, or a claim without an answer.
func storedKey(ctx context.Context, tx pgx.Tx, buyerID int64, route, key string, sum []byte) (IdempotencyState, IdempotentAnswer, error) {
	var (
		stored []byte
		a      IdempotentAnswer
	)
	err := tx.QueryRow(ctx, `SELECT body_sha256, status, coalesce(response, '') FROM idempotency_keys
WHERE buyer_id = $1 AND route = $2 AND key = $3`, buyerID, route, key).Scan(&stored, &a.Status, &a.Body)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		// Deleted between the statements (a buyer's deletion): the client may retry.
		return IdempotencyInProgress, IdempotentAnswer{}, nil
	case err != nil:
		return 0, IdempotentAnswer{}, err
	case !bytes.Equal(stored, sum):
		return IdempotencyMismatch, IdempotentAnswer{}, nil
	case a.Status == 0:
		return IdempotencyInProgress, IdempotentAnswer{}, nil
	}
	return IdempotencyReplay, a, nil
}
