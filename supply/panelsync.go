package supply

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/identity"
	"github.com/switchboard/switchboard/internal/mirror"
	"github.com/switchboard/switchboard/persistence"
)

// panelStore is the participant storage of the panel mirror and of impanel: a subset of
// persistence's ParticipantStore.
type panelStore interface {
	ImpanelParticipant(ctx context.Context, in persistence.Impanel, origin string, first func() error) (persistence.PanelParticipant, error)
	ParticipantByID(ctx context.Context, id int64) (persistence.PanelParticipant, error)
	ParticipantByUser(ctx context.Context, publisherID int64, user string) (persistence.PanelParticipant, error)
	ParticipantEntries(ctx context.Context, id int64) ([]engine.Entry, error)
	LoadPanel(ctx context.Context, since time.Time, fn func(p persistence.PanelParticipant) error,
		entry func(participantID, campaignID, at int64)) (persistence.EntryHistoryStats, error)
	HistoryCampaigns(ctx context.Context, among []int64) ([]int64, error)
	LoadEntriesOf(ctx context.Context, campaignIDs []int64, entry func(participantID, campaignID, at int64)) (int64, error)
	TouchParticipants(ctx context.Context, ids, at []int64) error
}

// feed is the change feed the panel mirror follows: a subset of persistence's FeedStore.
type feed interface {
	ListenOn(ctx context.Context, channel string) (*persistence.Listener, error)
	ParticipantsChangedAt(ctx context.Context, xid uint64, batch int, fn func(p persistence.PanelParticipant) error) (int64, error)
	EntriesAfter(ctx context.Context, sessionID int64, entry func(participantID, campaignID, at int64)) (int64, error)
}

// panelMirror keeps the engine's panel equal to the database: the participants and their
// entry history (entryhistory.go, panelseed.go), the misses of GET /campaigns looked up, and
// the panel's activity written back.
type panelMirror struct {
	participants panelStore
	feed         feed
	panel        *engine.Panel
	log          *zap.Logger
	now          func() int64
	origin       string        // names this process in participant notifications
	window       time.Duration // Config.PanelWindow

	loaded   chan struct{} // closed after the first panel load
	loadOnce sync.Once
	hist     entryHistory   // campaigns whose entries the panel load left out (entryhistory.go)
	seed     *PanelSeed     // the panel's snapshot, until caught up (panelseed.go)
	misses   chan panelMiss // panel misses on GET /campaigns to look up
	missMu   sync.Mutex
	missSeen map[panelMiss]int64 // recent lookups, unix seconds
}

// panelMiss is a (publisher, user) GET /campaigns did not find in the panel.
type panelMiss struct {
	publisher int64
	user      string
}

// missRetry is how long a looked-up miss is not looked up again.
const missRetry = 30

// runPanelSync keeps the panel equal to the database: the participants active within
// PanelWindow at start, then those other processes announce on ParticipantChannel, and after
// a lost LISTEN connection those active since shortly before it was lost. Panel misses of
// GET /campaigns (participants inactive for longer than the window) are looked up too.
func (pm *panelMirror) runPanelSync(ctx context.Context) {
	go pm.lookupMisses(ctx)
	since := time.Unix(pm.now(), 0).Add(-pm.window)
	mirror.Run(ctx, mirror.Config[int64]{
		Name:   "panel",
		Log:    pm.log,
		Listen: mirror.Listener(pm.feed.ListenOn, persistence.ParticipantChannel),
		Notified: func(payload string, add func(int64)) {
			if id, origin, ok := persistence.ParseParticipantNotice(payload); ok && origin != pm.origin {
				add(id)
			}
		},
		Reload: pm.loadNotices,
		// Also runs after every reconnect: reload what the lost notices would have named.
		Full: func(ctx context.Context) error {
			started := time.Now()
			if pm.seed != nil {
				if err := pm.catchUp(ctx, pm.seed); err != nil {
					return err
				}
				pm.seed = nil
				since = started.Add(-time.Minute)
				pm.loadOnce.Do(func() { close(pm.loaded) })
				return nil
			}
			n, err := pm.loadActive(ctx, since)
			if err != nil {
				return err
			}
			pm.log.Info("panel loaded", zap.Int("participants", n), zap.Time("active_since", since),
				zap.Duration("took", time.Since(started)))
			since = started.Add(-time.Minute)
			pm.loadOnce.Do(func() { close(pm.loaded) })
			return nil
		},
	})
}

