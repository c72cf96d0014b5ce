// Package router moves respondents and money: the offer entry (GET
// /supply_api/v4/entry), buyer callbacks (GET /router/customers/{customer_id}/cps/{outcome}),
// test sessions (redirect_test), and the buyer-side reject_completes and reconcile logic.
//
// PostgreSQL is the arbiter of every count: an entry is admitted in a transaction that locks
// the matched quota rows (persistence.admitBatch), normally for a group-commit batch; a
// callback records its outcome and moves the counts in one transaction with the partner's
// postback. The engine's atomics on every process mirror those counts through NOTIFY and a
// periodic reconciliation (docs/architecture.md, "Counting across processes").
package router

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/internal/entrytoken"
	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router/payout"
)

// Config tunes the router; zero values take the defaults.
type Config struct {
	PublicURL string // base of every URL handed out and of every hash checked
	// Naive admits every entry, and records every callback, in its own transaction instead of
	// group commit (for the benchmark comparison).
	Naive bool
	// GroupCommit tunes the group-commit writers of entries and callbacks.
	GroupCommit persistence.EntryWriterConfig
	// EntryWorkers, when positive, is how many batches of entries are in flight at once, in
	// place of GroupCommit.Workers (callbacks keep that).
	EntryWorkers int
	// ReconcileEvery is the period of the counters' safety reconciliation from the
	// database (default 3 s): each period re-reads the next ReconcileSlice active campaigns,
	// so a market of n campaigns is walked every n / ReconcileSlice periods.
	ReconcileEvery time.Duration
	// ReconcileSlice is how many campaigns one safety reconciliation re-reads (default
	// 2,000).
	ReconcileSlice int
	// NotifyEvery is the debounce of the counts and entries notifications (default 20 ms).
	NotifyEvery time.Duration
	// SessionMaxAge: callbacks of older sessions answer 410 (default 7 days).
	SessionMaxAge time.Duration
	// Rules price sessions (default payout.DefaultRules()).
	Rules *payout.Rules
}

func (c Config) withDefaults() Config {
	if c.ReconcileEvery <= 0 {
		c.ReconcileEvery = 3 * time.Second
	}
	if c.ReconcileSlice <= 0 {
		c.ReconcileSlice = 2000
	}
	if c.NotifyEvery <= 0 {
		c.NotifyEvery = 20 * time.Millisecond
	}
	if c.SessionMaxAge <= 0 {
		c.SessionMaxAge = 7 * 24 * time.Hour
	}
	if c.Rules == nil {
		r := payout.DefaultRules()
		c.Rules = &r
	}
	return c
}

// Deps is what the router needs from the process. Each store is one narrow interface
// declared beside the code that uses it.
type Deps struct {
	Accounts     accountStore      // publishers and buyers (lookups.go)
	Campaigns    campaignStore     // routes, screeners, retarget identifiers (lookups.go)
	Participants participantStore  // the panel's misses (lookups.go)
	Sessions     sessionStore      // admissions, outcomes, chains, test sessions (sessions.go)
	Feed         feedStore         // the counts and entries notifications, both ways (counts.go)
	Completer    campaignCompleter // full campaigns made complete at a flush (notifier.go)
	Engine       *engine.Engine
	Panel        *engine.Panel
	Key          *entrytoken.Key // the service key of offer-entry tokens
	Log          *zap.Logger
	Config       Config
	// Publisher finds a publisher in memory (supply's store); nil or a miss: the database.
	Publisher func(id int64) (persistence.Publisher, bool)
	// Postbacks, when set, sends each callback's postback straight after its commit (stored
	// leased to this process); nil: the outbox workers claim them.
	Postbacks *payout.Worker
}

// Router serves entry and callbacks: it decides who enters which survey and what each
// outcome pays, re-routes screen-outs, and mounts the test sessions and the hosted
// pre-screener beside them.
type Router struct {
	lookups                 // the rows entry and callbacks read, cached (lookups.go)
	sessionIO               // admissions, outcomes and chains in the database (sessions.go)
	counts    *countsMirror // the engine's counters and the panel's entries kept with the fleet's (counts.go)

	eng    *engine.Engine
	key    *entrytoken.Key
	log    *zap.Logger
	cfg    Config
	sender *payout.Worker
	notify *notifier

	tests     *testSessions // GET /router/test/{campaign_id} (testsession.go)
	prescreen *prescreener  // the hosted pre-screener's page (prescreen.go)

	stop    context.CancelFunc
	done    sync.WaitGroup
	started bool

	quality qualityHooks // participant quality checks (quality.go); zero: off

	verdicts verdicts      // entry decisions, for /metrics (verdicts.go)
	reroutes rerouteCounts // re-routing chains per publisher, for /metrics (reroute.go)
	overages atomic.Int64  // late completes stored as overages (docs/rules.md §5), for /metrics
}

