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
	// BrokenLinkEntries: this many entries in a row with no callback within 2 × LOI + 10
	// minutes pause a campaign (7 System Paused). Default 50; negative: off.
	BrokenLinkEntries int
	// BrokenLinkSlices: each sweep looks for broken links in the campaigns whose entries it
	// released and in one of this many slices of every active campaign, so that each is
	// looked at once in this many sweeps (a release whose process died before looking) with
	// no sweep looking at them all. Default 120 (an hour at the default SweepEvery; a
	// twentieth of 100,000 campaigns probed 5,000 campaigns' entries, about 50 ms of
	// PostgreSQL beside the 20 ms scan of campaigns that picks the slice); negative: only the
	// campaigns whose entries the sweep released.
	BrokenLinkSlices int
	// SweepEvery is the period of the sweeper: stale sessions, broken links, full campaigns,
	// archiving (default 30 s). It is the fleet's: processes sharing the database take turns.
	SweepEvery time.Duration
	// AnalyzeEvery is how often the process looks for routing tables that have about
	// doubled since their last ANALYZE (default 1 s): a young marketplace's tables (and
	// each new partition of sessions) double within seconds under load, and the plans made
	// when they were empty, kept until an analyze, read them whole.
	AnalyzeEvery time.Duration
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
	// ArchiveAfter: the sweeper moves a campaign that has been 3 Complete or 6 Reconciled
	// this long to 4 Archived (docs/rules.md §4; default 90 days).
	ArchiveAfter time.Duration
	// Rules price sessions (default payout.DefaultRules()).
	Rules *payout.Rules
	// Partitions sizes the partitions of sessions the sweeper keeps ahead of the id sequence
	// (persistence.PartitionPolicy; zero: its defaults). It checks them every
	// PartitionEvery (default 10 minutes).
	Partitions     persistence.PartitionPolicy
	PartitionEvery time.Duration
	// OutboxRetention: the sweeper deletes postbacks and webhooks delivered longer ago than
	// this (default 90 days; negative: never). Undelivered and dead ones stay.
	OutboxRetention time.Duration
}

func (c Config) withDefaults() Config {
	if c.BrokenLinkEntries == 0 {
		c.BrokenLinkEntries = 50
	}
	if c.BrokenLinkSlices == 0 {
		c.BrokenLinkSlices = 120
	}
	if c.SweepEvery <= 0 {
		c.SweepEvery = 30 * time.Second
	}
	if c.AnalyzeEvery <= 0 {
		c.AnalyzeEvery = time.Second
	}
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
	if c.ArchiveAfter <= 0 {
		c.ArchiveAfter = 90 * 24 * time.Hour
	}
	if c.PartitionEvery <= 0 {
		c.PartitionEvery = 10 * time.Minute
	}
	if c.OutboxRetention == 0 {
		c.OutboxRetention = 90 * 24 * time.Hour
	}
	if c.Rules == nil {
		r := payout.DefaultRules()
		c.Rules = &r
	}
	return c
}

// Deps is what the router needs from the process.
type Deps struct {
	DB     *persistence.DB
	Engine *engine.Engine
	Panel  *engine.Panel
	Key    *entrytoken.Key // the service key of offer-entry tokens (partners.Directory.Key)
	Log    *zap.Logger
	Config Config
	// Publisher finds a publisher in memory (partners.Directory.PublisherByID, supply/partners);
	// nil or a miss: the database.
	Publisher func(id int64) (persistence.Publisher, bool)
	// Postbacks, when set, sends each callback's postback straight after its commit (stored
	// leased to this process); nil: the outbox workers claim them.
	Postbacks *payout.Worker
}

// Router serves entry and callbacks.
type Router struct {
	db     *persistence.DB
	eng    *engine.Engine
	panel  *engine.Panel
	key    *entrytoken.Key
	log    *zap.Logger
	cfg    Config
	pubFn  func(id int64) (persistence.Publisher, bool)
	writer *persistence.EntryWriter
	outw   *persistence.OutcomeWriter
	reader *persistence.SessionReader
	sender *payout.Worker
	origin string

	routes ttlCache[int64, persistence.CampaignRoute]
	buyers ttlCache[string, persistence.Buyer]
	pubs   ttlCache[int64, persistence.Publisher]
	notify *notifier
	// countsLoaded is closed after the first reconciliation of every active campaign's
	// counters (CountsLoaded); countsOnce closes it.
	countsLoaded chan struct{}
	// entriesHeard is closed once the LISTEN on other processes' entries is up
	// (EntriesHeard); entriesOnce closes it.
	entriesHeard chan struct{}
	entriesOnce  sync.Once
	countsOnce   sync.Once
	stop         context.CancelFunc
	done         sync.WaitGroup
	started      bool

	quality qualityHooks // participant quality checks (quality.go); zero: off

	verdicts verdicts      // entry decisions, for /metrics (verdicts.go)
	reroutes rerouteCounts // re-routing chains per publisher, for /metrics (reroute.go)
	overages atomic.Int64  // late completes stored as overages (docs/rules.md §5), for /metrics

	partitionsAt atomic.Int64 // the sweeper's last check of the partitions of sessions (Unix ns)
	sweeps       atomic.Int64 // Sweep calls begun: their broken-link slice (BrokenLinkSlices)
	sweepStats   sweepStats   // what the sweeps cost, for /metrics (sweepmetrics.go)

	// screeners: the hosted pre-screener of each campaign, nil when it has none (prescreen.go).
	screeners ttlCache[int64, *persistence.Screener]

	// decoded keeps the participants that entries decode their participant into (their
	// answers' and entries' buffers), so that an entry's read of the panel allocates nothing.
	decoded sync.Pool

	// countRows is what the counters' mirror reads counts into (listenCounts: its loop is
	// the only reader), reused from one read to the next, as are the campaign lists of its
	// reads (reconcileCounts).
	countRows                 persistence.CountRows
	countsWhole, countsQuotas []int64
}

