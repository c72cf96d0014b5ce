// Package quality is the participant-quality service (docs/quality.md): the in-memory
// blocked set that GET /campaigns and entry read (blocks.go, a mirror of quality_blocks),
// the IP checks (ip.go, geo.go), the device-sighting collector (sightings.go), the profile
// rules of an impanel (impanel.go), the recording of signals, and the counters behind
// /metrics. The policy vocabulary (signal kinds, rule classes, thresholds, the block
// decision) is the kit package internal/quality, because persistence decides blocks with it
// inside its transactions and imports no service. Supply and router call this service;
// decisions are made in PostgreSQL (persistence/quality.go) and reach every process through
// NOTIFY on persistence.QualityChannel.
package quality

import (
	"context"
	"hash/maphash"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	policy "github.com/switchboard/switchboard/internal/quality"
	"github.com/switchboard/switchboard/persistence"
)

// Config tunes the participant quality defenses (docs/quality.md); zero values take
// the defaults.
type Config struct {
	// Policy decides blocks from signals (thresholds per rule class, block length).
	Policy policy.Policy
	// AllowPrivateIPs accepts private, loopback, link-local, shared and documentation
	// addresses as user_ip (for testing); unspecified, multicast and reserved ones are
	// refused anyway.
	AllowPrivateIPs bool
	// GeoIPDB is the path of a MaxMind-format country database (GeoIP2/GeoLite2 Country or
	// anything with country.iso_code). Empty: the IP-country check is off.
	GeoIPDB string
	// DuplicateDeviceUsers: a device seen with more user identifiers of one publisher than
	// this within 24 hours is a duplicate signal for each of them (default 3).
	DuplicateDeviceUsers int
	// FlushEvery is the period at which device sightings are written and checked (default
	// 200 ms: a batch of a second at 26,000 offers/s was 100-180 ms of one PostgreSQL core at
	// once, and the offers that met it made the open-loop tail).
	FlushEvery time.Duration
	// ReloadEvery is the period of the full reload of the blocked set, the safety net under
	// NOTIFY (default 1 min).
	ReloadEvery time.Duration
}

func (c Config) withDefaults() Config {
	c.Policy = c.Policy.WithDefaults()
	if c.DuplicateDeviceUsers <= 0 {
		c.DuplicateDeviceUsers = 3
	}
	if c.FlushEvery <= 0 {
		c.FlushEvery = 200 * time.Millisecond
	}
	if c.ReloadEvery <= 0 {
		c.ReloadEvery = time.Minute
	}
	return c
}

// Store is the storage the service needs: a subset of persistence's QualityStore.
type Store interface {
	RecordQualitySignals(ctx context.Context, pol policy.Policy, sigs []persistence.QualitySignal) (persistence.QualityOutcome, error)
	RecordImpanelQuality(ctx context.Context, pol policy.Policy, in persistence.ImpanelQuality) (persistence.QualityOutcome, error)
	RecordDeviceSightings(ctx context.Context, pol policy.Policy, batch []persistence.DeviceSighting, maxUsers int) ([]persistence.SharedDevice, persistence.QualityOutcome, error)
	RecentQualityBlocks(ctx context.Context, ended time.Duration) ([]persistence.QualityBlock, error)
	LatestQualityBlock(ctx context.Context, participantID int64) (persistence.QualityBlock, bool, error)
	QualityBlocksChangedAt(ctx context.Context, xid uint64) ([]persistence.QualityBlock, error)
	PruneQualityHistory(ctx context.Context) error
}

// Feed is the notification feed the blocked set follows: a subset of persistence's FeedStore.
type Feed interface {
	ListenOn(ctx context.Context, channel string) (*persistence.Listener, error)
}

// Deps is what the service needs from the process.
type Deps struct {
	Store Store // nil: in memory only (benchmarks); Start then does nothing
	Feed  Feed
	Log   *zap.Logger
	// Now returns the current unix time in seconds.
	Now func() int64
	// Countries are the catalog's countries, for the IP-country check.
	Countries []persistence.Country
}

// Service is one process's view of participant quality: the blocked set that GET /campaigns
// and entry read from memory, the IP checks, the device-sighting collector and the counters
// behind /metrics. A nil *Service checks nothing and records nothing.
type Service struct {
	cfg   Config
	store Store
	feed  Feed
	log   *zap.Logger
	now   func() int64

	blocks  atomic.Pointer[blockSet]
	blockMu sync.Mutex // serializes writers of blocks
	// blocksLoaded is closed once the blocked set is first loaded (or caught up from its
	// snapshot: blocks.go); loadedOnce closes it.
	blocksLoaded chan struct{}
	loadedOnce   sync.Once
	// seeded: the blocked set was restored from a process snapshot consistent at the
	// position seedXID (Restore), and its first load reads only what changed since.
	seeded  bool
	seedXID uint64

	geo        *geoDB           // nil: the IP-country check is off
	countryISO map[int32]string // country id → ISO code, for the IP-country check

	seed      maphash.Seed
	sightings [sightShards]sightShard
	// flush is the flush's own copy of the shards' queues, kept between flushes so that
	// writing them allocates no new buffers once grown; its mutex serializes flushes.
	flush struct {
		mu     sync.Mutex
		text   []byte
		queued []sighting
		rows   []persistence.DeviceSighting
	}

	stats sync.Map // publisher id → *publisherStats

	blockedBodies map[string][]byte // the GET /campaigns answer of a blocked participant, per rule class
}

