package persistence

import (
	"context"
	"crypto/rand"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// EntryKeyName names the service key that signs offer-entry, profiler and support tokens.
const EntryKeyName = "entry"

// ServiceKeyChannel is the NOTIFY channel a rotation sends on (payload: the key's name), so
// that every serve process reloads its keys at once.
const ServiceKeyChannel = "switchboard_service_key"

// ServiceKey returns the deployment-wide secret called name, creating it with 32 random bytes
// when it does not exist yet. Every serve process of a deployment gets the same bytes: the
// first insert wins and the others read it back.
func (db *AccountStore) ServiceKey(ctx context.Context, name string) ([]byte, error) {
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

// PreviousKey is a service key that a rotation replaced, and when.
type PreviousKey struct {
	Key          []byte
	SupersededAt time.Time
}

// ServiceKeys returns the current bytes of the service key called name (creating it as
// ServiceKey does) and the bytes it replaced within the last `within`, newest first.
func (db *AccountStore) ServiceKeys(ctx context.Context, name string, within time.Duration) ([]byte, []PreviousKey, error) {
	cur, err := db.ServiceKey(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	rows, err := db.Pool.Query(ctx, `SELECT key, superseded_at FROM service_keys_previous
		WHERE name = $1 AND superseded_at > clock_timestamp() - $2::interval ORDER BY superseded_at DESC`, name, within)
	if err != nil {
		return nil, nil, classify(err)
	}
	prev, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (PreviousKey, error) {
		var p PreviousKey
		err := r.Scan(&p.Key, &p.SupersededAt)
		return p, err
	})
	return cur, prev, classify(err)
}

// RotateServiceKey gives the service key called name 32 new random bytes, keeps the bytes it
// replaced in service_keys_previous (deleting entries older than a day) and notifies every
// serve process on ServiceKeyChannel when it commits. It returns when the rotation happened.
func (db *AccountStore) RotateServiceKey(ctx context.Context, name string) (time.Time, error) {
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return time.Time{}, err
	}
	var at time.Time
	err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		var prev []byte
		err := tx.QueryRow(ctx, `SELECT key FROM service_keys WHERE name = $1 FOR UPDATE`, name).Scan(&prev)
		switch {
		case err == nil:
			if _, err := tx.Exec(ctx, `INSERT INTO service_keys_previous (name, key) VALUES ($1, $2)`, name, prev); err != nil {
				return err
			}
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		if err := tx.QueryRow(ctx, `INSERT INTO service_keys (name, key) VALUES ($1, $2)
			ON CONFLICT (name) DO UPDATE SET key = EXCLUDED.key, created_at = now() RETURNING clock_timestamp()`,
			name, fresh).Scan(&at); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM service_keys_previous WHERE name = $1 AND superseded_at < now() - interval '1 day'`, name); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, ServiceKeyChannel, name)
		return err
	})
	return at, classify(err)
}

// RetirePreviousServiceKeys deletes every previous bytes of the service key called name, so
// that tokens signed with them are refused at once (after a leak), and notifies every serve
// process on ServiceKeyChannel when it commits. It returns how many keys it retired.
func (db *AccountStore) RetirePreviousServiceKeys(ctx context.Context, name string) (int64, error) {
	var n int64
	err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM service_keys_previous WHERE name = $1`, name)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, ServiceKeyChannel, name)
		return err
	})
	return n, classify(err)
}
