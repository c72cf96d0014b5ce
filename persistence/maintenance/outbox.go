package maintenance

import (
	"context"
	"fmt"

	"go.uber.org/zap"
)

// outboxPurgeBatch is how many delivered postbacks one short transaction of the sweeper
// deletes.
const outboxPurgeBatch = 5000

// purgeDeliveredOutbox deletes the postbacks and webhooks delivered longer ago than
// Config.OutboxRetention, in short transactions: at most 100 batches a sweep, the next
// sweep goes on.
func (f *Fleet) purgeDeliveredOutbox(ctx context.Context) error {
	var purged int64
	var failed error
	for range 100 {
		n, err := f.db.PurgeDeliveredOutbox(ctx, f.cfg.OutboxRetention, outboxPurgeBatch)
		purged += n
		if err != nil {
			failed = fmt.Errorf("purging delivered postbacks: %w", err)
			break
		}
		if n < outboxPurgeBatch {
			break
		}
	}
	if purged > 0 {
		f.log.Debug("delivered postbacks purged", zap.Int64("rows", purged), zap.Duration("older_than", f.cfg.OutboxRetention))
	}
	return failed
}
