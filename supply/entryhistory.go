package supply

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"
)

// entryHistory follows the campaigns whose entries the panel's start-up load left out
// (persistence.DB.LoadPanel: archived or reconciled campaigns no open one is related to).
// When one of them becomes related to a campaign that can still be offered, its entries are
// loaded into the panel then, so that the relationship blocks the respondents who entered
// it exactly as after a full load (docs/rules.md §5.5).
type entryHistory struct {
	mu      sync.Mutex
	leftOut map[int64]bool // campaigns some loaded participants lack the entries of
	pending map[int64]bool // changed campaigns to check (among leftOut)
	all     bool           // check every campaign of leftOut
	wake    chan struct{}  // capacity 1
}

// historyRetry is how long a failed check waits before it is tried again.
const historyRetry = time.Second

// leftOutAdd records the campaigns a load left out and asks for every one to be checked
// (a relationship may have been created while the load ran).
func (h *entryHistory) leftOutAdd(ids []int64) {
	h.mu.Lock()
	if h.leftOut == nil {
		h.leftOut = map[int64]bool{}
	}
	for _, id := range ids {
		h.leftOut[id] = true
	}
	h.all = true
	h.mu.Unlock()
	h.signal()
}

func (h *entryHistory) signal() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// campaignsChanged notes the changed campaigns the load left out for a check
// (API.CampaignsChanged).
func (pm *panelMirror) campaignsChanged(ids []int64) {
	h := &pm.hist
	h.mu.Lock()
	found := ids == nil && len(h.leftOut) > 0
	if ids == nil {
		h.all = found || h.all
	}
	for _, id := range ids {
		if h.leftOut[id] {
			if h.pending == nil {
				h.pending = map[int64]bool{}
			}
			h.pending[id], found = true, true
		}
	}
	h.mu.Unlock()
	if found {
		h.signal()
	}
}

// runEntryHistory loads the entries of left-out campaigns that became related to an open
// campaign, whenever a load or a change asks for a check.
func (pm *panelMirror) runEntryHistory(ctx context.Context) {
	h := &pm.hist
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.wake:
		}
		h.mu.Lock()
		var check []int64
		for id := range h.leftOut {
			if h.all || h.pending[id] {
				check = append(check, id)
			}
		}
		all := h.all
		h.all, h.pending = false, nil
		h.mu.Unlock()
		if len(check) == 0 {
			continue
		}
		if err := pm.loadLeftOut(ctx, check); err != nil {
			if errors.Is(err, context.Canceled) {
				return
			}
			pm.log.Warn("entry history of newly related campaigns not loaded; retrying", zap.Error(err))
			h.mu.Lock()
			h.all = h.all || all
			if !all {
				if h.pending == nil {
					h.pending = map[int64]bool{}
				}
				for _, id := range check {
					h.pending[id] = true
				}
			}
			h.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-time.After(historyRetry):
			}
			h.signal()
		}
	}
}

// loadLeftOut loads into the panel the entries of those of the given left-out campaigns
// that can block an offer now, and stops following them.
func (pm *panelMirror) loadLeftOut(ctx context.Context, check []int64) error {
	need, err := pm.participants.HistoryCampaigns(ctx, check)
	if err != nil || len(need) == 0 {
		return err
	}
	entries := newEntryBatch(pm.panel)
	n, err := pm.participants.LoadEntriesOf(ctx, need, entries.add)
	entries.flush()
	if err != nil {
		return err
	}
	h := &pm.hist
	h.mu.Lock()
	for _, id := range need {
		delete(h.leftOut, id)
	}
	h.mu.Unlock()
	pm.log.Info("entry history of newly related campaigns loaded", zap.Int("campaigns", len(need)), zap.Int64("entries", n))
	return nil
}
