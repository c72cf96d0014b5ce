package app

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/internal/mirror"
	"github.com/switchboard/switchboard/persistence"
)

// engineSync keeps this process's engine snapshot equal to the database: a full load when the
// LISTEN connection is (re)established and every RebuildEvery, and between those the
// campaigns that NOTIFY names, in small batches.
type engineSync struct {
	db     *persistence.DB
	eng    *engine.Engine
	log    *zap.Logger
	every  time.Duration
	loaded chan struct{} // closed after the first full load
	once   sync.Once
	// epoch is the campaign epoch of the last full load (-1: unknown).
	epoch atomic.Int64
	// changed, once set, hears of every applied change: the ids, or nil after a full load.
	changed atomic.Pointer[func(ids []int64)]
}

func newEngineSync(db *persistence.DB, eng *engine.Engine, log *zap.Logger, every time.Duration) *engineSync {
	return &engineSync{db: db, eng: eng, log: log, every: every, loaded: make(chan struct{})}
}

// run listens and applies changes until ctx ends.
func (s *engineSync) run(ctx context.Context) {
	mirror.Run(ctx, mirror.Config[int64]{
		Name:   "engine",
		Log:    s.log,
		Listen: mirror.Listener(s.db.ListenOn, persistence.CampaignChannel),
		Notified: func(payload string, add func(int64)) {
			if id, err := strconv.ParseInt(payload, 10, 64); err == nil {
				add(id)
			}
		},
		Reload: s.apply,
		Full:   s.full,
		Every:  s.every,
		Safety: s.safetyRebuild,
	})
}

// full rebuilds the snapshot from every active campaign. On failure it keeps the last
// snapshot: serving stale offers beats serving none while the database is away.
func (s *engineSync) full(ctx context.Context) error {
	start := time.Now()
	// Read before loading: a change committed during the load advances the epoch past it.
	epoch, epochErr := s.db.CampaignEpoch(ctx)
	cs, err := s.db.EngineCampaigns(ctx, nil)
	if err != nil {
		return err
	}
	s.eng.Load(cs)
	if epochErr == nil {
		s.epoch.Store(epoch)
	} else {
		s.epoch.Store(-1)
	}
	if f := s.changed.Load(); f != nil {
		(*f)(nil)
	}
	s.log.Debug("engine loaded", zap.Int("campaigns", len(cs)), zap.Duration("took", time.Since(start)))
	s.once.Do(func() { close(s.loaded) })
	return nil
}

// safetyRebuild is the periodic full load, skipped when no campaign changed since the last
// one: at 100k campaigns a load costs seconds of CPU and a second index in memory.
func (s *engineSync) safetyRebuild(ctx context.Context) error {
	if epoch, err := s.db.CampaignEpoch(ctx); err == nil && epoch == s.epoch.Load() {
		return nil
	}
	return s.full(ctx)
}

// apply loads the campaigns that notifications named (those no longer active leave the
// snapshot). On failure the mirror keeps the ids and retries.
func (s *engineSync) apply(ctx context.Context, ids []int64) error {
	cs, err := s.db.EngineCampaigns(ctx, ids)
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
	if f := s.changed.Load(); f != nil {
		(*f)(ids)
	}
	return nil
}