// New builds the router; Start runs its background work.
func New(d Deps) (*Router, error) {
	if d.DB == nil || d.Engine == nil || d.Panel == nil || d.Key == nil {
		return nil, errors.New("router: DB, Engine, Panel and Key are required")
	}
	log := d.Log
	if log == nil {
		log = zap.NewNop()
	}
	cfg := d.Config.withDefaults()
	r := &Router{db: d.DB, eng: d.Engine, panel: d.Panel, key: d.Key, log: log, cfg: cfg, pubFn: d.Publisher,
		sender: d.Postbacks, origin: randomHex(8), countsLoaded: make(chan struct{}),
		entriesHeard: make(chan struct{})}
	// Campaign rows are forgotten when the campaign changes (CampaignsChanged); the TTL
	// is the safety net under that.
	r.routes.ttl = 30 * time.Second
	r.buyers.ttl = time.Minute
	r.pubs.ttl = 30 * time.Second
	r.screeners.ttl = 30 * time.Second
	if !cfg.Naive {
		entries := cfg.GroupCommit
		if cfg.EntryWorkers > 0 {
			entries.Workers = cfg.EntryWorkers
		}
		r.writer = d.DB.Sessions.NewEntryWriter(entries)
		r.outw = d.DB.Sessions.NewOutcomeWriter(cfg.GroupCommit)
		r.reader = d.DB.Sessions.NewSessionReader(1)
	}
	r.notify = newNotifier(d.DB, r.origin, cfg.NotifyEvery, log)
	return r, nil
}

// Register mounts entry, callbacks and test sessions on mux.
func (r *Router) Register(mux *httpio.Mux) {
	mux.Handle("GET", "/supply_api/v4/entry", r.entry)
	mux.Handle("GET", "/router/customers/{customer_id}/cps/{outcome}", r.callback)
	mux.Handle("GET", "/router/test/{campaign_id}", r.redirectTest)
	mux.Handle("GET", PrescreenPath, r.prescreenPage)
	mux.Handle("POST", PrescreenPath, r.prescreenSubmit)
}

// Start runs the background work until Close: notifications out and in, the counters'
// reconciliation and the sweeper. The sweeper's first period begins when sweepAfter closes
// (nil: at once): the process's own loads in, so that its first sweep (a broken-link slice
// and the full campaigns: about 0.6 s of PostgreSQL at 100,000 campaigns as first measured,
// 0.12 s since JIT is off and the slice a 120th) does not land on PostgreSQL beside its
// loads, where a joining process's would take the cores the fleet's entries wait on
// (docs/performance.md, "The whole join measured; a joining process's first sweep").
func (r *Router) Start(ctx context.Context, sweepAfter <-chan struct{}) {
	ctx, r.stop = context.WithCancel(ctx)
	r.started = true
	r.done.Add(5)
	go func() { defer r.done.Done(); r.notify.run(ctx) }()
	go func() { defer r.done.Done(); r.listenCounts(ctx) }()
	go func() { defer r.done.Done(); r.listenEntries(ctx) }()
	go func() { defer r.done.Done(); r.runSweeper(ctx, sweepAfter) }()
	go func() { defer r.done.Done(); r.runAnalyzer(ctx) }()
}

// Close stops the background work and the group-commit writer (after its queued entries).
func (r *Router) Close() {
	if r.writer != nil {
		r.writer.Close()
		r.outw.Close()
		r.reader.Close()
	}
	if r.started {
		r.stop()
		r.done.Wait()
	}
}

// admit decides an entry through the group-commit writer or, when naive, alone.
func (r *Router) admit(ctx context.Context, e persistence.Entry) (persistence.Admission, error) {
	if r.writer != nil {
		return r.writer.Admit(ctx, e)
	}
	return r.db.Sessions.Admit(ctx, e)
}

