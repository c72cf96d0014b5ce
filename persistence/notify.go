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
	for _, id := range ids {
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, CampaignChannel, strconv.FormatInt(id, 10)); err != nil {
			return err
		}
	}
	return nil
}
