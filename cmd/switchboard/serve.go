package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/cmd/switchboard/app"
	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
)

// errNoDatabase is serve's refusal to guess a database: a production process started with
// DATABASE_URL unset must fail, not start an empty cluster of its own next to the binary.
var errNoDatabase = errors.New("serve: no database: set --database-url or DATABASE_URL, " +
	"or pass --dev to start the project-local PostgreSQL under ./.data")

// defaultCommitCycle is serve's --commit-cycle: at 1,000 entries/s PostgreSQL spends about
// 40% less per entry (fewer, larger transactions) for about 4 ms more per entry at the
// median; at the rates where a commit takes longer than the cycle, or eight entries queue
// within it, nothing waits (docs/performance.md, "A commit cycle").
const defaultCommitCycle = 5 * time.Millisecond

// defaultEntryWorkers is serve's --entry-workers.
const defaultEntryWorkers = 1

// runServe is `switchboard serve`: the process that serves every interface until ctx is
// done, then shuts down gracefully.
func runServe(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("serve")
	var cfg app.Config
	x := serveFlags(f, &cfg)
	if err := f.parse(args); err != nil {
		return err
	}
	if err := checkServeConfig(cfg, *x.dev); err != nil {
		return err
	}
	log := newLogger()
	defer log.Sync() //nolint:errcheck
	a, err := startApp(ctx, &cfg, x, log, out)
	if err != nil {
		return err
	}
	return serveUntilDone(ctx, a, cfg, log, *x.drain)
}

// serveExtras are serve's flags that are not app.Config's.
type serveExtras struct {
	dev, demo *bool
	drain     *time.Duration
	gcPercent *int
	memLimit  *string
}

