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
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/internal/entrytoken"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/internal/jsontext"
	"github.com/switchboard/switchboard/internal/retry"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router/payout"
	"github.com/switchboard/switchboard/supply/partners"
	"github.com/switchboard/switchboard/supply/quality"
)

// Prefix is the base path of the interface.
const Prefix = "/supply_api/v4"

// Config tunes the interface; zero values take the defaults.
type Config struct {
	PublicURL string // base of every URL handed out (no trailing slash)
	// TopK is how many surveys GET /campaigns returns at most (default 30).
	TopK int
	// CacheTTL is how long an answer of GET /campaigns is reused for the same
	// (publisher, user, device type, device id) (default 15 s, at most 120 s; negative: off).
	CacheTTL time.Duration
	// CacheMaxBytes bounds the answer cache (default 64 MiB).
	CacheMaxBytes int64
	// OfferFlush is the period at which the GET /campaigns answers counted in memory are
	// added to the database for GET /stats (default 1 min).
	OfferFlush time.Duration
	// PanelWindow: participants active within it are loaded at start (default 30 days).
	PanelWindow time.Duration
	// TouchEvery is the period at which offer requests are written back as last_active_at
	// (default 5 min).
	TouchEvery time.Duration
}

func (c Config) withDefaults() Config {
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
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
	if c.OfferFlush <= 0 {
		c.OfferFlush = time.Minute
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
	// The storage, through the interfaces declared beside their use; cmd/switchboard/app
	// wires persistence's stores into them.
	Participants panelStore     // panelsync.go
	Feed         feed           // panelsync.go
	Support      supportStore   // pages_support.go
	Offers       offerStore     // stats.go
	Deliveries   postbackStore  // postbacks.go
	Statements   statementStore // statements.go
	Languages    languageStore  // pages_catalog.go
	// Catalog is the standard qualification catalog, loaded once at start.
	Catalog *persistence.Catalog
	// Partners holds the publishers and the service keys (supply/partners).
	Partners *partners.Directory
	// Quality is the participant-quality service (supply/quality; nil: no checks).
	Quality *quality.Service

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

// API is the supply interface of one serve process: the partner API's routes and the
// panel mirror behind GET /campaigns; the hosted pages are hostedPages (pages.go).
type API struct {
	participants panelStore // impanel's write (impanel.go)
	offers       offerStore
	deliveries   postbackStore
	statements   statementStore
	pbs          *payout.Worker // sends test postbacks; nil: none
	eng          *engine.Engine
	panel        *engine.Panel
	log          *zap.Logger
	cfg          Config
	now          func() int64
	origin       string // names this process in participant notifications

	partners *partners.Directory // the publishers and the service keys
	key      *entrytoken.Key     // partners' keyring, which signs offer, profiler and support tokens
	catalog  *catalog
	pages    *hostedPages
	// authFailures limits unknown tokens per client address (httpio.AuthFailures).
	authFailures *httpio.AuthFailures
	cache        *answerCache
	hot          *hotTiles
	quality      *quality.Service // blocked set, IP checks, device sightings (supply/quality)
	// statementCSVs streams the statements' CSVs (statements.go).
	statementCSVs *httpio.CSVStreams

	urlEntry, urlProfile, urlSupport []byte // `"` + JSON-escaped URL prefix ending in "token="

	mirror *panelMirror // the panel kept equal to the database (panelsync.go)
}

// New prepares what the interface serves from memory: the catalog's indexes and the
// answer cache. The panel is loaded by Start.
func New(ctx context.Context, d Deps) (*API, error) {
	if d.Participants == nil || d.Engine == nil || d.Panel == nil || d.Partners == nil || d.Catalog == nil {
		return nil, errors.New("supply: Participants, Engine, Panel, Partners and Catalog are required")
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
	origin := hex.EncodeToString(o[:])
	a := &API{participants: d.Participants, offers: d.Offers, deliveries: d.Deliveries, statements: d.Statements,
		pbs: d.Postbacks, eng: d.Engine, panel: d.Panel, log: log, cfg: cfg, now: now, origin: origin,
		partners: d.Partners, key: d.Partners.Key(), quality: d.Quality, authFailures: d.AuthFailures}
	a.mirror = &panelMirror{participants: d.Participants, feed: d.Feed, panel: d.Panel, log: log, now: now,
		origin: origin, window: cfg.PanelWindow, loaded: make(chan struct{}), hist: entryHistory{wake: make(chan struct{}, 1)},
		misses: make(chan panelMiss, 1024), missSeen: map[panelMiss]int64{}, seed: d.Seed}
	a.statementCSVs = httpio.NewCSVStreams(maxStatementCSVs, log)
	var err error
	if a.catalog, err = newCatalog(d.Catalog); err != nil {
		return nil, err
	}
	abbrs, err := d.Languages.CountryLanguageAbbrs(ctx)
	if err != nil {
		return nil, err
	}
	a.pages = &hostedPages{key: a.key, partners: d.Partners, panel: d.Panel, catalog: a.catalog,
		texts: newPageCatalog(d.Catalog, a.catalog, abbrs), support: d.Support, publicURL: cfg.PublicURL,
		now: now, log: log, impanel: a.storeImpanel}
	a.cache = newAnswerCache(cfg.CacheTTL, cfg.CacheMaxBytes)
	a.hot = newHotTiles()
	// Opening quote and escaped prefix; the token and the closing quote follow.
	a.urlEntry = jsontext.AppendEscaped([]byte{'"'}, cfg.PublicURL+Prefix+"/entry?token=")
	a.urlProfile = jsontext.AppendEscaped([]byte{'"'}, cfg.PublicURL+Prefix+"/profile?token=")
	a.urlSupport = jsontext.AppendEscaped([]byte{'"'}, cfg.PublicURL+"/support?token=")
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
	a.pages.register(mux)
}

// Start runs the background work until ctx ends: the panel load and its LISTEN on
// participant changes, the hot-tile estimate, panel-miss lookups and the write-back of
// activity. The publishers and the service keys (supply/partners) and the quality
// service (supply/quality) run on their own.
func (a *API) Start(ctx context.Context) {
	go a.mirror.runPanelSync(ctx)
	go a.mirror.runEntryHistory(ctx)
	go a.runLoops(ctx)
}

// Loaded is closed once the panel holds the participants active within PanelWindow.
func (a *API) Loaded() <-chan struct{} { return a.mirror.loaded }

// LeftOut returns the campaigns whose entries the panel's history leaves out, sorted: what a
// snapshot of this process carries for its entry history.
func (a *API) LeftOut() []int64 { return a.mirror.leftOut() }

// CampaignsChanged hears of campaign changes the engine applied: the ids, or nil after a
// full load (when notifications may have been lost). A relationship names both of its
// campaigns, so a changed campaign the load left out may now need its entries.
func (a *API) CampaignsChanged(ids []int64) { a.mirror.campaignsChanged(ids) }

// Key is the keyring that signs and verifies offer-entry, profiler and support tokens
// (supply/partners'; it follows rotations).
func (a *API) Key() *entrytoken.Key { return a.key }

// RollHotTiles closes the current minute of the hot-tile estimate now (it happens every
// minute by itself; tests call it to avoid waiting).
func (a *API) RollHotTiles() { a.hot.roll() }

func (a *API) runLoops(ctx context.Context) {
	hotTick := time.NewTicker(time.Minute)
	touchTick := time.NewTicker(a.cfg.TouchEvery)
	offerTick := time.NewTicker(a.cfg.OfferFlush)
	defer offerTick.Stop()
	defer hotTick.Stop()
	defer touchTick.Stop()
	lastTouch := a.now()
	// Failures are logged once per outage.
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
		case <-hotTick.C:
			a.hot.roll()
		case <-touchTick.C:
			touch.Attempt(ctx, func(ctx context.Context) (err error) {
				lastTouch, err = a.mirror.flushActivity(ctx, lastTouch)
				return err
			})
		}
	}
}

// ReloadPublishers reads the publishers again now (partners.Directory.Reload; it happens
// by itself; tools and tests call it right after registering one).
func (a *API) ReloadPublishers(ctx context.Context) error { return a.partners.Reload(ctx) }
