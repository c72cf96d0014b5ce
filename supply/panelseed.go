package supply

import (
	"context"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/persistence"
)

// PanelSeed says that the panel was restored from a process snapshot consistent at a
// database position: the panel's first load then reads only what changed since (the
// participants a later transaction wrote, the entries of later sessions) instead of every
// participant active within PanelWindow.
type PanelSeed struct {
	XID       uint64 // persistence.ChangePosition.XID of the snapshot
	SessionID int64  // persistence.ChangePosition.SessionID of the snapshot
	// LeftOut are the campaigns whose entries the snapshot's history leaves out, followed
	// as after a load of the database (entryhistory.go).
	LeftOut []int64
	// Heard, when set, is closed once the process hears of other processes' entries
	// (router.Router.EntriesHeard): the catch-up reads the entries committed until then
	// only after it, so that none falls between the two.
	Heard <-chan struct{}
}

// catchUpBatch is how many changed participants one statement of the catch-up reads.
const catchUpBatch = 10_000

// catchUp reads what changed since the seed's position into the panel.
func (pm *panelMirror) catchUp(ctx context.Context, seed *PanelSeed) error {
	started := time.Now()
	n, err := pm.feed.ParticipantsChangedAt(ctx, seed.XID, catchUpBatch, func(p persistence.PanelParticipant) error {
		return pm.upsert(p)
	})
	if err != nil {
		return err
	}
	if seed.Heard != nil {
		select {
		case <-seed.Heard:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	entries := newEntryBatch(pm.panel)
	k, err := pm.feed.EntriesAfter(ctx, seed.SessionID, entries.add)
	entries.flush()
	if err != nil {
		return err
	}
	pm.hist.leftOutAdd(seed.LeftOut)
	pm.log.Info("panel caught up from its snapshot", zap.Int64("participants_changed", n), zap.Int64("entries", k),
		zap.Int("participants", pm.panel.Len()), zap.Duration("took", time.Since(started)))
	return nil
}

// leftOut returns the campaigns whose entries the panel's history leaves out, sorted
// (API.LeftOut).
func (pm *panelMirror) leftOut() []int64 {
	h := &pm.hist
	h.mu.Lock()
	ids := make([]int64, 0, len(h.leftOut))
	for id := range h.leftOut {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	slices.Sort(ids)
	return ids
}
