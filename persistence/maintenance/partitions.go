package maintenance

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// ensureSessionPartitions creates the partitions of sessions due ahead of the id sequence
// (Config.Partitions), at most once every Config.PartitionEvery.
func (f *Fleet) ensureSessionPartitions(ctx context.Context) error {
	if time.Since(time.Unix(0, f.partitionsAt.Load())) < f.cfg.PartitionEvery {
		return nil
	}
	made, err := f.db.EnsureSessionPartitions(ctx, f.cfg.Partitions)
	if err != nil {
		return fmt.Errorf("creating partitions of sessions: %w", err)
	}
	f.partitionsAt.Store(time.Now().UnixNano())
	if len(made) > 0 {
		f.log.Info("partitions of sessions created ahead of the id sequence", zap.Strings("partitions", made))
	}
	return nil
}