// serveFlags declares serve's flags into cfg and returns the others.
func serveFlags(f flags, cfg *app.Config) serveExtras {
	var x serveExtras
	f.StringVar(&cfg.Addr, "addr", "127.0.0.1:8080", "listen address")
	f.StringVar(&cfg.AdminAddr, "admin-addr", "", "operators' listen address for /metrics, /readyz and /debug/pprof/ (default: /metrics on --addr, no pprof)")
	f.StringVar(&cfg.DatabaseURL, "database-url", "", "PostgreSQL URL (required unless --dev)")
	x.dev = f.Bool("dev", false, "without a database URL, start and use the project-local PostgreSQL cluster under ./.data (make run)")
	f.StringVar(&cfg.PublicURL, "public-url", "", "base of every URL handed out and hash checked (default http://<addr>)")
	f.StringVar(&cfg.Environment, "environment", persistence.EnvStaging, "staging or live: which tokens this deployment accepts")
	f.Float64Var(&cfg.RateLimit, "rate-limit", 100, "buyer requests per second per token (negative: off)")
	f.IntVar(&cfg.RateBurst, "rate-burst", 200, "buyer burst per token")
	f.Float64Var(&cfg.AuthFailRate, "auth-fail-rate", 2, "failed authentications per second per client address on buyer, insights and supply routes, then 429 (negative: off)")
	f.IntVar(&cfg.AuthFailBurst, "auth-fail-burst", 10, "failed authentications a client address may make in a burst")
	f.Float64Var(&cfg.Partners.PublisherRateLimit, "publisher-rate-limit", 2000, "supply API requests per second per publisher, per process (negative: off)")
	f.IntVar(&cfg.Partners.PublisherRateBurst, "publisher-rate-burst", 4000, "supply API burst per publisher, per process")
	f.DurationVar(&cfg.HTTP.HeaderTimeout, "header-timeout", 5*time.Second, "time a client has to send a request header")
	f.DurationVar(&cfg.HTTP.BodyTimeout, "body-timeout", 30*time.Second, "most time a client has to send a request body once its header is in")
	f.IntVar(&cfg.HTTP.BodyMinRate, "body-min-rate", 64<<10, "slowest expected body upload in bytes/s: a body gets header-timeout + length/rate, at most body-timeout")
	f.DurationVar(&cfg.HTTP.WriteTimeout, "write-timeout", time.Minute, "time allowed to write one response")
	f.DurationVar(&cfg.HTTP.IdleTimeout, "idle-timeout", 2*time.Minute, "how long a kept-alive connection may wait for its next request")
	f.IntVar(&cfg.HTTP.MaxConns, "max-conns", 0, "client connections open at once; past it the oldest idle one is closed to make room, a new one refused only when none is idle (0: three quarters of the file descriptor limit, LimitNOFILE; negative: no limit)")
	f.IntVar(&cfg.HTTP.MaxConnsPerIP, "max-conns-per-ip", 0, "client connections open at once from one address, an IPv6 /64 (0: a quarter of --max-conns; negative: no limit; behind a proxy every client has its address: set -1 there)")
	f.Float64Var(&cfg.HTTP.AccessLogSample, "access-log-sample", 0.01, "fraction of requests, 0 to 1, written to the access log (method, path without query, status, duration, bytes, X-Request-Id); 5xx answers always are")
	f.BoolVar(&cfg.Postbacks.AllowPrivate, "outbound-allow-private", false, "let buyer webhooks, partner postbacks' redirects and test sends connect to loopback, private and link-local addresses too (default: refused, so that no buyer or partner reaches this network through the server; docs/payouts.md, \"Outbound calls\")")
	f.BoolVar(&cfg.Postbacks.AllowPrivate, "webhook-allow-private", false, "the former name of --outbound-allow-private")
	f.DurationVar(&cfg.Maintenance.OutboxRetention, "outbox-retention", 90*24*time.Hour, "delivered postbacks and webhooks older than this leave the outbox (negative: kept forever)")
	f.DurationVar(&cfg.Router.GroupCommit.Cycle, "commit-cycle", defaultCommitCycle, "least time between the starts of two group commits of entries (and of callbacks): below the rate that fills a cycle, an entry waits up to this for others to share its transaction (0: a commit starts as soon as the last one is done)")
	f.IntVar(&cfg.Router.EntryWorkers, "entry-workers", defaultEntryWorkers, "batches of entries decided at once, each in its own transaction (a campaign's entries always share one)")
	f.DurationVar(&cfg.Maintenance.Partitions.Period, "session-partition-period", 30*24*time.Hour, "time one new partition of sessions should hold at the current entry rate (docs/operations.md, \"A year of sessions\")")
	f.Float64Var(&cfg.JoinLoadShare, "join-load-share", app.DefaultJoinLoadShare, "share of wall-clock time, above 0 and at most 1, that the start-up loads of a process joining serving ones may work (1: unpaced): lower keeps the serving processes' latency, at the cost of a longer start (docs/operations.md, \"Adding a process beside serving ones\")")
	f.StringVar(&cfg.SnapshotDir, "snapshot-dir", "", "directory of this machine's snapshot: written every --snapshot-every and at graceful shutdown, and started from (docs/operations.md, \"Snapshots: scaling out, restarting and upgrading\"; default: none)")
	f.DurationVar(&cfg.SnapshotEvery, "snapshot-every", app.DefaultSnapshotEvery, "period of the local snapshot (--snapshot-dir)")
	f.DurationVar(&cfg.SnapshotMaxAge, "snapshot-max-age", app.DefaultSnapshotMaxAge, "a snapshot written longer ago is refused at start, and the process loads from the database")
	f.StringVar(&cfg.SnapshotPeer, "snapshot-peer", "", "admin address (host:port or URL) of a running process to start from: its snapshot, GET /admin/snapshot, before --snapshot-dir's (default: none)")
	qualityFlags(f, cfg) // quality.go
	allocationFlags(f, cfg)
	x.demo = f.Bool("demo", false, "seed demo data when the database is empty, print its credentials at every start and serve the demo partner's return page")
	x.drain = f.Duration("shutdown-timeout", 15*time.Second, "how long in-flight requests may take to finish on shutdown")
	x.gcPercent = f.Int("gc-percent", defaultGCPercent, "garbage collection target percentage: the heap grows to (1 + this/100) × the live heap before a collection (Go's default is 100; GOGC wins when set)")
	x.memLimit = f.String("memory-limit", "", "soft memory limit of the Go runtime, e.g. 3GiB, or off (default: 80% of the cgroup's memory limit, else of the machine's memory; GOMEMLIMIT wins when set)")
	return x
}

// checkServeConfig refuses a configuration serve cannot start with (dev: --dev).
func checkServeConfig(cfg app.Config, dev bool) error {
	if cfg.DatabaseURL == "" && !dev {
		return errNoDatabase
	}
	if cfg.Router.EntryWorkers < 1 {
		return fmt.Errorf("--entry-workers must be at least 1, got %d", cfg.Router.EntryWorkers)
	}
	if cfg.Router.GroupCommit.Cycle < 0 {
		return fmt.Errorf("--commit-cycle must not be negative, got %v", cfg.Router.GroupCommit.Cycle)
	}
	if r := cfg.JoinLoadShare; !(r > 0 && r <= 1) {
		return fmt.Errorf("--join-load-share must be above 0 and at most 1, got %v", r)
	}
	if r := cfg.HTTP.AccessLogSample; !(r >= 0 && r <= 1) {
		return fmt.Errorf("--access-log-sample must be between 0 and 1, got %v", r)
	}
	return nil
}

