package persistence

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/internal/fault"
)

// RotateBuyerSecret gives the buyer registered with email a new API secret and returns the
// buyer with it. The secret it replaces still verifies the buyer's callbacks for grace (0:
// not at all), so that callbacks signed before the buyer switched keep working; links the
// server signs (supplier links, redirect tests) use the new secret at once. Serve processes
// see the change within a minute (the router's buyer cache). The secret is stored as it is:
// the server signs and verifies with it.
func (db *AccountStore) RotateBuyerSecret(ctx context.Context, email string, grace time.Duration) (Buyer, error) {
	b := Buyer{APISecret: randomHex(16)}
	var until *time.Time
	err := db.Pool.QueryRow(ctx, `UPDATE buyers SET previous_api_secret = CASE WHEN $3::bigint > 0 THEN api_secret END,
			previous_secret_until = CASE WHEN $3::bigint > 0 THEN now() + make_interval(secs => $3::bigint) END,
			api_secret = $2
		WHERE email = $1 RETURNING id, customer_id, email, name, previous_secret_until`,
		strings.ToLower(strings.TrimSpace(email)), b.APISecret, int64(grace/time.Second)).
		Scan(&b.ID, &b.CustomerID, &b.Email, &b.Name, &until)
	if errors.Is(err, pgx.ErrNoRows) {
		return Buyer{}, fault.NotFound("no buyer with that email")
	}
	if err != nil {
		return Buyer{}, classify(err)
	}
	if until != nil {
		b.PreviousUntil = *until
	}
	return b, nil
}
