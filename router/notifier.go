package router

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/internal/retry"
)

// countsAnnouncer is how this process tells the others what it changed: NOTIFY on the
// counts and entries channels.
type countsAnnouncer interface {
	NotifyEntries(ctx context.Context, origin string, items []string) error
	NotifyCounts(ctx context.Context, ids []int64) error
	NotifyQuotaCounts(ctx context.Context, ids []int64) error
}

// campaignCompleter moves campaigns whose quotas are all full to 3 Complete.
type campaignCompleter interface {
	CompleteFullCampaigns(ctx context.Context, ids []int64) ([]int64, error)
}

// notifier debounces what this process tells the others: campaign ids whose counts changed
// (CountsChannel) and admitted entries (EntriesChannel), one NOTIFY each per period.
type notifier struct {
	db        countsAnnouncer
	completer campaignCompleter
	origin    string
	every     time.Duration
	log       *zap.Logger

	mu      sync.Mutex
	camps   map[int64]struct{}
	quotas  map[int64]struct{} // campaigns of which only the quota counts changed (entries)
	full    map[int64]struct{} // campaigns that got a complete: are all their quotas full?
	entries []string
	kick    chan struct{}

	// outage backs the flush off while the database is away and logs once per state
	// change; only run's goroutine touches it.
	outage *retry.Outage
}

func newNotifier(db countsAnnouncer, completer campaignCompleter, origin string, every time.Duration, log *zap.Logger) *notifier {
	return &notifier{db: db, completer: completer, origin: origin, every: every, log: log, camps: map[int64]struct{}{}, quotas: map[int64]struct{}{}, full: map[int64]struct{}{}, kick: make(chan struct{}, 1),
		outage: retry.NewOutage(log, "counts flush", retry.Default, nil)}
}

func (n *notifier) counts(campaignID int64) {
	n.mu.Lock()
	n.camps[campaignID] = struct{}{}
	n.mu.Unlock()
}

// quotaCounts announces an admitted entry's campaign: only its quota counts changed.
func (n *notifier) quotaCounts(campaignID int64) {
	n.mu.Lock()
	n.quotas[campaignID] = struct{}{}
	n.mu.Unlock()
}

// completed asks for a check whether the campaign's non-global quotas are all full now (it
// then becomes 3 Complete). The database decides, at the next flush.
func (n *notifier) completed(campaignID int64) {
	n.mu.Lock()
	n.full[campaignID] = struct{}{}
	n.mu.Unlock()
}

func (n *notifier) entry(participantID, campaignID, at int64) {
	item := strconv.FormatInt(participantID, 10) + ":" + strconv.FormatInt(campaignID, 10) + ":" + strconv.FormatInt(at, 10)
	n.mu.Lock()
	if len(n.entries) < 100_000 {
		n.entries = append(n.entries, item)
	}
	n.mu.Unlock()
}

func (n *notifier) run(ctx context.Context) {
	t := time.NewTicker(n.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			n.flush(context.Background())
			return
		case <-t.C:
			// After a failure the next flush waits for its backoff; what is pending meanwhile
			// stays queued (entries up to their cap).
			if n.outage.Due() {
				n.flush(ctx)
			}
		}
	}
}

// flush sends what is pending. Failures are reported to n.outage, which logs the first of an
// outage and its end: once per state change, not once per flush.
func (n *notifier) flush(ctx context.Context) {
	n.mu.Lock()
	if len(n.camps) == 0 && len(n.quotas) == 0 && len(n.entries) == 0 && len(n.full) == 0 {
		n.mu.Unlock()
		return
	}
	var full []int64
	for id := range n.full {
		full = append(full, id)
	}
	clear(n.full)
	ids := make([]int64, 0, len(n.camps))
	for id := range n.camps {
		ids = append(ids, id)
	}
	quotas := make([]int64, 0, len(n.quotas))
	for id := range n.quotas {
		if _, whole := n.camps[id]; !whole {
			quotas = append(quotas, id)
		}
	}
	clear(n.camps)
	clear(n.quotas)
	entries := n.entries
	n.entries = nil
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var failed error
	// Entries that fail are dropped: other processes learn them when they reload.
	if err := n.db.NotifyEntries(ctx, n.origin, entries); err != nil {
		failed = err
	}
	// Counts that fail are left to reconciliation, which catches up.
	if err := n.db.NotifyCounts(ctx, ids); err != nil && failed == nil {
		failed = err
	}
	if err := n.db.NotifyQuotaCounts(ctx, quotas); err != nil && failed == nil {
		failed = err
	}
	if len(full) > 0 {
		done, err := n.completer.CompleteFullCampaigns(ctx, full)
		if err != nil {
			// A lock conflict with concurrent callbacks must not leave a full campaign
			// active until the sweeper: retry with a later flush.
			if failed == nil {
				failed = err
			}
			n.mu.Lock()
			for _, id := range full {
				n.full[id] = struct{}{}
			}
			n.mu.Unlock()
		}
		for _, id := range done {
			n.log.Info("campaign complete: every quota is full", zap.Int64("campaign", id))
		}
	}
	switch {
	case failed == nil:
		n.outage.Succeeded()
	case !errors.Is(ctx.Err(), context.Canceled): // not shutting down
		n.outage.Failed(failed)
	}
}
