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
	// One epoch for the change, recorded on each campaign (CampaignsChangedSince), their rows
	// locked in id order (two changes of the same campaigns never deadlock); the CTE that
	// updates runs even when no campaign of ids exists any more.
	if _, err := tx.Exec(ctx, `WITH e AS MATERIALIZED (SELECT nextval('engine_epoch_seq') AS v),
		l AS (SELECT id FROM campaigns WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE),
		u AS (UPDATE campaigns c SET engine_epoch = (SELECT v FROM e) FROM l WHERE c.id = l.id)
		SELECT v FROM e`, ids); err != nil {
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
func (db *FeedStore) CampaignEpoch(ctx context.Context) (int64, error) {
	var n int64
	err := db.Pool.QueryRow(ctx, `SELECT last_value + CASE WHEN is_called THEN 1 ELSE 0 END FROM engine_epoch_seq`).Scan(&n)
	return n, classify(err)
}

// CampaignsChangedSince returns the ids of the campaigns that changed (NotifyCampaigns) at
// or after epoch, a reading of CampaignEpoch: what a process whose engine was current at
// that reading must re-read, whatever their status now.
func (db *FeedStore) CampaignsChangedSince(ctx context.Context, epoch int64) ([]int64, error) {
	rows, err := db.Pool.Query(ctx, `SELECT id FROM campaigns WHERE engine_epoch >= $1 ORDER BY id`, epoch)
	if err != nil {
		return nil, classify(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	return ids, classify(err)
}
