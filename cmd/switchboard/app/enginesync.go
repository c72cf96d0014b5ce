package app

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/admin"
	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/internal/mirror"
	"github.com/switchboard/switchboard/persistence"
)

// engineSync keeps this process's engine snapshot equal to the database: a full load when the
// LISTEN connection is (re)established, the campaigns that NOTIFY names in small batches, and
// every RebuildEvery a safety check that re-reads the campaigns changed since the last one.
type engineSync struct {
	db     *persistence.DB
	eng    *engine.Engine
	log    *zap.Logger
	every  time.Duration
	loaded chan struct{} // closed after the first full load
	once   sync.Once
	// epoch is the campaign epoch the snapshot is known current at: read before the last
	// full load or safety check (-1: unknown).
	epoch atomic.Int64
	// fullAt is when the last full load started (unix nanoseconds).
	fullAt atomic.Int64
	// changed, once set, hears of every applied change: the ids, or nil after a full load.
	changed atomic.Pointer[func(ids []int64)]
	// current is when the snapshot was last known equal to the database (unix nanoseconds,
	// 0: never): a full load, an applied NOTIFY, or a periodic check that found no change.
	current atomic.Int64
	// seed, until the first full load has used it, is the engine input of a snapshot: that
	// load takes it and re-reads only the campaigns changed since its position.
	seed *engineSeed
	// phases, when set, hears of the first load (startphases.go).
	phases *startPhases
}

// engineSeed is the engine input a process snapshot carried, and its position.
type engineSeed struct {
	campaigns []engine.Campaign
	xid       uint64
}

func newEngineSync(db *persistence.DB, eng *engine.Engine, log *zap.Logger, every time.Duration) *engineSync {
	return &engineSync{db: db, eng: eng, log: log, every: every, loaded: make(chan struct{})}
}

// run listens and applies changes until ctx ends.
func (s *engineSync) run(ctx context.Context) {
	mirror.Run(ctx, mirror.Config[int64]{
		Name:     "engine",
		Log:      s.log,
		Listen:   mirror.Listener(s.db.Feed.ListenOn, persistence.CampaignChannel),
		Notified: mirror.IDs,
		Reload:   s.apply,
		Full:     s.full,
		Every:    s.every,
		Safety:   s.safetyRebuild,
	})
}

// full rebuilds the snapshot from every active campaign. On failure it keeps the last
// snapshot: serving stale offers beats serving none while the database is away.
func (s *engineSync) full(ctx context.Context) error {
	start := time.Now()
	// Read before loading: a change committed during the load advances the epoch past it.
	epoch, epochErr := s.db.Feed.CampaignEpoch(ctx)
	if s.seed != nil {
		return s.fromSeed(ctx, start, epoch, epochErr)
	}
	cs, err := s.db.Feed.EngineCampaigns(ctx, nil)
	if err != nil {
		return err
	}
	read := time.Since(start)
	s.eng.Load(cs)
	s.current.Store(start.UnixNano()) // changes committed during the load are NOTIFYed
	s.fullAt.Store(start.UnixNano())
	if epochErr == nil {
		s.epoch.Store(epoch)
	} else {
		s.epoch.Store(-1)
	}
	if f := s.changed.Load(); f != nil {
		(*f)(nil)
	}
	s.log.Debug("engine loaded", zap.Int("campaigns", len(cs)), zap.Duration("took", time.Since(start)))
	s.once.Do(func() {
		if s.phases != nil {
			s.phases.since("engine", start, 0, int64(len(cs)), zap.Duration("read", read.Round(time.Millisecond)))
		}
		close(s.loaded)
	})
	return nil
}

// fromSeed is the first full load of a process started from a snapshot: the snapshot's
// campaigns, then those changed since its position as if notified. The epoch was read before.
func (s *engineSync) fromSeed(ctx context.Context, start time.Time, epoch int64, epochErr error) error {
	ids, err := s.db.Feed.CampaignsChangedAt(ctx, s.seed.xid)
	if err != nil {
		return err
	}
	s.eng.Load(s.seed.campaigns)
	n := len(s.seed.campaigns)
	s.seed = nil
	s.fullAt.Store(start.UnixNano())
	s.epoch.Store(-1)
	if epochErr == nil {
		s.epoch.Store(epoch)
	}
	if err := s.apply(ctx, ids); err != nil {
		// The next attempt is a full load from the database: the snapshot's input is gone.
		return err
	}
	if f := s.changed.Load(); f != nil {
		(*f)(nil)
	}
	s.once.Do(func() {
		if s.phases != nil {
			s.phases.since("engine", start, 0, int64(n), zap.Int("changed_since", len(ids)))
		}
		close(s.loaded)
	})
	return nil
}

