package persistence

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// Sessions are partitioned by ranges of id (migration 0036; docs/operations.md, "A year of
// sessions"). An id range is a period of time, since ids only grow: session_partitions
// records which. Partitions are created ahead of the id sequence by
// EnsureSessionPartitions, which every serve process's sweeper runs and
// `switchboard sessions partitions` runs by hand. An insert whose id has no partition fails,
// so the sweeper keeps PartitionPolicy.Ahead empty partitions above the sequence.

// SessionFloorSQL is an SQL expression for the lowest id a session entered after the time
// at (an SQL expression) can have: the start of the latest partition of sessions whose first
// session entered more than sessionIDLag before at. Ids only grow, and a session's id is
// drawn in the transaction that stores it, within seconds of its entered_at (that
// transaction's start); so every session entered after at has a greater id than that first
// one. Compared with a campaign's created_at (which never changes, and precedes every
// session of the campaign), it lets PostgreSQL skip at run time the partitions of the months
// before the campaign existed: a year of them, on every entry's reentry and relationship
// checks. A partition whose first entry is not recorded yet (EnsureSessionPartitions
// records it) lowers the floor, never raises it. Exported for the bench, which reads into
// memory the partitions that entries read.
func SessionFloorSQL(at string) string {
	return `(SELECT COALESCE(max(p.id_from), 0) FROM session_partitions p WHERE p.first_entered_at <= ` + at +
		` - interval '` + strconv.Itoa(int(sessionIDLag/time.Second)) + ` seconds')`
}

// sessionIDLag bounds how long before its entered_at a session's id may have been drawn
// (an admitting transaction lasts seconds; this leaves room for an hour).
const sessionIDLag = time.Hour

// PartitionPolicy sizes the partitions of sessions.
type PartitionPolicy struct {
	// Period is the time one partition should hold at the current entry rate (default 30
	// days: about a dozen partitions a year).
	Period time.Duration
	// Ahead is how many empty partitions are kept above the sequence (default 2).
	Ahead int
	// MinIDs is the fewest ids a new partition spans (default 2^20, a tid block), also its
	// size while the rate is unknown. A partition of a block or more ends where a block
	// ends (migration 0043), so that a tid's lookup reads one partition.
	MinIDs int64
}

func (p PartitionPolicy) withDefaults() PartitionPolicy {
	if p.Period <= 0 {
		p.Period = 30 * 24 * time.Hour
	}
	if p.Ahead <= 0 {
		p.Ahead = 2
	}
	if p.MinIDs <= 0 {
		p.MinIDs = 1 << tidBlockBits
	}
	return p
}

// EnsureSessionPartitions creates the partitions of sessions that p asks for above the id
// sequence and records the entered_at range of each. It returns the partitions it created.
// It waits at most 5 s for its brief lock on sessions (attaching a partition: reads and
// writes go on); a timeout is an error and the next run tries again. Processes take turns.
func (db *MaintenanceStore) EnsureSessionPartitions(ctx context.Context, p PartitionPolicy) ([]string, error) {
	p = p.withDefaults()
	var created []string
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '5s'`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT switchboard_ensure_session_partitions($1::interval, $2, $3)`,
			p.Period, int32(p.Ahead), p.MinIDs)
		if err != nil {
			return err
		}
		created, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return nil, classify(err)
	}
	return created, nil
}

// SessionPartition is one partition of sessions: the ids it holds, [IDFrom, IDTo), and the
// entered_at of the lowest and highest of them (zero while it is empty).
type SessionPartition struct {
	Name           string
	IDFrom, IDTo   int64
	CreatedAt      time.Time
	FirstEnteredAt time.Time
	LastEnteredAt  time.Time
	// Rows is the planner's estimate of its rows (pg_class.reltuples; -1: never analyzed).
	Rows int64
	// Bytes is its size with its indexes.
	Bytes int64
}

// SessionPartitions lists the partitions of sessions in id order, as last recorded by
// EnsureSessionPartitions.
func (db *MaintenanceStore) SessionPartitions(ctx context.Context) ([]SessionPartition, error) {
	rows, err := db.Pool.Query(ctx, `SELECT p.name, p.id_from, p.id_to, p.created_at,
		coalesce(p.first_entered_at, 'epoch'), coalesce(p.last_entered_at, 'epoch'),
		coalesce(c.reltuples, -1)::bigint, coalesce(pg_total_relation_size(c.oid), 0)
		FROM session_partitions p LEFT JOIN pg_class c ON c.oid = to_regclass(p.name)
		ORDER BY p.id_from`)
	if err != nil {
		return nil, classify(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (SessionPartition, error) {
		var s SessionPartition
		err := row.Scan(&s.Name, &s.IDFrom, &s.IDTo, &s.CreatedAt, &s.FirstEnteredAt, &s.LastEnteredAt, &s.Rows, &s.Bytes)
		if s.FirstEnteredAt.Equal(time.Unix(0, 0)) {
			s.FirstEnteredAt = time.Time{}
		}
		if s.LastEnteredAt.Equal(time.Unix(0, 0)) {
			s.LastEnteredAt = time.Time{}
		}
		return s, err
	})
	return out, classify(err)
}

// PurgeDeliveredOutbox deletes at most batch postbacks and webhooks of the outbox that were
// delivered before now - keep, oldest first, and returns how many it deleted: retention of
// a table that otherwise grows by a row per callback. Undelivered and dead rows are never
// deleted. A caller loops while it returns batch; each batch is one short transaction. A
// purged row's (tid, kind) no longer deduplicates an enqueue of the same key, so keep must
// be longer than the callback window of sessions (router's SessionMaxAge, 7 days).
func (db *MaintenanceStore) PurgeDeliveredOutbox(ctx context.Context, keep time.Duration, batch int) (int64, error) {
	tag, err := db.Pool.Exec(ctx, `DELETE FROM postback_outbox WHERE id IN (
		SELECT id FROM postback_outbox WHERE delivered_at IS NOT NULL AND delivered_at < now() - $1::interval
		ORDER BY delivered_at LIMIT $2)`, keep, batch)
	if err != nil {
		return 0, classify(err)
	}
	return tag.RowsAffected(), nil
}