func (pm *panelMirror) upsert(p persistence.PanelParticipant) error {
	return pm.panel.Put(p.PublisherID, p.User, p.Participant, p.LastActive)
}

// loadActive loads the participants active since `since` and their entry history. Panel.Put
// is safe for concurrent use, so every stream of the load stores its rows without waiting
// for the others; the entry rows are recorded in batches (entryBatch).
func (pm *panelMirror) loadActive(ctx context.Context, since time.Time) (int, error) {
	var n atomic.Int64
	entries := newEntryBatch(pm.panel)
	st, err := pm.participants.LoadPanel(ctx, since, func(p persistence.PanelParticipant) error {
		n.Add(1)
		return pm.upsert(p)
	}, entries.add)
	entries.flush() // what was read is recorded, even after a failure (as row by row)
	if err == nil {
		pm.hist.leftOutAdd(st.LeftOut)
	}
	return int(n.Load()), err
}

// place puts a participant read from the database into the panel, then reads its entries
// again: an entry committed after the first read, whose notice this process heard before
// the participant was in its panel (Panel.RecordEntry ignores unknown participants), is
// committed before the second read begins, so the second read holds it; a later one's
// notice finds the participant. A participant the panel refuses is logged and skipped.
func (pm *panelMirror) place(ctx context.Context, p persistence.PanelParticipant) error {
	if err := pm.upsert(p); err != nil {
		pm.log.Warn("participant not placed in the panel", zap.Int64("participant", p.ID), zap.Error(err))
		return nil
	}
	es, err := pm.participants.ParticipantEntries(ctx, p.ID)
	if err != nil {
		return err
	}
	for _, e := range es {
		pm.panel.RecordEntry(p.ID, e.CampaignID, e.At)
	}
	return nil
}

// loadNotices loads the participants other processes announced. A database failure leaves
// them all to the mirror's retry (loading one twice is harmless).
func (pm *panelMirror) loadNotices(ctx context.Context, ids []int64) error {
	for _, id := range ids {
		p, err := pm.participants.ParticipantByID(ctx, id)
		if err == nil {
			err = pm.place(ctx, p)
		}
		switch {
		case err == nil:
		case fault.KindOf(err) == fault.KindNotFound:
		default:
			return err
		}
	}
	return nil
}

// noteMiss queues a panel miss for lookup, at most once per missRetry seconds per user. It
// never blocks: a full queue drops the miss (the next request notes it again).
func (pm *panelMirror) noteMiss(publisher int64, user []byte) {
	now := pm.now()
	pm.missMu.Lock()
	if at, ok := pm.missSeen[panelMiss{publisher, identity.View(user)}]; ok && now-at < missRetry {
		pm.missMu.Unlock()
		return
	}
	if len(pm.missSeen) >= 100_000 {
		for k, at := range pm.missSeen {
			if now-at >= missRetry {
				delete(pm.missSeen, k)
			}
		}
	}
	m := panelMiss{publisher, string(user)}
	pm.missSeen[m] = now
	pm.missMu.Unlock()
	select {
	case pm.misses <- m:
	default:
	}
}

func (pm *panelMirror) lookupMisses(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-pm.misses:
			p, err := pm.participants.ParticipantByUser(ctx, m.publisher, m.user)
			if err == nil {
				err = pm.place(ctx, p)
			}
			switch {
			case err == nil:
			case fault.KindOf(err) == fault.KindNotFound, errors.Is(err, context.Canceled):
			default:
				pm.log.Debug("panel miss lookup failed", zap.Error(err))
			}
		}
	}
}

// flushActivity writes the activity the panel saw since `since` back to last_active_at, so
// that a restart loads the participants that were active. It returns the new mark (since
// itself when a write failed).
func (pm *panelMirror) flushActivity(ctx context.Context, since int64) (int64, error) {
	mark := pm.now()
	var ids, ats []int64
	var err error
	flush := func() bool {
		if err = pm.participants.TouchParticipants(ctx, ids, ats); err != nil {
			return false
		}
		ids, ats = ids[:0], ats[:0]
		return true
	}
	ok := true
	pm.panel.RangeActivity(func(id int64, act engine.Activity) bool {
		if act.LastActive > since {
			ids = append(ids, id)
			ats = append(ats, act.LastActive)
			if len(ids) == 10_000 {
				ok = flush()
			}
		}
		return ok
	})
	if ok && flush() {
		return mark, nil
	}
	return since, err
}