// fullEvery is how often at least the safety check is a full load (when any campaign
// changed): the net under a change that reached the database without NotifyCampaigns.
const fullEvery = 30 * time.Minute

// safetyRebuild is the periodic safety check. When no campaign changed since the last look
// it does nothing; else it re-reads the campaigns changed since (their engine_epoch), as a
// notification would have. A full load, at 100k campaigns seconds of CPU and a second index
// in memory for a moment, is left for a reconnect, an unknown epoch, a change of more than
// an eighth of the market, and fullEvery.
func (s *engineSync) safetyRebuild(ctx context.Context) error {
	checked := time.Now()
	epoch, err := s.db.Feed.CampaignEpoch(ctx)
	if err != nil {
		return err
	}
	last := s.epoch.Load()
	if epoch == last {
		s.current.Store(checked.UnixNano())
		return nil
	}
	if last < 0 || checked.Sub(time.Unix(0, s.fullAt.Load())) >= fullEvery {
		return s.full(ctx)
	}
	ids, err := s.db.Feed.CampaignsChangedSince(ctx, last)
	if err != nil {
		return err
	}
	if len(ids) > s.eng.Snapshot().Len()/8+64 {
		return s.full(ctx)
	}
	if err := s.apply(ctx, ids); err != nil {
		return err
	}
	s.epoch.Store(epoch)
	s.current.Store(checked.UnixNano())
	return nil
}

// apply loads the campaigns that notifications named (those no longer active leave the
// snapshot). On failure the mirror keeps the ids and retries.
func (s *engineSync) apply(ctx context.Context, ids []int64) error {
	cs, err := s.db.Feed.EngineCampaigns(ctx, ids)
	if err != nil {
		return err
	}
	active := cs[:0]
	seen := make(map[int64]bool, len(cs))
	for _, c := range cs {
		if c.Status == engine.StatusActive {
			active = append(active, c)
			seen[c.ID] = true
		}
	}
	var removed []int64
	for _, id := range ids {
		if !seen[id] {
			removed = append(removed, id)
		}
	}
	s.eng.Apply(active, removed)
	s.current.Store(time.Now().UnixNano())
	if f := s.changed.Load(); f != nil {
		(*f)(ids)
	}
	return nil
}

// registerEngineMetrics adds the engine's families: the campaigns this process matches
// against, the participants its panel holds and how stale its snapshot may be. A snapshot age that keeps growing past the
// rebuild period (60 s) says the process no longer hears from the database.
func (a *App) registerEngineMetrics() {
	a.started = time.Now()
	a.Metrics.Gauge("switchboard_engine_campaigns", "gauge", "Active campaigns in this process's engine snapshot.",
		func() []httpio.Sample { return []httpio.Sample{{Value: float64(a.Engine.Snapshot().Len())}} })
	a.Metrics.Gauge("switchboard_panel_participants", "gauge", "Participants in this process's in-memory panel.",
		func() []httpio.Sample {
			if a.Panel == nil { // before the panel exists
				return []httpio.Sample{{Value: 0}}
			}
			return []httpio.Sample{{Value: float64(a.Panel.Len())}}
		})
	a.Metrics.Gauge("switchboard_engine_snapshot_age_seconds", "gauge",
		"Seconds since the engine snapshot was last known equal to the database (a load, a NOTIFY, or a periodic check); since start before the first load.",
		func() []httpio.Sample { return []httpio.Sample{{Value: time.Since(a.snapshotAt()).Seconds()}} })
}

// engineStatus is this process's engine as the console's operator view shows it: the
// snapshot age of the switchboard_engine_snapshot_age_seconds gauge, campaigns, participants.
func (a *App) engineStatus() admin.EngineStatus {
	st := admin.EngineStatus{ProcessID: a.processID, SnapshotAge: time.Since(a.snapshotAt()).Round(time.Millisecond), Campaigns: a.Engine.Snapshot().Len()}
	if a.Panel != nil {
		st.Participants = a.Panel.Len()
	}
	return st
}

// snapshotAt is when the engine snapshot was last known equal to the database; the start
// before the first load.
func (a *App) snapshotAt() time.Time {
	if n := a.sync.current.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return a.started
}
