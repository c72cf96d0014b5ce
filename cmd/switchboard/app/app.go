// Package app assembles one Switchboard server from a Config: the database, the engine and
// every HTTP interface on one listener. cmd/switchboard fills the Config from flags; tests
// fill it directly.
package app

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/admin"
	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/internal/mirror"
	"github.com/switchboard/switchboard/internal/openapi"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/maintenance"
	"github.com/switchboard/switchboard/router"
	"github.com/switchboard/switchboard/router/payout"
	"github.com/switchboard/switchboard/supply"
	"github.com/switchboard/switchboard/supply/partners"
	"github.com/switchboard/switchboard/supply/quality"
)

// App is one running server process.
type App struct {
	cfg     Config
	log     *zap.Logger
	DB      *persistence.DB
	Metrics *httpio.Metrics
	Engine  *engine.Engine
	Panel   *engine.Panel // participants, shared by supply and entry routing
	Supply  *supply.API
	// Partners holds the publishers and the service keys, for supply and the router.
	Partners *partners.Directory
	// Quality is the participant-quality service of supply, the router and buyer operations.
	Quality *quality.Service
	Router  *router.Router // entry, callbacks, test sessions; counters kept across processes
	// Maintenance is this process's share of the fleet's upkeep (sweeper, planner statistics).
	Maintenance *maintenance.Fleet
	Payouts     *payout.Worker // delivers the partner postback outbox; every process runs one
	server      *httpio.Server
	admin       *httpio.Server // nil without Config.AdminAddr
	stop        context.CancelFunc
	sync        *engineSync
	// weighted is closed once the allocation's first weights are in (at once under greedy):
	// until then a balanced process would rank with weights computed without the panel.
	weighted chan struct{}
	// settled is closed once the loads are in and their garbage collected (settle).
	settled chan struct{}
	// Joining reports that other processes served the database when this one started, so
	// that it loaded gently (join.go).
	Joining bool
	started time.Time // when the engine metrics were registered: the snapshot age before the first load
	// processID names this process's heartbeat row (heartbeat.go); version is its binary's.
	processID, version string
	beacon             *beacon // this process's heartbeat row (heartbeat.go)
	// ready is closed once every load is in (loads).
	ready chan struct{}
	// Restored reports that the process started from a snapshot (snapshots.go).
	Restored bool
	// schema is the database schema version: the latest migration.
	schema          int
	positions       positions // database positions read lately, for snapshot headers
	snapshotLimit   *httpio.RateLimiter
	snapshotStreams sync.Mutex // held while a peer snapshot streams
	// snapshotAuth is the token peers show for GET /admin/snapshot, once read.
	snapshotAuth atomic.Pointer[string]
	phases       *startPhases // the phases of the start (startphases.go)
}