// startApp sets the runtime's memory up, completes cfg (the answer cache's size, the demo
// partner, the version, the database) and builds the app; with --demo it seeds the demo
// data and prints its credentials to out.
func startApp(ctx context.Context, cfg *app.Config, x serveExtras, log *zap.Logger, out io.Writer) (*app.App, error) {
	applyGCPercent(*x.gcPercent, log)
	limit, err := applyMemoryLimit(*x.memLimit, log)
	if err != nil {
		return nil, err
	}
	cfg.Supply.CacheMaxBytes = answerCacheBytes(limit) // sized for the limit, like the rest

	if *x.demo {
		cfg.DemoPartner = demoPartner()
	}
	cfg.Version = readBuildVersion().short()
	url, err := databaseURL(ctx, cfg.DatabaseURL, log)
	if err != nil {
		return nil, err
	}
	cfg.DatabaseURL = url
	a, err := app.New(ctx, *cfg, log)
	if err != nil {
		return nil, err
	}
	registerBuildInfo(a)
	if *x.demo {
		if err := startDemo(ctx, a, *cfg, out); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// startDemo seeds the demo data when the database is empty and prints its credentials.
func startDemo(ctx context.Context, a *app.App, cfg app.Config, out io.Writer) error {
	creds, err := seedDemo(ctx, a.DB, cfg, true)
	if err != nil {
		a.Shutdown(context.Background()) //nolint:errcheck
		return err
	}
	if creds["seeded"] == true {
		// The demo publisher was registered after the supply interface loaded its
		// publishers: load them again so its token works at once.
		if err := a.Supply.ReloadPublishers(ctx); err != nil {
			return err
		}
	}
	if creds != nil { // every start prints them: the walk-through needs customer_id
		if err := printJSON(out, creds); err != nil {
			return err
		}
	}
	return nil
}

// serveUntilDone serves a on cfg's listeners until one fails or ctx is done, then shuts a
// down, giving in-flight requests drain to finish.
func serveUntilDone(ctx context.Context, a *app.App, cfg app.Config, log *zap.Logger, drain time.Duration) error {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		a.Shutdown(context.Background()) //nolint:errcheck
		return err
	}
	// Both listeners are bound before either serves: once the main one answers, so does the
	// admin one (a probe or a test that saw /healthz may scrape /metrics at once).
	var aln net.Listener
	if cfg.AdminAddr != "" {
		if aln, err = net.Listen("tcp", cfg.AdminAddr); err != nil {
			ln.Close()
			a.Shutdown(context.Background()) //nolint:errcheck
			return fmt.Errorf("--admin-addr: %w", err)
		}
	}
	errc := make(chan error, 2)
	if aln != nil {
		go func() { errc <- a.ServeAdmin(aln) }()
	}
	go func() { errc <- a.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down", zap.Duration("drain", drain))
	sctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if err := a.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return <-errc
}

// allocationFlags declares the allocation policy's settings (docs/allocation.md).
func allocationFlags(f flags, cfg *app.Config) {
	f.Func("allocation", "offer ranking policy: greedy (EPC), bidprice (EPC × the weight of the quota's bid price: its payout net of the prices of the day's programme of the open quotas), balanced (EPC × a deadline schedule of the quotas that can still finish, exploration) or edf (EPC × 1/days left, the evaluation's baseline); docs/allocation.md (default greedy)",
		func(v string) (err error) {
			cfg.Allocation, err = engine.ParseAllocation(v)
			return err
		})
	f.Func("allocation-split", "measure policies on real traffic: policy:share[,policy:share...] (shares in percent, summing to 100, e.g. greedy:50,bidprice:50) ranks each participant's offers under the policy of the arm a salted hash of the participant id assigns, each policy with its own weights; replaces --allocation; docs/allocation.md (default off)",
		func(v string) (err error) {
			cfg.AllocationSplit, err = engine.ParseAllocationSplit(v)
			return err
		})
	f.DurationVar(&cfg.AllocationEvery, "allocation-every", 5*time.Minute, "how often a weighted allocation (any but greedy) recomputes its weights")
}

// registerBuildInfo reports the binary's version on /metrics, as `switchboard version`
// prints it: switchboard_build_info{version, revision, goversion} 1.
func registerBuildInfo(a *app.App) {
	v := readBuildVersion()
	labels := fmt.Sprintf("version=%q,revision=%q,goversion=%q", orUnknown(v.Version), orUnknown(v.Revision), v.GoVersion)
	a.Metrics.Gauge("switchboard_build_info", "gauge", "The running binary's module version, VCS revision and Go version.",
		func() []httpio.Sample { return []httpio.Sample{{Labels: labels, Value: 1}} })
}
