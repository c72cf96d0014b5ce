package maintenance

import (
	"context"
	"fmt"

	"go.uber.org/zap"
)

// completeFullCampaigns moves the active campaigns whose non-global quotas are all full to
// 3 Complete (those a callback's flush missed).
func (f *Fleet) completeFullCampaigns(ctx context.Context) error {
	ids, err := f.db.CompleteFullCampaigns(ctx, nil)
	if err != nil {
		return fmt.Errorf("completing full campaigns: %w", err)
	}
	for _, id := range ids {
		f.log.Info("campaign complete: every quota is full", zap.Int64("campaign", id))
	}
	return nil
}

// archiveStaleCampaigns moves the campaigns 3 Complete or 6 Reconciled for
// Config.ArchiveAfter to 4 Archived (docs/rules.md §4).
func (f *Fleet) archiveStaleCampaigns(ctx context.Context) error {
	ids, err := f.db.ArchiveStaleCampaigns(ctx, f.cfg.ArchiveAfter)
	if err != nil {
		return fmt.Errorf("archiving finished campaigns: %w", err)
	}
	for _, id := range ids {
		f.log.Info("campaign archived: complete or reconciled long enough",
			zap.Int64("campaign", id), zap.Duration("after", f.cfg.ArchiveAfter))
	}
	return nil
}
