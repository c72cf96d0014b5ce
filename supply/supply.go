// Package supply serves the supply-partner interface, /supply_api/v4 (docs/rules.md §3, §5,
// §6, §9): countries, qualifications, impanel and offers.
//
// Everything GET /campaigns needs lives in memory: publishers (by token hash), the engine's
// campaign snapshot, the participant panel, the service key that signs offer tokens and a
// short per-participant answer cache. The hot path does no database round trip; impanel
// writes through to PostgreSQL first and tells the other serve processes with a NOTIFY.
package supply

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/internal/entrytoken"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/internal/retry"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router/payout"
)

// Prefix is the base path of the interface.
const Prefix = "/supply_api/v4"

// Config tunes the interface; zero values take the defaults.
type Config struct {
	PublicURL   string // base of every URL handed out (no trailing slash)
	Environment string // staging or live: publishers of the other environment get 401
	// TopK is how many surveys GET /campaigns returns at most (default 30).
	TopK int
	// CacheTTL is how long an answer of GET /campaigns is reused for the same
	// (publisher, user, device type, device id) (default 15 s, at most 120 s; negative: off).
	CacheTTL time.Duration
	// CacheMaxBytes bounds the answer cache (default 64 MiB).
	CacheMaxBytes int64
	// PublisherRefresh is the period of the publisher reload (default 30 s). An unknown
	// token also triggers a reload, at most once a second.
	PublisherRefresh time.Duration
	// OfferFlush is the period at which the GET /campaigns answers counted in memory are
	// added to the database for GET /stats (default 1 min).
	OfferFlush time.Duration
	// KeyReload is the period of the service keys' safety reload (default 1 min); a
	// rotation is picked up at once by its notification (keys.go).
	KeyReload time.Duration
	// PanelWindow: participants active within it are loaded at start (default 30 days).
	PanelWindow time.Duration
	// TouchEvery is the period at which offer requests are written back as last_active_at
	// (default 5 min).
	TouchEvery time.Duration
	// PublisherRateLimit and PublisherRateBurst limit each publisher's requests to this
	// process (default 2,000 a second with bursts of 4,000; negative rate: off). The limit
	// is per process: behind N processes a publisher may reach N times it.
	PublisherRateLimit float64
	PublisherRateBurst int
	// Quality tunes the participant quality defenses (quality.go).
	Quality QualityConfig
}