// publisherStats are the counters of one publisher.
type publisherStats struct {
	blocks, speeders, duplicates, ipMismatches atomic.Int64
}

// New prepares the quality state: the geo database when configured, the country codes,
// the precomputed answers. The blocked set is loaded by Start (and LoadBlocks).
func New(cfg Config, d Deps) (*Service, error) {
	q := &Service{cfg: cfg.withDefaults(), store: d.Store, feed: d.Feed, log: d.Log, now: d.Now, seed: maphash.MakeSeed(),
		countryISO: map[int32]string{}, blockedBodies: map[string][]byte{}, blocksLoaded: make(chan struct{})}
	if q.log == nil {
		q.log = zap.NewNop()
	}
	if q.now == nil {
		q.now = func() int64 { return time.Now().Unix() }
	}
	q.blocks.Store(emptyBlocks)
	for i := range q.sightings {
		q.sightings[i].seen = make([]uint64, maxSeen/sightShards)
	}
	for _, c := range d.Countries {
		q.countryISO[c.ID] = c.ISOCode
	}
	for _, class := range policy.Classes {
		q.blockedBodies[class] = []byte(`{"surveys":[],"player_eligibility":{"is_eligible":false,"reason":1,"comment":` +
			strconv.Quote("blocked for quality: "+classComment(class)) + `}}`)
	}
	if q.cfg.GeoIPDB != "" {
		g, err := openGeoDB(q.cfg.GeoIPDB)
		if err != nil {
			return nil, err
		}
		q.geo = g
	}
	return q, nil
}

// classComment names a rule class to the partner; thresholds are never shown.
func classComment(class string) string {
	switch class {
	case policy.ClassOutcomes:
		return "repeated quality terminations or rejected completes"
	case policy.ClassSpeeding:
		return "repeated speeding"
	case policy.ClassDuplicates:
		return "duplicate identity"
	case policy.ClassImplausible:
		return "implausible profile changes"
	}
	return "quality rules"
}

// Start loads the blocked set and keeps it current until ctx ends (with the sightings'
// flush and the history's prune). The load comes before serving: a server that just
// started must not offer surveys to participants blocked elsewhere; the mirror reloads on
// every (re)connect after this.
func (q *Service) Start(ctx context.Context) {
	if q == nil || q.store == nil {
		return
	}
	if !q.seeded { // else the snapshot's set serves until the mirror's first load catches up
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := q.LoadBlocks(lctx); err != nil {
			q.log.Warn("quality blocks not loaded at start; retrying in the background", zap.Error(err))
		}
		cancel()
	}
	go q.run(ctx)
}

// run keeps the blocked set equal to the database until ctx ends: LISTEN on QualityChannel
// (a full load after every connect), a periodic reload, and the device-sighting flush.
func (q *Service) run(ctx context.Context) {
	go q.runFlush(ctx)
	go q.runPrune(ctx)
	q.mirrorBlocks(ctx)
}

// runPrune drops old quality history every hour.
func (q *Service) runPrune(ctx context.Context) {
	prune := time.NewTicker(time.Hour)
	defer prune.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-prune.C:
			if err := q.store.PruneQualityHistory(ctx); err != nil && ctx.Err() == nil {
				q.log.Warn("quality history prune failed", zap.Error(err))
			}
		}
	}
}

// Record stores signals and decides blocks (persistence.RecordQualitySignals), applies the
// blocks here at once and counts them. Router and buyer operations call it.
func (q *Service) Record(ctx context.Context, sigs []persistence.QualitySignal) error {
	if q == nil || len(sigs) == 0 {
		return nil
	}
	out, err := q.store.RecordQualitySignals(ctx, q.cfg.Policy, sigs)
	if err != nil {
		return err
	}
	q.Observe(out)
	return nil
}

// Observe counts what recording signals did and applies its blocks here.
func (q *Service) Observe(out persistence.QualityOutcome) {
	if q == nil {
		return
	}
	for _, s := range out.NewSignals {
		if s.PublisherID == 0 {
			continue
		}
		switch policy.SignalClass(s.Kind) {
		case policy.ClassSpeeding:
			q.statsOf(s.PublisherID).speeders.Add(1)
		case policy.ClassDuplicates:
			q.statsOf(s.PublisherID).duplicates.Add(1)
		}
	}
	q.Apply(out.Blocks, true)
}

// Policy is the decision policy in force.
func (q *Service) Policy() policy.Policy { return q.cfg.Policy }
