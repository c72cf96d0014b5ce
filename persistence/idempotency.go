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

// IdempotencyState is what ClaimIdempotencyKey found for a key.
type IdempotencyState int

const (
	// IdempotencyClaimed means the caller now owns the key and must run the create, then
	// call StoreIdempotentAnswer or ReleaseIdempotencyKey.
	IdempotencyClaimed IdempotencyState = iota
	// IdempotencyReplay means a stored answer with the same body exists: answer it again.
	IdempotencyReplay
	// IdempotencyMismatch means the key was used with a different body within the TTL.
	IdempotencyMismatch
	// IdempotencyInProgress means another request with the key and body is still running.
	IdempotencyInProgress
)

// IdempotencyClaimTimeout is how long a claim whose answer was never stored (the process
// died, or storing the answer failed) holds its key: longer than any create takes, short
// enough that a buyer's retries are not refused with 409 for the whole TTL.
const IdempotencyClaimTimeout = 2 * time.Minute

// IdempotentAnswer is a stored answer to replay.
type IdempotentAnswer struct {
	Status int
	Body   []byte
}

// ClaimIdempotencyKey claims (buyer, route, key) for a request whose body hashes to sum, or
// reports the live row another request left. A row older than IdempotencyTTL, or a claim
// older than IdempotencyClaimTimeout that never stored its answer, is taken over.
func (db *DB) ClaimIdempotencyKey(ctx context.Context, buyerID int64, route, key string, sum []byte) (IdempotencyState, IdempotentAnswer, error) {
	// The insert claims a free key; the conditional update takes over an expired one. Each is
	// one statement, so two racing requests cannot both win.
	tag, err := db.Pool.Exec(ctx, `
INSERT INTO idempotency_keys (buyer_id, route, key, body_sha256) VALUES ($1, $2, $3, $4)
ON CONFLICT (buyer_id, route, key) DO UPDATE
  SET body_sha256 = EXCLUDED.body_sha256, status = 0, response = NULL, created_at = now()
  WHERE idempotency_keys.created_at < now() - $5 * interval '1 second'
     OR (idempotency_keys.status = 0 AND idempotency_keys.created_at < now() - $6 * interval '1 second')`,
		buyerID, route, key, sum, int64(IdempotencyTTL/time.Second), int64(IdempotencyClaimTimeout/time.Second))
	if err != nil {
		return 0, IdempotentAnswer{}, classify(err)
	}
	if tag.RowsAffected() == 1 {
		return IdempotencyClaimed, IdempotentAnswer{}, nil
	}
	var (
		stored []byte
		a      IdempotentAnswer
	)
	err = db.Pool.QueryRow(ctx, `SELECT body_sha256, status, coalesce(response, '') FROM idempotency_keys
WHERE buyer_id = $1 AND route = $2 AND key = $3`, buyerID, route, key).Scan(&stored, &a.Status, &a.Body)
	if errors.Is(err, pgx.ErrNoRows) {
		// The holder released its claim between our statements (its create failed): the
		// client may simply retry.
		return IdempotencyInProgress, IdempotentAnswer{}, nil
	}
	if err != nil {
		return 0, IdempotentAnswer{}, classify(err)
	}
	switch {
	case !bytes.Equal(stored, sum):
		return IdempotencyMismatch, IdempotentAnswer{}, nil
	case a.Status == 0:
		return IdempotencyInProgress, IdempotentAnswer{}, nil
	}
	return IdempotencyReplay, a, nil
}

// StoreIdempotentAnswer records the 2xx answer of a claimed key for replay.
func (db *DB) StoreIdempotentAnswer(ctx context.Context, buyerID int64, route, key string, a IdempotentAnswer) error {
	_, err := db.Pool.Exec(ctx, `UPDATE idempotency_keys SET status = $4, response = $5
WHERE buyer_id = $1 AND route = $2 AND key = $3`, buyerID, route, key, a.Status, a.Body)
	return classify(err)
}

// ReleaseIdempotencyKey drops a claim whose create failed, so the key may be used again.
func (db *DB) ReleaseIdempotencyKey(ctx context.Context, buyerID int64, route, key string) error {
	_, err := db.Pool.Exec(ctx, `DELETE FROM idempotency_keys
WHERE buyer_id = $1 AND route = $2 AND key = $3 AND status = 0`, buyerID, route, key)
	return classify(err)
}
