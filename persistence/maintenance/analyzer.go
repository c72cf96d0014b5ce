package maintenance

import (
	"context"

	"go.uber.org/zap"
)

// runAnalyzer refreshes the planner statistics of the routing tables that have about
// doubled since their last ANALYZE, every AnalyzeEvery: the sweeper's period (30 s) let a
// fresh database run its first tens of thousands of entries and callbacks on plans made
// when sessions was empty (a whole partition read per callback batch: 1.3 ms of
// PostgreSQL per callback instead of 0.14). The check is one catalog query; processes
// sharing the database take turns.
func (f *Fleet) runAnalyzer(ctx context.Context) {
	f.every(ctx, f.cfg.AnalyzeEvery, "planner statistics", func(ctx context.Context) error {
		tables, err := f.db.AnalyzeGrowingTables(ctx)
		if err == nil && len(tables) > 0 {
			f.log.Debug("analyzed growing tables", zap.Strings("tables", tables))
		}
		return err
	})
}