// New connects to the database, migrates it under an advisory lock and builds every
// interface. It does not listen yet.
func New(ctx context.Context, cfg Config, log *zap.Logger) (*App, error) {
	cfg = cfg.withDefaults()
	phases := newStartPhases(log.Named("start"))
	if !persistence.ValidEnvironment(cfg.Environment) {
		return nil, errors.New("environment must be staging or live")
	}
	db, err := openDatabase(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	phases.since("database", phases.began, 0, 0)
	a := newApp(cfg, log, db)
	a.phases = phases

	// The engine loads in the background, beside the panel and the counters (Start below);
	// /readyz reports when all three are in.
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	a.stop = stop
	a.sync = newEngineSync(db, a.Engine, log.Named("engine"), cfg.RebuildEvery)
	a.sync.phases = phases
	endJoin := a.joinGently(ctx)
	a.Joining = endJoin != nil
	built := false
	defer func() {
		if !built && endJoin != nil {
			endJoin() // New failed: the loads will not come in
		}
	}()
	res := a.startEngine(ctx, bg)
	mux := a.newMux()
	if err := a.buildInterfaces(ctx, bg, mux, res); err != nil {
		stop()
		db.Close()
		return nil, err
	}
	a.startWorkers(bg, endJoin)
	a.awaitLoads()
	go a.beacon.run(bg)
	if cfg.SnapshotDir != "" {
		go a.runSnapshots(bg)
	}
	a.buildServers(mux)
	built = true
	return a, nil
}

// openDatabase connects to the database and migrates it under an advisory lock.
func openDatabase(ctx context.Context, cfg Config, log *zap.Logger) (*persistence.DB, error) {
	db, err := persistence.Open(ctx, cfg.DatabaseURL, log.Named("db"))
	if err != nil {
		return nil, err
	}
	if _, err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// newApp is the process over db before anything is built: its identity, its schema and
// version, its runtime and pool metrics.
func newApp(cfg Config, log *zap.Logger, db *persistence.DB) *App {
	a := &App{cfg: cfg, log: log, DB: db, Metrics: httpio.NewMetrics(), Engine: engine.New(nil),
		processID: newProcessID(), version: cfg.Version, ready: make(chan struct{}),
		snapshotLimit: newSnapshotLimit()}
	a.beacon = newBeacon(db.Maintenance, a.processID, a.heartbeat, log.Named("heartbeat"))
	if ms, err := persistence.Migrations(); err == nil && len(ms) > 0 {
		a.schema = ms[len(ms)-1].Version
	}
	if a.version == "" {
		a.version = buildVersion()
	}
	a.Metrics.RegisterRuntime()
	registerPoolMetrics(a.Metrics, a.DB.PoolStats)
	return a
}

// startEngine starts the engine's load and sync in the background (bg), from a snapshot
// when one is restored, and returns what was restored (nil: none).
func (a *App) startEngine(ctx, bg context.Context) *restored {
	res := a.restore(ctx)
	a.Restored = res != nil
	if res != nil {
		a.sync.seed = res.engine
		if a.Joining {
			// What is left (the engine's build, the counters, the catch-up) is seconds of
			// work, not minutes: a larger share keeps the start short (snapshots.go).
			a.DB.Participants.SetLoadDuty(max(a.cfg.JoinLoadShare, snapshotJoinShare))
		}
	}
	go a.sync.run(bg)
	go a.trackPositions(bg)
	a.registerEngineMetrics()
	return res
}

// newMux is the main listener's mux with the process's own routes: health, readiness, the
// OpenAPI documents and, without an admin listener, /metrics.
func (a *App) newMux() *httpio.Mux {
	mux := httpio.NewMux(a.Metrics, a.log.Named("http"))
	mux.Handle("GET", "/healthz", a.healthz)
	mux.Handle("GET", "/readyz", a.readyz)
	openapi.Register(mux) // the OpenAPI documents, public
	if a.cfg.AdminAddr == "" {
		mux.Handle("GET", "/metrics", a.Metrics.Handler)
	}
	return mux
}

// buildInterfaces builds the panel, the postback worker, the services, supply, the router
// and the buyer interfaces, registers their routes on mux and starts what runs in the
// background (bg) of supply and the router.
func (a *App) buildInterfaces(ctx, bg context.Context, mux *httpio.Mux, res *restored) error {
	cfg, db, log := a.cfg, a.DB, a.log
	// One table of failed authentications per client address for every authenticated route.
	fails := httpio.NewAuthFailures(cfg.AuthFailRate, cfg.AuthFailBurst)
	seed := a.buildPanel(ctx, res)
	a.Payouts = payout.NewWorker(db.Outbox, db.Feed, cfg.Postbacks, log.Named("postback"))
	if err := a.buildSupply(ctx, mux, fails, seed); err != nil {
		return err
	}
	if err := a.buildRouter(mux, seed); err != nil {
		return err
	}
	a.seedLoads(res)
	a.startRouting(bg)
	a.buildBuyerAPI(mux, fails)
	return nil
}

// buildPanel sets the panel up, restored or reserved, with the allocation over it, and
// returns supply's part of the snapshot restored (nil: none).
func (a *App) buildPanel(ctx context.Context, res *restored) *supply.PanelSeed {
	cfg, db, log := a.cfg, a.DB, a.log
	var seed *supply.PanelSeed
	if res != nil {
		a.Panel, seed = res.panel, res.supply
	} else {
		a.Panel = engine.NewPanel()
		reservePanel(ctx, db, a.Panel, log)
	}
	setAllocation(a.Engine, &cfg, a.Panel)
	a.weighted = make(chan struct{})
	a.settled = make(chan struct{})
	if !cfg.weightedAllocation() {
		close(a.weighted)
	}
	return seed
}

// buildSupply builds the services supply and the router share, and supply over them, and
// registers supply's routes (and the demo partner's page) on mux.
func (a *App) buildSupply(ctx context.Context, mux *httpio.Mux, fails *httpio.AuthFailures, seed *supply.PanelSeed) error {
	cfg, db, log := a.cfg, a.DB, a.log
	scfg := cfg.Supply
	scfg.PublicURL = cfg.PublicURL
	slog := log.Named("supply")
	cat, err := a.newServices(ctx, db, cfg, slog)
	if err != nil {
		return err
	}
	if a.Supply, err = supply.New(ctx, supply.Deps{Participants: db.Participants, Feed: db.Feed, Support: db.Participants, Offers: db.Insights, Deliveries: db.Outbox,
		Statements: db.Ledger, Languages: db.Catalog, Catalog: cat, Partners: a.Partners, Quality: a.Quality,
		Engine: a.Engine, Panel: a.Panel, Log: slog, Config: scfg, AuthFailures: fails, Postbacks: a.Payouts, Seed: seed}); err != nil {
		return err
	}
	a.Supply.Register(mux)
	if cfg.DemoPartner != nil {
		supply.RegisterDemoPartner(mux, *cfg.DemoPartner, log.Named("demo"))
	}
	return nil
}

// buildRouter builds the router (entries, callbacks) and the fleet's upkeep (the sweeper),
// hands the panel seed the router's entries heard and the router the quality service, and
// registers the interfaces' metrics and the router's routes on mux.
func (a *App) buildRouter(mux *httpio.Mux, seed *supply.PanelSeed) error {
	cfg, db, log := a.cfg, a.DB, a.log
	rcfg := cfg.Router
	rcfg.PublicURL = cfg.PublicURL
	var err error
	if a.Router, err = router.New(router.Deps{Accounts: db.Accounts, Campaigns: db.Campaigns, Participants: db.Participants, Sessions: db.Sessions, Feed: db.Feed,
		Completer: db.Maintenance, Engine: a.Engine, Panel: a.Panel, Key: a.Partners.Key(),
		Log: log.Named("router"), Config: rcfg, Publisher: a.Partners.PublisherByID, Postbacks: a.Payouts}); err != nil {
		return err
	}
	// The fleet's upkeep logs as "router", the name operators' log queries select the
	// sweeper's messages by.
	if a.Maintenance, err = maintenance.New(maintenance.Deps{Store: db.Maintenance, Log: log.Named("router"),
		Config: cfg.Maintenance, Released: a.Router.CountsChanged}); err != nil {
		return err
	}
	if seed != nil {
		seed.Heard = a.Router.EntriesHeard()
	}
	a.Router.SetQuality(a.Quality, cfg.RouterQuality)
	a.Quality.RegisterMetrics(a.Metrics)
	a.Supply.RegisterMetrics(a.Metrics)
	mirror.RegisterMetrics(a.Metrics)
	a.Router.RegisterMetrics(a.Metrics)
	a.Maintenance.RegisterMetrics(a.Metrics)
	a.Router.Register(mux)
	return nil
}

// startRouting starts in bg the router, the fleet's upkeep, supply and the services, the
// router and supply hearing of the engine's campaign changes.
func (a *App) startRouting(bg context.Context) {
	panel := "panel"
	if a.Restored {
		panel = "catch-up"
	}
	a.phases.timeLoads(bg, []phaseLoad{
		{panel, a.Supply.Loaded(), func() int64 { return int64(a.Panel.Len()) }},
		{"counts", a.Router.CountsLoaded(), nil},
		{"listen", a.Router.EntriesHeard(), nil},
		{"blocks", a.Quality.BlocksLoaded(), nil},
		{"allocation", a.weighted, nil},
		{"heap", a.settled, nil},
	}, a.ready)
	a.Router.Start(bg)
	// The sweeper starts once this process's loads are in (maintenance.Fleet.Start): ready
	// is closed by startWorkers, where a joining start-up also ends.
	a.Maintenance.Start(bg, a.ready)
	// Both hear of every campaign change before supply starts its panel load, so that a
	// relationship created during the load reaches the panel's entry history.
	changed := func(ids []int64) {
		a.Router.CampaignsChanged(ids)
		a.Supply.CampaignsChanged(ids)
	}
	a.sync.changed.Store(&changed)
	a.Supply.Start(bg)
	a.Partners.Start(bg)
	a.Quality.Start(bg)
}

// buildBuyerAPI builds the buyer interfaces (/api/v1, insights, the console) and registers
// their routes on mux.
func (a *App) buildBuyerAPI(mux *httpio.Mux, fails *httpio.AuthFailures) {
	cfg, db, log := a.cfg, a.DB, a.log
	buyerAPI := admin.New(admin.Deps{
		Buyers:       db.Accounts,
		Suppliers:    db.Accounts,
		Accounts:     db.Accounts,
		Publishers:   db.Accounts,
		Sessions:     db.Operators,
		Campaigns:    db.Campaigns,
		Quotas:       db.Campaigns,
		Screeners:    db.Campaigns,
		Catalog:      db.Catalog,
		Feasibility:  db.Catalog,
		Results:      db.Insights,
		Activity:     db.Insights,
		Market:       db.Insights,
		Quality:      db.Quality,
		Processes:    db.Maintenance,
		Deliveries:   db.Outbox,
		Postbacks:    db.Outbox,
		Ledger:       db.Ledger,
		Idempotency:  db,
		Tx:           db,
		Log:          log.Named("admin"),
		Environment:  cfg.Environment,
		PublicURL:    cfg.PublicURL,
		Limiter:      httpio.NewRateLimiter(cfg.RateLimit, cfg.RateBurst),
		AuthFailures: fails,
		Panel:        a.Panel,
		Outcomes:     &router.BuyerOps{Verdicts: db.Sessions, Campaigns: db.Campaigns, Feed: db.Feed, PublicURL: cfg.PublicURL, Log: log.Named("outcomes"), Quality: a.Quality},
		Webhooks:     a.Payouts,
		Key:          a.Partners.Key(),
		EngineStatus: a.engineStatus,
	})
	buyerAPI.Register(mux)
	buyerAPI.RegisterConsole(mux)
}

// startWorkers starts in bg the postback worker, the wait for the loads (which ends a
// joining start-up, endJoin, and closes ready), the allocation's refresh and the heap's
// settling.
func (a *App) startWorkers(bg context.Context, endJoin func()) {
	a.Payouts.RegisterMetrics(a.Metrics)
	go a.Payouts.Run(bg)
	go a.afterLoads(bg, func() {
		if endJoin != nil {
			endJoin()
		}
		close(a.ready)
	})
	if a.cfg.weightedAllocation() {
		go a.refreshWeights(bg)
	}
	go settle(bg, a.Supply.Loaded(), append(a.dataLoads(), load{"allocation", a.weighted}), a.Panel, !a.Joining, a.log, a.settled)
}

// refreshWeights computes a weighted allocation's weights once the campaigns, the panel and
// the counters are in, then every AllocationEvery until bg ends.
func (a *App) refreshWeights(bg context.Context) {
	for _, l := range a.dataLoads() {
		select {
		case <-l.loaded:
		case <-bg.Done():
			return
		}
	}
	refreshAllocation(bg, a.Engine, a.cfg.AllocationEvery, a.log.Named("allocation"), func() { close(a.weighted) })
}

// awaitLoads waits up to 10 s for every load to be in; past it the process serves while
// they load.
func (a *App) awaitLoads() {
	deadline := time.After(10 * time.Second)
	for _, l := range a.loads() {
		select {
		case <-l.loaded:
		case <-deadline:
			a.log.Warn("not loaded after 10s; serving while it loads", zap.String("what", l.name))
			return
		}
	}
}

// buildServers builds the main listener's server over mux, the admin listener's when
// configured, and their metrics.
func (a *App) buildServers(mux *httpio.Mux) {
	cfg, log := a.cfg, a.log
	a.server = httpio.NewServer(mux.Handler, cfg.HTTP, log.Named("http"))
	if cfg.AdminAddr != "" {
		a.admin = httpio.NewServer(a.adminHandler(), adminHTTP(cfg.HTTP), log.Named("admin_http"))
	}
	a.Metrics.Gauge("switchboard_http_refused_requests_total", "counter",
		"Requests refused before reaching a handler: malformed, too slow, TLS on the plain port.",
		func() []httpio.Sample { return []httpio.Sample{{Value: float64(a.server.Refused())}} })
	registerConnMetrics(a.Metrics, a.server)
}

// Serve answers requests on ln until Shutdown.
func (a *App) Serve(ln net.Listener) error {
	a.log.Info("serving", zap.String("addr", ln.Addr().String()), zap.String("public_url", a.cfg.PublicURL),
		zap.String("environment", a.cfg.Environment))
	return a.server.Serve(ln)
}

// Shutdown stops accepting requests, drains those in flight until ctx ends, and closes the
// database.
func (a *App) Shutdown(ctx context.Context) error {
	if a.cfg.SnapshotDir != "" {
		// Before anything stops: the memory is current, and the next start on this machine
		// catches up from here.
		switch err := a.saveSnapshot(1); {
		case errors.Is(err, errNoSnapshot):
			a.log.Info("no snapshot written at shutdown: the process had not loaded", zap.Error(err))
		case err != nil:
			a.log.Warn("snapshot not written at shutdown", zap.Error(err))
		}
	}
	a.stop()
	err := a.server.Shutdown(ctx)
	if a.admin != nil {
		err = errors.Join(err, a.admin.Shutdown(ctx))
	}
	a.Maintenance.Close()
	a.Router.Close() // after the server: entries in flight still commit
	// Postbacks in flight record their result before the pool closes.
	select {
	case <-a.Payouts.Done():
	case <-ctx.Done():
	}
	if herr := a.beacon.end(ctx); herr != nil {
		a.log.Warn("heartbeat row not deleted at shutdown", zap.Error(herr))
	}
	a.DB.Close()
	return err
}

func (a *App) healthz(ctx *fasthttp.RequestCtx) {
	httpio.WriteJSON(ctx, fasthttp.StatusOK, map[string]string{"status": "ok"})
}

// load is one of the loads a process must finish before it is ready.
type load struct {
	name   string
	loaded <-chan struct{} // closed once done
}

// loads are what ready means: every answer is the one a loaded process gives. The
// campaigns; the panel (else known participants get the profile survey); the counters
// (else full quotas look open); the allocation's first weights (else offers are ranked
// otherwise than by the processes beside it); the heap settled after the loads (else the
// collector's first cycle falls into the first minute of traffic).
func (a *App) loads() []load {
	return append(a.dataLoads(), load{"allocation", a.weighted}, load{"heap", a.settled})
}

// dataLoads are the loads of what the process reads from the database.
func (a *App) dataLoads() []load {
	return []load{{"engine", a.sync.loaded}, {"panel", a.Supply.Loaded()}, {"counters", a.Router.CountsLoaded()}}
}

// Weighted is closed once the process ranks offers with its allocation's first weights:
// at once under greedy, after the first refresh under balanced.
func (a *App) Weighted() <-chan struct{} { return a.weighted }

func (a *App) readyz(ctx *fasthttp.RequestCtx) {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	checks := map[string]string{"database": "ok", "geoip": a.Quality.GeoIPStatus()}
	status := fasthttp.StatusOK
	if err := a.DB.Ping(c); err != nil {
		checks["database"] = "unreachable"
		status = fasthttp.StatusServiceUnavailable
	}
	for _, c := range a.loads() {
		checks[c.name] = "ok"
		select {
		case <-c.loaded:
		default:
			checks[c.name] = "not loaded"
			status = fasthttp.StatusServiceUnavailable
		}
	}
	httpio.WriteJSON(ctx, status, checks)
}
