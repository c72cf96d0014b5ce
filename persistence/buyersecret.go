package persistence

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/internal/fault"
)

// RotateBuyerSecret gives the buyer registered with email a new API secret and returns the
// buyer with it. The secret signs every entry link and callback URL the buyer issued and
// there is one per buyer, so those stop verifying once serve processes see the new one (the
// router's buyer cache, within a minute); `switchboard buyer rotate-secret` requires --yes
// for that reason. The secret is stored as it is: the server signs and verifies with it.
func (db *DB) RotateBuyerSecret(ctx context.Context, email string) (Buyer, error) {
	b := Buyer{APISecret: randomHex(16)}
	err := db.Pool.QueryRow(ctx, `UPDATE buyers SET api_secret = $2 WHERE email = $1
		RETURNING id, customer_id, email, name`, strings.ToLower(strings.TrimSpace(email)), b.APISecret).
		Scan(&b.ID, &b.CustomerID, &b.Email, &b.Name)
	if errors.Is(err, pgx.ErrNoRows) {
		return Buyer{}, fault.NotFound("no buyer with that email")
	}
	if err != nil {
		return Buyer{}, classify(err)
	}
	return b, nil
}
