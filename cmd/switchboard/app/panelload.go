package app

import (
	"context"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/persistence"
)

// reservePanel sizes the empty panel from PostgreSQL's estimate of the participants before
// supply loads it, so that the load of millions neither regrows the panel's columns nor
// rehashes its tables (docs/performance.md, "The packed panel"). Without an estimate the
// panel grows as rows come.
func reservePanel(ctx context.Context, db *persistence.DB, pl *engine.Panel, log *zap.Logger) {
	n, err := db.Participants.EstimateParticipants(ctx)
	if err != nil {
		log.Warn("participant estimate failed; panel grows as it loads", zap.Error(err))
		return
	}
	pl.Reserve(n)
}
