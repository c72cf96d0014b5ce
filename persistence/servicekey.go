package persistence

import (
	"context"
	"crypto/rand"
)

// EntryKeyName names the service key that signs offer-entry, profiler and support tokens.
const EntryKeyName = "entry"

// ServiceKey returns the deployment-wide secret called name, creating it with 32 random bytes
// when it does not exist yet. Every serve process of a deployment gets the same bytes: the
// first insert wins and the others read it back.
func (db *DB) ServiceKey(ctx context.Context, name string) ([]byte, error) {
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, err
	}
	// Two statements: the SELECT takes a new snapshot, so it sees a row that a concurrent
	// first start committed while our INSERT waited on it.
	if _, err := db.Pool.Exec(ctx, `INSERT INTO service_keys (name, key) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`,
		name, fresh); err != nil {
		return nil, classify(err)
	}
	var key []byte
	if err := db.Pool.QueryRow(ctx, `SELECT key FROM service_keys WHERE name = $1`, name).Scan(&key); err != nil {
		return nil, classify(err)
	}
	return key, nil
}