// session loads a callback's session through the coalescing reader or, when naive, alone.
// The reader leaves the participant's user identifier to this process's panel, which holds
// every participant active in the last 30 days; the database is asked for one it does not.
func (r *Router) session(ctx context.Context, tid string) (persistence.Session, error) {
	if r.reader == nil {
		return r.db.Sessions.SessionByTID(ctx, tid)
	}
	s, err := r.reader.ByTID(ctx, tid)
	if err != nil || s.ParticipantID == 0 {
		return s, err
	}
	if pub, user, ok := r.panel.UserOf(s.ParticipantID); ok && pub == s.PublisherID {
		s.UserIdentifier = user
		return s, nil
	}
	s.UserIdentifier, err = r.db.Participants.ParticipantUser(ctx, s.ParticipantID)
	return s, err
}

// record stores a callback's outcome through the group-commit writer or, when naive, alone.
func (r *Router) record(ctx context.Context, s persistence.Session, o persistence.OutcomeRecord) (persistence.OutcomeResult, error) {
	if r.outw != nil {
		return r.outw.Record(ctx, s, o)
	}
	return r.db.Sessions.RecordOutcome(ctx, s, o)
}

func (r *Router) publisher(ctx context.Context, id int64) (persistence.Publisher, error) {
	if r.pubFn != nil {
		if p, ok := r.pubFn(id); ok {
			return p, nil
		}
	}
	return r.pubs.get(id, func() (persistence.Publisher, error) { return r.db.Accounts.PublisherByID(ctx, id) })
}

func (r *Router) buyer(ctx context.Context, customerID string) (persistence.Buyer, error) {
	return r.buyers.get(customerID, func() (persistence.Buyer, error) { return r.db.Accounts.BuyerByCustomerID(ctx, customerID) })
}

func (r *Router) route(ctx context.Context, id int64) (persistence.CampaignRoute, error) {
	return r.routes.get(id, func() (persistence.CampaignRoute, error) { return r.db.Campaigns.CampaignRoute(ctx, id) })
}

// participant decodes the panel's participant with id into dst (valid until the next
// decode into dst), loading it into the panel on a miss (a participant impaneled by another
// process that this one has not heard of yet).
func (r *Router) participant(ctx context.Context, id int64, dst *engine.Participant) error {
	if r.panel.LookupByID(id, dst) {
		return nil
	}
	pp, err := r.db.Participants.ParticipantByID(ctx, id)
	if err != nil {
		return err
	}
	p, err := r.panel.Upsert(pp.PublisherID, pp.User, pp.Participant, pp.LastActive)
	if err != nil {
		return err
	}
	*dst = *p
	return nil
}

// decodedParticipant is a participant value to decode into, from r.decoded; the caller
// gives it back with releaseParticipant once nothing it decoded is in use.
func (r *Router) decodedParticipant() *engine.Participant {
	if p, ok := r.decoded.Get().(*engine.Participant); ok {
		return p
	}
	return new(engine.Participant)
}

// releaseParticipant gives p back to r.decoded: its answers, entries and device id are
// overwritten by the next entry that decodes into it.
func (r *Router) releaseParticipant(p *engine.Participant) { r.decoded.Put(p) }

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

// CampaignsChanged drops what the router cached of these campaigns (nil: of every
// campaign); the engine sync calls it for every campaign NOTIFY it applies.
func (r *Router) CampaignsChanged(ids []int64) {
	if ids == nil {
		r.routes.clear()
		r.screeners.clear()
		return
	}
	for _, id := range ids {
		r.routes.forget(id)
		r.screeners.forget(id)
	}
}

// ttlCache is a small read-through cache of rarely changing rows.
type ttlCache[K comparable, V any] struct {
	mu  sync.RWMutex
	m   map[K]ttlEntry[V]
	ttl time.Duration
}

type ttlEntry[V any] struct {
	v  V
	at time.Time
}

func (c *ttlCache[K, V]) clear() {
	c.mu.Lock()
	clear(c.m)
	c.mu.Unlock()
}

func (c *ttlCache[K, V]) get(k K, load func() (V, error)) (V, error) {
	now := time.Now()
	c.mu.RLock()
	e, ok := c.m[k]
	c.mu.RUnlock()
	if ok && now.Sub(e.at) < c.ttl {
		return e.v, nil
	}
	v, err := load()
	if err != nil {
		var zero V
		return zero, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) > 100_000 {
		c.m = make(map[K]ttlEntry[V])
	}
	c.m[k] = ttlEntry[V]{v, now}
	c.mu.Unlock()
	return v, nil
}

func (c *ttlCache[K, V]) forget(k K) {
	c.mu.Lock()
	delete(c.m, k)
	c.mu.Unlock()
}

// isNotFound reports a fault.NotFound.
func isNotFound(err error) bool { return fault.KindOf(err) == fault.KindNotFound }
