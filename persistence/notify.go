package persistence

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// CampaignChannel is the NOTIFY channel that tells every serve process a campaign changed;
// the payload is the campaign id.
const CampaignChannel = "switchboard_campaign"

// NotifyCampaigns queues a NOTIFY for each id inside tx, so that listeners hear of the change
// exactly when it commits and never for a write that rolled back.
func NotifyCampaigns(ctx context.Context, tx pgx.Tx, ids ...int64) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `SELECT nextval('engine_epoch_seq')`); err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, CampaignChannel, strconv.FormatInt(id, 10)); err != nil {
			return err
		}
	}
	return nil
}

// CampaignEpoch reads the counter every campaign change advances (see NotifyCampaigns): equal
// readings mean no campaign changed in between.
func (db *DB) CampaignEpoch(ctx context.Context) (int64, error) {
	var n int64
	err := db.Pool.QueryRow(ctx, `SELECT last_value + CASE WHEN is_called THEN 1 ELSE 0 END FROM engine_epoch_seq`).Scan(&n)
	return n, classify(err)
}
