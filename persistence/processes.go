package persistence

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// ServeProcess is one serve process's heartbeat (0033_serve_processes.sql): where it
// listens, what it runs and what its engine snapshot holds, as of UpdatedAt.
type ServeProcess struct {
	ID        string
	Addr      string
	Version   string
	StartedAt time.Time
	// SnapshotAt is when the process's engine snapshot was last known equal to the
	// database (zero: not loaded yet).
	SnapshotAt   time.Time
	Campaigns    int
	Participants int
	UpdatedAt    time.Time // the last heartbeat, by the database's clock
}

// BeatProcess writes p's heartbeat: its row is created or replaced, updated_at is now().
// p.SnapshotAt is stored as the database's now() less its age by the process's clock, so
// that a host's clock skew does not show as snapshot age (p.UpdatedAt is ignored).
func (db *MaintenanceStore) BeatProcess(ctx context.Context, p ServeProcess) error {
	var snapAge *float64 // seconds
	if !p.SnapshotAt.IsZero() {
		age := max(time.Since(p.SnapshotAt).Seconds(), 0)
		snapAge = &age
	}
	_, err := db.Pool.Exec(ctx, `INSERT INTO serve_processes AS p (id, addr, version, started_at, snapshot_at, campaigns, participants, schema, updated_at)
		VALUES ($1, $2, $3, $4, now() - make_interval(secs => $5::float8), $6, $7, $8, now())
		ON CONFLICT (id) DO UPDATE SET addr = EXCLUDED.addr, version = EXCLUDED.version, started_at = EXCLUDED.started_at,
			snapshot_at = EXCLUDED.snapshot_at, campaigns = EXCLUDED.campaigns, participants = EXCLUDED.participants,
			schema = EXCLUDED.schema, updated_at = now()`,
		p.ID, p.Addr, p.Version, p.StartedAt, snapAge, p.Campaigns, p.Participants, binarySchema())
	return classify(err)
}

// binarySchema is the newest migration this binary embeds: what its heartbeat tells the
// other processes it knows (RetireSessionIndexes).
var binarySchema = sync.OnceValue(func() int {
	migs, err := Migrations()
	if err != nil || len(migs) == 0 {
		return 0
	}
	return migs[len(migs)-1].Version
})

// retiredSessionIndexes are the indexes of sessions this release never reads and the
// release before migration 0046 does: they name outcome or released_at, which kept every
// callback's update of its session from being HOT (migration 0046).
var retiredSessionIndexes = []string{"sessions_waiting", "sessions_campaign_complete"}

// retiredSince is the migration from which no binary reads retiredSessionIndexes.
const retiredSince = 46

// RetireSessionIndexes drops retiredSessionIndexes once no serve process of an earlier
// release is alive: none has a heartbeat within the last minute (the console's rule for a
// live process) without a schema, or with one below retiredSince. A binary of an earlier
// release cannot start once the database is migrated past it (SchemaNewerError), so from
// then on no process needs them. It reports whether it dropped any; it waits at most 1 s for
// its brief exclusive lock on sessions (a catalog change), and a timeout is an error the next
// sweep tries again: entries and callbacks queue behind a waiting lock, so it waits briefly
// and often rather than long once. Indexes already gone cost one catalog read.
func (db *MaintenanceStore) RetireSessionIndexes(ctx context.Context) (bool, error) {
	var present []string
	if err := db.Pool.QueryRow(ctx, `SELECT COALESCE(array_agg(n), '{}') FROM unnest($1::text[]) AS n WHERE to_regclass(n) IS NOT NULL`,
		retiredSessionIndexes).Scan(&present); err != nil {
		return false, classify(err)
	}
	if len(present) == 0 {
		return false, nil
	}
	var older bool
	if err := db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM serve_processes
		WHERE updated_at > now() - interval '1 minute' AND (schema IS NULL OR schema < $1))`, retiredSince).Scan(&older); err != nil {
		return false, classify(err)
	}
	if older {
		return false, nil
	}
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '1s'`); err != nil {
			return err
		}
		for _, name := range present {
			if _, err := tx.Exec(ctx, `DROP INDEX IF EXISTS `+pgx.Identifier{name}.Sanitize()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return false, classify(err)
	}
	return true, nil
}

// EndProcess deletes process id's heartbeat: it shut down cleanly.
func (db *MaintenanceStore) EndProcess(ctx context.Context, id string) error {
	_, err := db.Pool.Exec(ctx, `DELETE FROM serve_processes WHERE id = $1`, id)
	return classify(err)
}

// ServeProcesses lists every heartbeat, stale ones included (a reader does not delete
// them), oldest start first, with the database's now() to judge their age by one clock.
func (db *MaintenanceStore) ServeProcesses(ctx context.Context) ([]ServeProcess, time.Time, error) {
	var now time.Time
	if err := db.Pool.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
		return nil, now, classify(err)
	}
	rows, err := db.Pool.Query(ctx, `SELECT id, addr, version, started_at, snapshot_at, campaigns, participants, updated_at
		FROM serve_processes ORDER BY started_at, id`)
	if err != nil {
		return nil, now, classify(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ServeProcess, error) {
		var p ServeProcess
		var snap *time.Time
		err := r.Scan(&p.ID, &p.Addr, &p.Version, &p.StartedAt, &snap, &p.Campaigns, &p.Participants, &p.UpdatedAt)
		if snap != nil {
			p.SnapshotAt = snap.UTC()
		}
		p.StartedAt, p.UpdatedAt = p.StartedAt.UTC(), p.UpdatedAt.UTC()
		return p, err
	})
	return out, now.UTC(), classify(err)
}