// New builds the router; Start runs its background work.
func New(d Deps) (*Router, error) {
	if d.Accounts == nil || d.Campaigns == nil || d.Participants == nil || d.Sessions == nil || d.Feed == nil ||
		d.Completer == nil || d.Engine == nil || d.Panel == nil || d.Key == nil {
		return nil, errors.New("router: the stores, Engine, Panel and Key are required")
	}
	log := d.Log
	if log == nil {
		log = zap.NewNop()
	}
	cfg := d.Config.withDefaults()
	origin := randomHex(8)
	r := &Router{eng: d.Engine, key: d.Key, log: log, cfg: cfg, sender: d.Postbacks,
		sessionIO: newSessionIO(d.Sessions, d.Participants, d.Panel, cfg),
		counts:    newCountsMirror(d.Feed, d.Engine, d.Panel, origin, cfg, log),
		notify:    newNotifier(d.Feed, d.Completer, origin, cfg.NotifyEvery, log),
		tests:     &testSessions{routes: d.Campaigns, sessions: d.Sessions, log: log},
	}
	r.lookups.init(d)
	r.prescreen = &prescreener{entry: r, sheets: d.Sessions, attach: d.Campaigns, key: d.Key, log: log, publicURL: cfg.PublicURL}
	return r, nil
}

// Register mounts entry, callbacks and test sessions on mux.
func (r *Router) Register(mux *httpio.Mux) {
	mux.Handle("GET", "/supply_api/v4/entry", r.entry)
	mux.Handle("GET", "/router/customers/{customer_id}/cps/{outcome}", r.callback)
	mux.Handle("GET", "/router/test/{campaign_id}", r.tests.redirectTest)
	mux.Handle("GET", PrescreenPath, r.prescreen.page)
	mux.Handle("POST", PrescreenPath, r.prescreen.submit)
}

// Start runs the background work until Close: notifications out and in, and the counters'
// reconciliation.
func (r *Router) Start(ctx context.Context) {
	ctx, r.stop = context.WithCancel(ctx)
	r.started = true
	r.done.Add(3)
	go func() { defer r.done.Done(); r.notify.run(ctx) }()
	go func() { defer r.done.Done(); r.counts.listenCounts(ctx) }()
	go func() { defer r.done.Done(); r.counts.listenEntries(ctx) }()
}

// Close stops the background work and the group-commit writer (after its queued entries).
func (r *Router) Close() {
	r.sessionIO.close()
	if r.started {
		r.stop()
		r.done.Wait()
	}
}

// CountsChanged announces that the counts of a campaign changed in the database (stale
// sessions released by the fleet's sweeper): every process re-reads them.
func (r *Router) CountsChanged(campaignID int64) { r.notify.counts(campaignID) }

// CountsLoaded is closed once the counters of every active campaign have been read from
// the database after start: until then a full quota may look open to this process.
func (r *Router) CountsLoaded() <-chan struct{} { return r.counts.loaded }

// SeedCounts says that the engine's counters were set from a process snapshot consistent at
// the database position xid (persistence.ChangePosition): the counters' first load reads
// only what changed since. Call it before Start.
func (r *Router) SeedCounts(xid uint64) {
	r.counts.seeded, r.counts.seedXID = true, xid
}

// EntriesHeard is closed once this process hears of the entries other processes admit: an
// entry committed later reaches its panel by notification, so a load that reads the entries
// committed until some moment after it (a snapshot's catch-up) misses none.
func (r *Router) EntriesHeard() <-chan struct{} { return r.counts.heard }

// newTID returns an unguessable transaction id: 16 random bytes, hex.
func newTID() string { return randomHex(16) }

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b)
}

// redirect answers 302 to location byte for byte (signed URLs must not be re-encoded).
func redirect(ctx *fasthttp.RequestCtx, location string) {
	ctx.Response.Header.Set("Location", location)
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.SetStatusCode(fasthttp.StatusFound)
}

// isNotFound reports a fault.NotFound.
func isNotFound(err error) bool { return fault.KindOf(err) == fault.KindNotFound }
