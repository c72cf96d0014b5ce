// Package app assembles one Switchboard server from a Config: the database, the engine and
// every HTTP interface on one listener. cmd/switchboard fills the Config from flags; tests
// fill it directly.
package app

import (
	"context"
	"errors"
	"net"
	"strings"
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

// Config is everything a server needs; it is filled from flags by cmd/switchboard.
type Config struct {
	Addr string // listen address, e.g. 127.0.0.1:8080
	// AdminAddr, when set, is the operators' listener: /metrics, /readyz, /healthz and
	// /debug/pprof/ are served there (ServeAdmin) and /metrics leaves the main listener.
	// Empty: /metrics on the main listener and no pprof.
	AdminAddr   string
	DatabaseURL string  // PostgreSQL URL
	PublicURL   string  // base of every URL handed out and of every hash checked
	Environment string  // staging or live
	RateLimit   float64 // buyer requests per second per token; <= 0 disables
	RateBurst   int     // buyer burst per token
	// AuthFailRate and AuthFailBurst limit failed authentications per client address on the
	// buyer, insights and supply routes (default 2/s, burst 10; negative rate: off); past
	// them a client gets 429 with Retry-After until its failures have drained.
	AuthFailRate  float64
	AuthFailBurst int
	// HTTP bounds the server's read and write times and body size (httpio.ServerConfig).
	HTTP httpio.ServerConfig
	// RebuildEvery is the period of the engine's safety check under NOTIFY (default 60 s):
	// it re-reads the campaigns changed since the last one, and is a full rebuild from the
	// database at least every 30 minutes while campaigns change (enginesync.go).
	RebuildEvery time.Duration
	// Supply tunes /supply_api/v4 (top k, answer cache, ...); its PublicURL and Environment
	// are taken from the fields above.
	Supply supply.Config
	// Router tunes entry routing and callbacks; its PublicURL is taken from the field above.
	Router router.Config
	// Partners tunes the directory of publishers and service keys (reloads, per-publisher
	// rate limits); its Environment is taken from the field above.
	Partners partners.Config
	// Quality tunes the participant quality defenses (docs/quality.md).
	Quality quality.Config
	// Maintenance tunes the fleet's upkeep: the sweeper, partitions of sessions, the outbox's
	// retention, planner statistics.
	Maintenance maintenance.Config
	// RouterQuality tunes the routing side of participant quality (speeders); the rest is
	// Quality.
	RouterQuality router.QualityConfig
	// Postbacks tunes the partner postback worker (timeouts, backoff, the 24 h retry window).
	Postbacks payout.WorkerConfig
	// Allocation is the policy that ranks a participant's offers (docs/allocation.md); the
	// zero value is engine.AllocationGreedy.
	Allocation engine.Allocation
	// AllocationEvery is the period at which a weighted allocation recomputes its weights
	// off the request path (default 5 min).
	AllocationEvery time.Duration
	// JoinLoadShare is the share of wall-clock time, in (0, 1], that the start-up loads of a
	// process joining serving ones may work (join.go; 1: unpaced; 0: DefaultJoinLoadShare):
	// lower keeps the serving processes' latency, at the cost of a longer start.
	JoinLoadShare float64
	// SnapshotDir, when set, is where the process writes its snapshot every SnapshotEvery and
	// at graceful shutdown, and the snapshot it starts from (snapshots.go).
	SnapshotDir string
	// SnapshotEvery is the period of the local snapshot (default DefaultSnapshotEvery).
	SnapshotEvery time.Duration
	// SnapshotMaxAge is the age past which a snapshot is refused at start (default
	// DefaultSnapshotMaxAge): the catch-up of an older one reads too much.
	SnapshotMaxAge time.Duration
	// SnapshotPeer, when set, is the admin address (host:port or URL) of a running process
	// whose snapshot this one starts from, before SnapshotDir's.
	SnapshotPeer string
	// DemoPartner, when set (serve --demo), serves the demo supply partner's return page at
	// supply.DemoPartnerPath, where the demo's participants land after a survey.
	DemoPartner *supply.DemoPartner
	// Version is the binary's version as its heartbeat row shows it (cmd/switchboard fills
	// it, stamps included); empty: read from the build information.
	Version string
}

// withDefaults fills what the caller left empty.
func (c Config) withDefaults() Config {
	if c.Addr == "" {
		c.Addr = "127.0.0.1:8080"
	}
	if c.PublicURL == "" {
		c.PublicURL = "http://" + c.Addr
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	if c.Environment == "" {
		c.Environment = persistence.EnvStaging
	}
	if c.RateLimit == 0 {
		c.RateLimit = 100
	}
	if c.RateBurst == 0 {
		c.RateBurst = 200
	}
	if c.AuthFailRate == 0 {
		c.AuthFailRate = 2
	}
	if c.AuthFailBurst == 0 {
		c.AuthFailBurst = 10
	}
	if c.RebuildEvery == 0 {
		c.RebuildEvery = time.Minute
	}
	if c.AllocationEvery <= 0 {
		c.AllocationEvery = 5 * time.Minute
	}
	if c.JoinLoadShare == 0 {
		c.JoinLoadShare = DefaultJoinLoadShare
	}
	if c.SnapshotEvery <= 0 {
		c.SnapshotEvery = DefaultSnapshotEvery
	}
	if c.SnapshotMaxAge <= 0 {
		c.SnapshotMaxAge = DefaultSnapshotMaxAge
	}
	return c
}

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
	beatDone           chan struct{} // closed when the heartbeat loop has stopped
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
}

// New connects to the database, migrates it under an advisory lock and builds every
// interface. It does not listen yet.
func New(ctx context.Context, cfg Config, log *zap.Logger) (*App, error) {
	cfg = cfg.withDefaults()
	if !persistence.ValidEnvironment(cfg.Environment) {
		return nil, errors.New("environment must be staging or live")
	}
	db, err := persistence.Open(ctx, cfg.DatabaseURL, log.Named("db"))
	if err != nil {
		return nil, err
	}
	if _, err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	a := &App{cfg: cfg, log: log, DB: db, Metrics: httpio.NewMetrics(), Engine: engine.New(nil),
		processID: newProcessID(), version: cfg.Version, beatDone: make(chan struct{}), ready: make(chan struct{}),
		snapshotLimit: newSnapshotLimit()}
	if ms, err := persistence.Migrations(); err == nil && len(ms) > 0 {
		a.schema = ms[len(ms)-1].Version
	}
	if a.version == "" {
		a.version = buildVersion()
	}
	a.Metrics.RegisterRuntime()
	a.registerPoolMetrics()

	// The engine loads in the background, beside the panel and the counters (Start below);
	// /readyz reports when all three are in.
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	a.stop = stop
	a.sync = newEngineSync(db, a.Engine, log.Named("engine"), cfg.RebuildEvery)
	endJoin := a.joinGently(ctx)
	a.Joining = endJoin != nil
	built := false
	defer func() {
		if !built && endJoin != nil {
			endJoin() // New failed: the loads will not come in
		}
	}()
	res := a.restore(ctx)
	a.Restored = res != nil
	if res != nil {
		a.sync.seed = res.engine
		if a.Joining {
			// What is left (the engine's build, the counters, the catch-up) is seconds of
			// work, not minutes: a larger share keeps the start short (snapshots.go).
			a.DB.Participants.SetLoadDuty(max(cfg.JoinLoadShare, snapshotJoinShare))
		}
	}
	go a.sync.run(bg)
	go a.trackPositions(bg)
	a.registerEngineMetrics()

	mux := httpio.NewMux(a.Metrics, log.Named("http"))
	mux.Handle("GET", "/healthz", a.healthz)
	mux.Handle("GET", "/readyz", a.readyz)
	openapi.Register(mux) // the OpenAPI documents, public
	if cfg.AdminAddr == "" {
		mux.Handle("GET", "/metrics", a.Metrics.Handler)
	}
	// One table of failed authentications per client address for every authenticated route.
	fails := httpio.NewAuthFailures(cfg.AuthFailRate, cfg.AuthFailBurst)
	scfg := cfg.Supply
	scfg.PublicURL = cfg.PublicURL
	var seed *supply.PanelSeed
	if res != nil {
		a.Panel, seed = res.panel, res.supply
	} else {
		a.Panel = engine.NewPanel()
		reservePanel(ctx, db, a.Panel, log)
	}
	a.Engine.SetAllocation(cfg.Allocation, a.Panel)
	a.weighted = make(chan struct{})
	a.settled = make(chan struct{})
	if !cfg.Allocation.Weighted() {
		close(a.weighted)
	}
	a.Payouts = payout.NewWorker(db.Outbox, db.Feed, cfg.Postbacks, log.Named("postback"))
	slog := log.Named("supply")
	cat, err := a.newServices(ctx, db, cfg, slog)
	if err != nil {
		stop()
		db.Close()
		return nil, err
	}
	if a.Supply, err = supply.New(ctx, supply.Deps{Participants: db.Participants, Feed: db.Feed, Support: db.Participants, Offers: db.Insights, Deliveries: db.Outbox,
		Statements: db.Ledger, Languages: db.Catalog, Catalog: cat, Partners: a.Partners, Quality: a.Quality,
		Engine: a.Engine, Panel: a.Panel, Log: slog, Config: scfg, AuthFailures: fails, Postbacks: a.Payouts, Seed: seed}); err != nil {
		stop()
		db.Close()
		return nil, err
	}
	a.Supply.Register(mux)
	if cfg.DemoPartner != nil {
		supply.RegisterDemoPartner(mux, *cfg.DemoPartner, log.Named("demo"))
	}
	rcfg := cfg.Router
	rcfg.PublicURL = cfg.PublicURL
	if a.Router, err = router.New(router.Deps{Accounts: db.Accounts, Campaigns: db.Campaigns, Participants: db.Participants, Sessions: db.Sessions, Feed: db.Feed,
		Completer: db.Maintenance, Engine: a.Engine, Panel: a.Panel, Key: a.Partners.Key(),
		Log: log.Named("router"), Config: rcfg, Publisher: a.Partners.PublisherByID, Postbacks: a.Payouts}); err != nil {
		stop()
		db.Close()
		return nil, err
	}
	// The fleet's upkeep logs as "router", the name operators' log queries select the
	// sweeper's messages by.
	if a.Maintenance, err = maintenance.New(maintenance.Deps{Store: db.Maintenance, Log: log.Named("router"),
		Config: cfg.Maintenance, Released: a.Router.CountsChanged}); err != nil {
		stop()
		db.Close()
		return nil, err
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
	a.Router.Start(bg)
	// The sweeper starts once this process's loads are in (maintenance.Fleet.Start): ready
	// is closed below, where a joining start-up also ends.
	ready := a.ready
	a.Maintenance.Start(bg, ready)
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
	a.Payouts.RegisterMetrics(a.Metrics)
	go a.Payouts.Run(bg)
	go a.afterLoads(bg, func() {
		if endJoin != nil {
			endJoin()
		}
		close(ready)
	})
	if cfg.Allocation.Weighted() {
		go func() {
			// The weights are computed from the campaigns, the panel and the counters.
			for _, l := range a.dataLoads() {
				select {
				case <-l.loaded:
				case <-bg.Done():
					return
				}
			}
			refreshAllocation(bg, a.Engine, cfg.AllocationEvery, log.Named("allocation"), func() { close(a.weighted) })
		}()
	}
	go settle(bg, a.Supply.Loaded(), append(a.dataLoads(), load{"allocation", a.weighted}), a.Panel, !a.Joining, log, a.settled)
	deadline := time.After(10 * time.Second)
waiting:
	for _, l := range a.loads() {
		select {
		case <-l.loaded:
		case <-deadline:
			log.Warn("not loaded after 10s; serving while it loads", zap.String("what", l.name))
			break waiting
		}
	}
	go a.runHeartbeat(bg)
	if cfg.SnapshotDir != "" {
		go a.runSnapshots(bg)
	}

	a.server = httpio.NewServer(mux.Handler, cfg.HTTP, log.Named("http"))
	if cfg.AdminAddr != "" {
		a.admin = httpio.NewServer(a.adminHandler(), adminHTTP(cfg.HTTP), log.Named("admin_http"))
	}
	a.Metrics.Gauge("switchboard_http_refused_requests_total", "counter",
		"Requests refused before reaching a handler: malformed, too slow, TLS on the plain port.",
		func() []httpio.Sample { return []httpio.Sample{{Value: float64(a.server.Refused())}} })
	a.registerConnMetrics()
	built = true
	return a, nil
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
	if herr := a.endHeartbeat(ctx); herr != nil {
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

// registerConnMetrics reports the main listener's connections against their limits
// (docs/operations.md, "Connections").
func (a *App) registerConnMetrics() {
	conns := func(f func(httpio.ConnStats) float64) func() []httpio.Sample {
		return func() []httpio.Sample { return []httpio.Sample{{Value: f(a.server.Connections())}} }
	}
	a.Metrics.Gauge("switchboard_http_connections", "gauge", "Client connections open.",
		conns(func(c httpio.ConnStats) float64 { return float64(c.Open) }))
	a.Metrics.Gauge("switchboard_http_connections_limit", "gauge", "Client connections allowed at once (0: no limit).",
		conns(func(c httpio.ConnStats) float64 { return float64(c.Limit) }))
	a.Metrics.Gauge("switchboard_http_connections_per_address_limit", "gauge",
		"Client connections allowed at once from one address (0: no limit).",
		conns(func(c httpio.ConnStats) float64 { return float64(c.PerAddrLimit) }))
	a.Metrics.Gauge("switchboard_http_connections_refused_total", "counter",
		"Connections closed at once because a limit was reached and no connection was idle.",
		conns(func(c httpio.ConnStats) float64 { return float64(c.Refused) }))
	a.Metrics.Gauge("switchboard_http_connections_shed_total", "counter",
		"Idle or silent connections closed to make room for new ones at a limit, or to free a descriptor.",
		conns(func(c httpio.ConnStats) float64 { return float64(c.Shed) }))
	a.Metrics.Gauge("switchboard_http_accept_errors_total", "counter",
		"Accepts that failed (out of file descriptors, a connection aborted) and were retried after a backoff.",
		conns(func(c httpio.ConnStats) float64 { return float64(c.AcceptErrors) }))
}

func (a *App) registerPoolMetrics() {
	stat := func(f func() float64) func() []httpio.Sample {
		return func() []httpio.Sample { return []httpio.Sample{{Value: f()}} }
	}
	p := a.DB.Pool
	a.Metrics.Gauge("switchboard_db_pool_acquired_conns", "gauge", "Connections in use.",
		stat(func() float64 { return float64(p.Stat().AcquiredConns()) }))
	a.Metrics.Gauge("switchboard_db_pool_idle_conns", "gauge", "Idle connections.",
		stat(func() float64 { return float64(p.Stat().IdleConns()) }))
	a.Metrics.Gauge("switchboard_db_pool_total_conns", "gauge", "Open connections.",
		stat(func() float64 { return float64(p.Stat().TotalConns()) }))
	a.Metrics.Gauge("switchboard_db_pool_max_conns", "gauge", "Pool size limit.",
		stat(func() float64 { return float64(p.Stat().MaxConns()) }))
	a.Metrics.Gauge("switchboard_db_pool_acquire_wait_total", "counter", "Acquires that had to wait.",
		stat(func() float64 { return float64(p.Stat().EmptyAcquireCount()) }))
}
