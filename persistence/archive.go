package persistence

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// ArchiveStaleCampaigns moves to 4 Archived every campaign that has been 3 Complete or
// 6 Reconciled for at least after (CONTRACT §4: after 90 days), and announces them. It
// returns the ids it moved. The update is conditional on the status, so running it again, or
// in several processes at once, moves each campaign once.
func (db *DB) ArchiveStaleCampaigns(ctx context.Context, after time.Duration) ([]int64, error) {
	var out []int64
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE campaigns SET status = $1, status_changed_at = now(), updated_at = now()
			WHERE status IN ($2, $3) AND status_changed_at <= now() - $4::interval
			RETURNING id`, StatusArchived, StatusComplete, StatusReconciled, after)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		return NotifyCampaigns(ctx, tx, out...)
	})
	return out, err
}
