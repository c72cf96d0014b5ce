package app

import (
	"context"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/engine"
)

// setAllocation selects the configured policy, or the split of policies when it has arms.
func setAllocation(e *engine.Engine, cfg *Config, panel *engine.Panel) {
	if cfg.AllocationSplit.Enabled() {
		e.SetAllocationSplit(cfg.AllocationSplit, panel)
		return
	}
	e.SetAllocation(cfg.Allocation, panel)
}

// weightedAllocation reports whether a policy in use ranks with weights that
// refreshAllocation must compute.
func (c *Config) weightedAllocation() bool {
	if !c.AllocationSplit.Enabled() {
		return c.Allocation.Weighted()
	}
	return slices.ContainsFunc(c.AllocationSplit.Policies(), engine.Allocation.Weighted)
}

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
