package maintenance

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/persistence"
)

// pauseBrokenLinks system-pauses the campaigns whose link looks broken, looking at those
// whose entries this sweep released and at this sweep's slice of every active campaign
// (Config.BrokenLinkSlices, persistence.BrokenLinkScope).
func (f *Fleet) pauseBrokenLinks(ctx context.Context, released map[int64]struct{}, turn int64) error {
	scope := persistence.BrokenLinkScope{IDs: slices.Collect(maps.Keys(released))}
	if n := f.cfg.BrokenLinkSlices; n > 0 {
		scope.Slices, scope.Slice = n, int(turn%int64(n))
	}
	if len(scope.IDs) == 0 && scope.Slices == 0 {
		return nil
	}
	ids, err := f.db.PauseBrokenLinks(ctx, f.cfg.BrokenLinkEntries, scope)
	if err != nil {
		return fmt.Errorf("broken-link detection: %w", err)
	}
	for _, id := range ids {
		f.log.Warn("campaign system-paused: its link looks broken", zap.Int64("campaign", id))
	}
	return nil
}
