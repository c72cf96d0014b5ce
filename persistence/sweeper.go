package persistence

import (
	"context"
	"time"
)

// ArchiveStaleCampaigns moves to 4 Archived every campaign that has been 3 Complete or
// 6 Reconciled for at least after (CONTRACT §4: after 90 days), and announces them. It
// returns the ids it moved. The update is conditional on the status, so running it again, or
// in several processes at once, moves each campaign once.
func (db *DB) ArchiveStaleCampaigns(ctx context.Context, after time.Duration) ([]int64, error) {
	return db.moveCampaigns(ctx, `UPDATE campaigns SET status = $1, status_changed_at = now(), updated_at = now()
		WHERE status IN ($2, $3) AND status_changed_at <= now() - $4::interval
		RETURNING id`, StatusArchived, StatusComplete, StatusReconciled, after)
}