func (c Config) withDefaults() Config {
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	if c.Environment == "" {
		c.Environment = persistence.EnvStaging
	}
	if c.TopK <= 0 {
		c.TopK = 30
	}
	if c.CacheTTL == 0 {
		c.CacheTTL = 15 * time.Second
	}
	c.CacheTTL = min(c.CacheTTL, 120*time.Second)
	if c.CacheMaxBytes <= 0 {
		c.CacheMaxBytes = 64 << 20
	}
	if c.PublisherRefresh <= 0 {
		c.PublisherRefresh = 30 * time.Second
	}
	if c.OfferFlush <= 0 {
		c.OfferFlush = time.Minute
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
	if c.PanelWindow <= 0 {
		c.PanelWindow = 30 * 24 * time.Hour
	}
	if c.TouchEvery <= 0 {
		c.TouchEvery = 5 * time.Minute
	}
	return c
}

// Deps is what the interface needs from the process.
type Deps struct {
	DB     *persistence.DB
	Engine *engine.Engine
	Panel  *engine.Panel
	Log    *zap.Logger
	Config Config
	// AuthFailures limits failed authentications per client address (nil: no limit); the
	// buyer API shares it.
	AuthFailures *httpio.AuthFailures
	// Now returns the current unix time in seconds; nil: the clock.
	Now func() int64
	// Postbacks sends the test postbacks of POST /postbacks/test with the delivery worker's
	// client (nil: the route answers 503).
	Postbacks *payout.Worker
	// Seed, when set, says that Panel was restored from a snapshot: its first load reads only
	// what changed since (panelseed.go).
	Seed *PanelSeed
}

// API is the supply interface of one serve process.
type API struct {
	db     *persistence.DB
	pbs    *payout.Worker // sends test postbacks; nil: none
	eng    *engine.Engine
	panel  *engine.Panel
	log    *zap.Logger
	cfg    Config
	now    func() int64
	origin string // names this process in participant notifications

	key    *entrytoken.Key
	keysMu sync.Mutex // serializes loadKeys
	// keyLookups logs the failures of look-ups for unknown key ids (run one at a time).
	keyLookups *retry.Outage
	catalog    *catalog
	pages      *pageCatalog // the hosted profiler's texts (pages_catalog.go)
	pubs       *publisherStore
	// authFailures limits unknown tokens per client address (httpio.AuthFailures).
	authFailures *httpio.AuthFailures
	cache        *answerCache
	hot          *hotTiles
	quality      *Quality // blocked set, IP checks, device sightings (quality.go)
	// statementCSVs streams the statements' CSVs (statements.go).
	statementCSVs *httpio.CSVStreams

	urlEntry, urlProfile, urlSupport []byte // `"` + JSON-escaped URL prefix ending in "token="

	loaded   chan struct{} // closed after the first panel load
	loadOnce sync.Once
	hist     entryHistory   // campaigns whose entries the panel load left out (entryhistory.go)
	seed     *PanelSeed     // the panel's snapshot, until caught up (panelseed.go)
	misses   chan panelMiss // panel misses on GET /campaigns to look up
	missMu   sync.Mutex
	missSeen map[panelMiss]int64 // recent lookups, unix seconds
}

// New loads what the interface serves from memory: the catalog, the publishers and the
// service key. The panel is loaded by Start.
func New(ctx context.Context, d Deps) (*API, error) {
	if d.DB == nil || d.Engine == nil || d.Panel == nil {
		return nil, errors.New("supply: DB, Engine and Panel are required")
	}
	cfg := d.Config.withDefaults()
	log := d.Log
	if log == nil {
		log = zap.NewNop()
	}
	now := d.Now
	if now == nil {
		now = func() int64 { return time.Now().Unix() }
	}
	var o [8]byte
	if _, err := rand.Read(o[:]); err != nil {
		return nil, err
	}
	a := &API{db: d.DB, pbs: d.Postbacks, eng: d.Engine, panel: d.Panel, log: log, cfg: cfg, now: now,
		origin: hex.EncodeToString(o[:]), loaded: make(chan struct{}), hist: entryHistory{wake: make(chan struct{}, 1)},
		misses: make(chan panelMiss, 1024), missSeen: map[panelMiss]int64{}, seed: d.Seed}
	a.keyLookups = retry.NewOutage(log, "service key look-up", retry.Default, nil)
	a.statementCSVs = httpio.NewCSVStreams(maxStatementCSVs, log)

	if err := a.loadKeys(ctx); err != nil {
		return nil, err
	}
	cat, err := d.DB.LoadCatalog(ctx)
	if err != nil {
		return nil, err
	}
	if a.catalog, err = newCatalog(cat); err != nil {
		return nil, err
	}
	if a.quality, err = newQuality(cfg.Quality, d.DB, log.Named("quality"), now, cat.Countries); err != nil {
		return nil, err
	}
	abbrs, err := d.DB.CountryLanguageAbbrs(ctx)
	if err != nil {
		return nil, err
	}
	a.pages = newPageCatalog(cat, a.catalog, abbrs)
	a.pubs = newPublisherStore(d.DB, cfg.Environment, log, cfg.PublisherRateLimit, cfg.PublisherRateBurst)
	a.authFailures = d.AuthFailures
	if err := a.pubs.refresh(ctx); err != nil {
		return nil, err
	}
	a.cache = newAnswerCache(cfg.CacheTTL, cfg.CacheMaxBytes)
	a.hot = newHotTiles()
	// Opening quote and escaped prefix; the token and the closing quote follow.
	a.urlEntry = appendJSONEscaped([]byte{'"'}, cfg.PublicURL+Prefix+"/entry?token=")
	a.urlProfile = appendJSONEscaped([]byte{'"'}, cfg.PublicURL+Prefix+"/profile?token=")
	a.urlSupport = appendJSONEscaped([]byte{'"'}, cfg.PublicURL+"/support?token=")
	return a, nil
}

// Register mounts the interface's routes on mux.
func (a *API) Register(mux *httpio.Mux) {
	mux.Handle("GET", Prefix+"/countries", a.countries)
	mux.Handle("GET", Prefix+"/qualifications", a.qualifications)
	mux.Handle("POST", Prefix+"/players/impanel", a.impanel)
	mux.Handle("GET", Prefix+"/campaigns", a.campaigns)
	// Partner tools (postbacks.go).
	mux.Handle("GET", Prefix+"/postbacks", a.postbacks)
	mux.Handle("POST", Prefix+"/postbacks/test", a.postbackTest)
	mux.Handle("GET", Prefix+"/stats", a.stats)          // stats.go
	mux.Handle("GET", Prefix+"/statements", a.statement) // statements.go
	// The hosted pages (pages.go, pages_support.go).
	mux.Handle("GET", Prefix+"/profile", a.profilePage)
	mux.Handle("POST", Prefix+"/profile", a.profileSubmit)
	mux.Handle("GET", "/support", a.supportPageGet)
	mux.Handle("POST", "/support", a.supportSubmit)
}

// Start runs the background work until ctx ends: the panel load and its LISTEN on
// participant changes, the service keys' LISTEN on rotations, the publishers' LISTEN on
// changes and their periodic refresh, the hot-tile estimate, panel-miss lookups and
// the write-back of activity.
func (a *API) Start(ctx context.Context) {
	go a.runPanelSync(ctx)
	go a.runEntryHistory(ctx)
	go a.runLoops(ctx)
	go a.mirrorKeys(ctx)
	go a.mirrorPublishers(ctx)
	a.startQuality(ctx)
}

// Loaded is closed once the panel holds the participants active within PanelWindow.
func (a *API) Loaded() <-chan struct{} { return a.loaded }

// Key is the keyring that signs and verifies offer-entry, profiler and support tokens; the
// entry route verifies with it. It follows rotations (keys.go).
func (a *API) Key() *entrytoken.Key { return a.key }

// PublisherByID returns a publisher of this deployment's environment from memory.
func (a *API) PublisherByID(id int64) (persistence.Publisher, bool) {
	p := a.pubs.byID(id)
	if p == nil {
		return persistence.Publisher{}, false
	}
	return p.Publisher, true
}

// RollHotTiles closes the current minute of the hot-tile estimate now (it happens every
// minute by itself; tests call it to avoid waiting).
func (a *API) RollHotTiles() { a.hot.roll() }

func (a *API) runLoops(ctx context.Context) {
	pubTick := time.NewTicker(a.cfg.PublisherRefresh)
	hotTick := time.NewTicker(time.Minute)
	touchTick := time.NewTicker(a.cfg.TouchEvery)
	offerTick := time.NewTicker(a.cfg.OfferFlush)
	defer offerTick.Stop()
	defer pubTick.Stop()
	defer hotTick.Stop()
	defer touchTick.Stop()
	lastTouch := a.now()
	// Failures are logged once per outage; the publisher set in memory stays meanwhile.
	pubs := retry.NewOutage(a.log, "publisher refresh", retry.Default, nil)
	touch := retry.NewOutage(a.log, "activity write-back", retry.Default, nil)
	offers := retry.NewOutage(a.log, "offers flush", retry.Default, nil)
	for {
		select {
		case <-ctx.Done():
			// What was counted since the last flush, if the database still answers.
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			if err := a.FlushOffers(fctx); err != nil {
				a.log.Warn("offers flush at shutdown failed", zap.Error(err))
			}
			cancel()
			return
		case <-offerTick.C:
			offers.Attempt(ctx, a.FlushOffers)
		case <-pubTick.C:
			pubs.Attempt(ctx, a.pubs.refresh)
		case <-hotTick.C:
			a.hot.roll()
		case <-touchTick.C:
			touch.Attempt(ctx, func(ctx context.Context) (err error) {
				lastTouch, err = a.flushActivity(ctx, lastTouch)
				return err
			})
		}
	}
}

// ReloadPublishers reads the publishers again now (it happens every PublisherRefresh and on
// unknown tokens by itself; tools and tests call it right after registering one).
func (a *API) ReloadPublishers(ctx context.Context) error { return a.pubs.refresh(ctx) }
