package persistence

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Postback listing statuses: which outbox rows ListPostbacks returns. Delivered rows, the
// bulk of the table, are not listed: only the two partial indexes over undelivered rows are
// read, so a listing never scans the outbox (which has no index by publisher).
const (
	PostbackStatusFailed  = "failed"  // failed at least once and not delivered: retrying or dead
	PostbackStatusDead    = "dead"    // dead-lettered after the retry window
	PostbackStatusPending = "pending" // neither delivered nor dead (retrying or not tried yet)
)

// PostbackStatuses are the statuses ListPostbacks accepts.
var PostbackStatuses = []string{PostbackStatusFailed, PostbackStatusDead, PostbackStatusPending}

// PostbackFilter selects outbox rows for ListPostbacks.
type PostbackFilter struct {
	PublisherID int64  // 0: every publisher (operators)
	Status      string // one of PostbackStatuses
	BeforeID    int64  // 0: from the newest; else rows with a smaller id (the next page)
	Limit       int    // rows at most (1..1000)
}

// PostbackDelivery is one outbox row as partners and operators see it: its delivery state
// and attempts, never its URL (the URL carries a signature).
type PostbackDelivery struct {
	ID            int64      `json:"id"`
	PublisherID   int64      `json:"publisher_id"`
	TID           string     `json:"tid"`
	Kind          string     `json:"kind"`
	Status        string     `json:"status"` // pending, retrying or dead
	Attempts      int        `json:"attempts"`
	LastError     *string    `json:"last_error"`
	CreatedAt     time.Time  `json:"created_at"`
	NextAttemptAt *time.Time `json:"next_attempt_at"` // nil once dead
	DeadAt        *time.Time `json:"dead_at"`
	RetriedAt     *time.Time `json:"retried_at"` // the last operator retry of a dead letter
}

// ListPostbacks returns the undelivered partner postbacks f selects, newest first (buyer
// webhooks share the table and are not listed).
func (db *DB) ListPostbacks(ctx context.Context, f PostbackFilter) ([]PostbackDelivery, error) {
	var where string
	switch f.Status {
	case PostbackStatusFailed:
		where = `(delivered_at IS NULL AND dead_at IS NULL AND last_error IS NOT NULL) OR dead_at IS NOT NULL`
	case PostbackStatusDead:
		where = `dead_at IS NOT NULL`
	case PostbackStatusPending:
		where = `delivered_at IS NULL AND dead_at IS NULL`
	default:
		return nil, fmt.Errorf("persistence: unknown postback status %q", f.Status)
	}
	limit := min(max(f.Limit, 1), 1000)
	rows, err := db.Pool.Query(ctx, `SELECT id, publisher_id, tid, kind,
			CASE WHEN dead_at IS NOT NULL THEN 'dead' WHEN last_error IS NOT NULL THEN 'retrying' ELSE 'pending' END,
			attempts, last_error, created_at,
			CASE WHEN dead_at IS NULL THEN next_attempt_at END, dead_at, retried_at
		FROM postback_outbox
		WHERE (`+where+`) AND publisher_id IS NOT NULL AND ($1 = 0 OR publisher_id = $1) AND ($2 = 0 OR id < $2)
		ORDER BY id DESC LIMIT $3`, f.PublisherID, f.BeforeID, limit)
	if err != nil {
		return nil, classify(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (PostbackDelivery, error) {
		var d PostbackDelivery
		err := r.Scan(&d.ID, &d.PublisherID, &d.TID, &d.Kind, &d.Status, &d.Attempts, &d.LastError, &d.CreatedAt,
			&d.NextAttemptAt, &d.DeadAt, &d.RetriedAt)
		return d, err
	})
	return out, classify(err)
}

// RetryPostbacks makes dead-lettered postbacks pending again, due now, with a fresh retry
// window from now (retried_at; created_at keeps the enqueue time), in one UPDATE, and wakes
// the workers. ids selects rows (empty: every dead row); publisherID > 0 restricts to one
// publisher. Rows not dead are left alone. It returns the ids made pending.
func (db *DB) RetryPostbacks(ctx context.Context, publisherID int64, ids []int64) ([]int64, error) {
	rows, err := db.Pool.Query(ctx, `WITH r AS (
			UPDATE postback_outbox SET dead_at = NULL, retried_at = now(), next_attempt_at = now()
			WHERE dead_at IS NOT NULL AND ($1 = 0 OR publisher_id = $1) AND (COALESCE(cardinality($2::bigint[]), 0) = 0 OR id = ANY($2))
			RETURNING id)
		SELECT id FROM r ORDER BY id`, publisherID, ids)
	if err != nil {
		return nil, classify(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, classify(err)
	}
	if len(out) > 0 {
		if _, err := db.Pool.Exec(ctx, `SELECT pg_notify($1, '')`, PostbackChannel); err != nil {
			return out, classify(err) // the workers' poll finds the rows all the same
		}
	}
	return out, nil
}
