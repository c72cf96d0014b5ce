// Package partners is the directory of the supply partners and of the service keys, held in
// memory for the hot paths (docs/architecture.md): the publishers of this deployment's
// environment, keyed by the SHA-256 of their token and by id, and the keyring that signs and
// verifies offer-entry, profiler and support tokens. Supply authenticates and signs with it;
// the router verifies entry tokens and finds the publisher of a session with it. Both follow
// PostgreSQL through NOTIFY (persistence.PublisherChannel, persistence.ServiceKeyChannel) and
// periodic reloads.
package partners

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/internal/entrytoken"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/internal/jsontext"
	"github.com/switchboard/switchboard/internal/mirror"
	"github.com/switchboard/switchboard/internal/retry"
	"github.com/switchboard/switchboard/persistence"
)

// Config tunes the directory; zero values take the defaults.
type Config struct {
	// Environment is the deployment's: publishers of the other environment are not held, so
	// their tokens get 401 (default staging).
	Environment string
	// PublisherRefresh is the period of the publisher reload (default 30 s). An unknown
	// token also triggers a reload, at most once a second.
	PublisherRefresh time.Duration
	// KeyReload is the period of the service keys' safety reload (default 1 min); a
	// rotation is picked up at once by its notification (keys.go).
	KeyReload time.Duration
	// PublisherRateLimit and PublisherRateBurst limit each publisher's requests to this
	// process (default 2,000 a second with bursts of 4,000; negative rate: off). The limit
	// is per process: behind N processes a publisher may reach N times it.
	PublisherRateLimit float64
	PublisherRateBurst int
}

func (c Config) withDefaults() Config {
	if c.Environment == "" {
		c.Environment = persistence.EnvStaging
	}
	if c.PublisherRefresh <= 0 {
		c.PublisherRefresh = 30 * time.Second
	}
	if c.KeyReload <= 0 {
		c.KeyReload = time.Minute
	}
	if c.PublisherRateLimit == 0 {
		c.PublisherRateLimit = 2000
	}
	if c.PublisherRateBurst <= 0 {
		c.PublisherRateBurst = 2 * int(max(c.PublisherRateLimit, 1))
	}
	return c
}

// Store is the storage the directory reads: a subset of persistence's AccountStore.
type Store interface {
	PublishersWithTokenHash(ctx context.Context) ([]persistence.Publisher, [][32]byte, error)
	ServiceKeys(ctx context.Context, name string, within time.Duration) ([]byte, []persistence.PreviousKey, error)
}

// Feed is the notification feed the directory follows: a subset of persistence's FeedStore.
type Feed interface {
	ListenOn(ctx context.Context, channel string) (*persistence.Listener, error)
}

// Publisher is a publisher as the hot paths need it.
type Publisher struct {
	persistence.Publisher
	Secret   []byte // api_secret, the HMAC key of sech
	Currency []byte // currency_name as a JSON string
	// Limit is the publisher's request rate limit in this process; it survives reloads of
	// the publisher (nil: no limit).
	Limit *httpio.Throttle
	// Offers counts its GET /campaigns answers until the next flush (offers.go); it
	// survives reloads of the publisher.
	Offers *OfferCount
}

type publisherSet struct {
	byHash map[[32]byte]*Publisher
	byID   map[int64]*Publisher
}

// Directory keeps the publishers of this deployment's environment in memory, keyed by the
// SHA-256 of their token (the form the database stores), so that authenticating a request
// costs one hash and one map read, and the service keyring (keys.go). Lookups go by hash:
// the token itself is never compared, so there is no secret-dependent comparison to time.
type Directory struct {
	store Store
	feed  Feed
	log   *zap.Logger
	cfg   Config
	set   atomic.Pointer[publisherSet]

	mu   sync.Mutex // serializes publisher reloads
	last time.Time  // of the last reload attempt

	key    *entrytoken.Key
	keysMu sync.Mutex // serializes loadKeys
	// keyLookups logs the failures of look-ups for unknown key ids (run one at a time).
	keyLookups *retry.Outage
}

