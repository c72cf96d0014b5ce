package app

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/engine"
)

// refreshAllocation recomputes the balanced allocation's weights (panel supply, pacing,
// exploration) now and then every `every` until ctx ends, so matching never computes them
// on the request path (docs/allocation.md). first runs after the first refresh.
func refreshAllocation(ctx context.Context, eng *engine.Engine, every time.Duration, log *zap.Logger, first func()) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		start := time.Now()
		eng.RefreshAllocation(start.Unix())
		log.Debug("allocation weights refreshed", zap.Duration("took", time.Since(start)),
			zap.Int("campaigns", eng.Snapshot().Len()))
		if first != nil {
			first()
			first = nil
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
