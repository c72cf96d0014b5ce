package persistence

import (
	"context"
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
func (db *DB) BeatProcess(ctx context.Context, p ServeProcess) error {
	var snapAge *float64 // seconds
	if !p.SnapshotAt.IsZero() {
		age := max(time.Since(p.SnapshotAt).Seconds(), 0)
		snapAge = &age
	}
	_, err := db.Pool.Exec(ctx, `INSERT INTO serve_processes AS p (id, addr, version, started_at, snapshot_at, campaigns, participants, updated_at)
		VALUES ($1, $2, $3, $4, now() - make_interval(secs => $5::float8), $6, $7, now())
		ON CONFLICT (id) DO UPDATE SET addr = EXCLUDED.addr, version = EXCLUDED.version, started_at = EXCLUDED.started_at,
			snapshot_at = EXCLUDED.snapshot_at, campaigns = EXCLUDED.campaigns, participants = EXCLUDED.participants, updated_at = now()`,
		p.ID, p.Addr, p.Version, p.StartedAt, snapAge, p.Campaigns, p.Participants)
	return classify(err)
}

// EndProcess deletes process id's heartbeat: it shut down cleanly.
func (db *DB) EndProcess(ctx context.Context, id string) error {
	_, err := db.Pool.Exec(ctx, `DELETE FROM serve_processes WHERE id = $1`, id)
	return classify(err)
}

// ServeProcesses lists every heartbeat, stale ones included (a reader does not delete
// them), oldest start first, with the database's now() to judge their age by one clock.
func (db *DB) ServeProcesses(ctx context.Context) ([]ServeProcess, time.Time, error) {
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