// New loads the service keys and the publishers; Start keeps them current.
func New(ctx context.Context, cfg Config, store Store, feed Feed, log *zap.Logger) (*Directory, error) {
	d := newDirectory(cfg, log)
	d.store, d.feed = store, feed
	if err := d.loadKeys(ctx); err != nil {
		return nil, err
	}
	if err := d.Reload(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

// Fixed is a directory of the given keyring and publishers (tokens' SHA-256 in hashes) that
// reads no database: benchmarks of the hot path use it. Start must not be called.
func Fixed(cfg Config, key *entrytoken.Key, list []persistence.Publisher, hashes [][32]byte) *Directory {
	d := newDirectory(cfg, nil)
	d.key = key
	d.replace(list, hashes)
	return d
}

func newDirectory(cfg Config, log *zap.Logger) *Directory {
	if log == nil {
		log = zap.NewNop()
	}
	d := &Directory{cfg: cfg.withDefaults(), log: log}
	d.keyLookups = retry.NewOutage(log, "service key look-up", retry.Default, nil)
	d.set.Store(&publisherSet{byHash: map[[32]byte]*Publisher{}, byID: map[int64]*Publisher{}})
	return d
}

// Start keeps the directory equal to the database until ctx ends: the service keys' LISTEN
// on rotations, the publishers' LISTEN on changes and their periodic refresh.
func (d *Directory) Start(ctx context.Context) {
	go d.mirrorKeys(ctx)
	go d.mirrorPublishers(ctx)
	go d.refreshPublishers(ctx)
}

// Reload reads the publishers again now (it happens every PublisherRefresh, on their
// notifications and on unknown tokens by itself; tools and tests call it right after
// registering one).
func (d *Directory) Reload(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.reloadLocked(ctx)
}

func (d *Directory) reloadLocked(ctx context.Context) error {
	d.last = time.Now()
	list, hashes, err := d.store.PublishersWithTokenHash(ctx)
	if err != nil {
		return err
	}
	d.replace(list, hashes)
	return nil
}

// replace installs the publishers of list of this environment; a publisher already held
// keeps its rate limit and its offer counts.
func (d *Directory) replace(list []persistence.Publisher, hashes [][32]byte) {
	old := d.set.Load()
	set := &publisherSet{byHash: make(map[[32]byte]*Publisher, len(list)), byID: make(map[int64]*Publisher, len(list))}
	for i, p := range list {
		if p.Environment != d.cfg.Environment {
			continue
		}
		pub := &Publisher{Publisher: p, Secret: []byte(p.APISecret), Currency: jsontext.AppendString(nil, p.CurrencyName)}
		if o := old.byID[p.ID]; o != nil {
			pub.Limit = o.Limit // a reload must not hand out a fresh burst
			pub.Offers = o.Offers
		} else {
			pub.Limit = httpio.NewThrottle(d.cfg.PublisherRateLimit, d.cfg.PublisherRateBurst)
			pub.Offers = new(OfferCount)
		}
		set.byHash[hashes[i]] = pub
		set.byID[p.ID] = pub
	}
	d.set.Store(set)
}

// ByID returns a publisher of this deployment's environment from memory, or nil.
func (d *Directory) ByID(id int64) *Publisher { return d.set.Load().byID[id] }

// PublisherByID returns a publisher of this deployment's environment from memory (the
// router's look-up, which falls back to the database on a miss).
func (d *Directory) PublisherByID(id int64) (persistence.Publisher, bool) {
	p := d.ByID(id)
	if p == nil {
		return persistence.Publisher{}, false
	}
	return p.Publisher, true
}

// Each calls fn with every publisher held.
func (d *Directory) Each(fn func(*Publisher)) {
	for _, p := range d.set.Load().byID {
		fn(p)
	}
}

// Known finds the publisher of a token hash in memory, without reloading.
func (d *Directory) Known(h [32]byte) *Publisher { return d.set.Load().byHash[h] }

// Lookup finds the publisher of a token hash. On a miss it reloads the publishers, at most
// once a second across all callers, so that a publisher registered a moment ago is found.
func (d *Directory) Lookup(h [32]byte) *Publisher {
	if p := d.Known(h); p != nil {
		return p
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if p := d.Known(h); p != nil { // another caller reloaded meanwhile
		return p
	}
	if time.Since(d.last) < time.Second {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := d.reloadLocked(ctx); err != nil {
		d.log.Warn("publisher reload on unknown token failed", zap.Error(err))
		return nil
	}
	return d.Known(h)
}

// mirrorPublishers reloads the publishers as soon as one changes (a NOTIFY on
// persistence.PublisherChannel: created, updated, new token or secret), so that every
// process agrees within moments; the periodic refresh stays as the safety net.
func (d *Directory) mirrorPublishers(ctx context.Context) {
	mirror.Run(ctx, mirror.Config[int64]{
		Name:     "publishers",
		Log:      d.log,
		Listen:   mirror.Listener(d.feed.ListenOn, persistence.PublisherChannel),
		Notified: func(_ string, add func(int64)) { add(0) },
		Debounce: 20 * time.Millisecond,
		Reload:   func(ctx context.Context, _ []int64) error { return d.Reload(ctx) },
		Full:     d.Reload, // after a reconnect: changes notified meanwhile were lost
	})
}

// refreshPublishers reloads the publishers every PublisherRefresh until ctx ends. Failures
// are logged once per outage; the publisher set in memory stays meanwhile.
func (d *Directory) refreshPublishers(ctx context.Context) {
	t := time.NewTicker(d.cfg.PublisherRefresh)
	defer t.Stop()
	outage := retry.NewOutage(d.log, "publisher refresh", retry.Default, nil)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			outage.Attempt(ctx, d.Reload)
		}
	}
}
