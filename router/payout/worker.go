package payout

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
)

// Delivery slots of a worker (WorkerConfig.Parallel, PerDestination).
const (
	// DefaultParallel is how many deliveries a worker has in hand at most (being sent, or
	// sent and being recorded).
	DefaultParallel = 64
	// DefaultPerDestination is how many of them may go to one destination (a partner, or a
	// buyer's webhook): a slow endpoint holds at most these, and the other destinations keep
	// the rest. It is also how many of one partner's postbacks a crashed process can leave
	// delivered but unrecorded (sent again after the lease; the partner's idempotency on tid
	// makes that harmless).
	DefaultPerDestination = 16
)

// WorkerConfig tunes a postback Worker. Zero fields take the defaults shown.
type WorkerConfig struct {
	Timeout     time.Duration // one delivery, connect to body, every redirect included: 10 s
	Lease       time.Duration // how long a claimed row stays invisible to other workers: Timeout + 20 s
	BaseBackoff time.Duration // the first retry's delay: 1 s, doubling per attempt
	MaxBackoff  time.Duration // the longest delay between attempts: 10 min
	Window      time.Duration // retries stop (dead letter) this long after enqueueing: 24 h
	Poll        time.Duration // look for due rows at least this often: 1 s
	Parallel    int           // deliveries in flight at once: DefaultParallel
	// PerDestination is how many deliveries one partner or buyer may have in flight:
	// DefaultPerDestination (at most Parallel).
	PerDestination int
	StatsEvery     time.Duration // refresh of the pending/dead gauges: 5 s
	// AllowPrivate lets outbound calls (webhooks, postbacks' redirects to other hosts, test
	// sends) connect to loopback, private, link-local and other non-public addresses
	// (internal/egress): tests and one-host setups. Without it they are refused, so that
	// no partner or buyer reaches the deployment's own network through the server.
	AllowPrivate bool
}

func (c WorkerConfig) withDefaults() WorkerConfig {
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.Lease <= 0 {
		c.Lease = c.Timeout + 20*time.Second
	}
	if c.BaseBackoff <= 0 {
		c.BaseBackoff = time.Second
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 10 * time.Minute
	}
	if c.Window <= 0 {
		c.Window = 24 * time.Hour
	}
	if c.Poll <= 0 {
		c.Poll = time.Second
	}
	if c.Parallel <= 0 {
		c.Parallel = DefaultParallel
	}
	if c.PerDestination <= 0 {
		c.PerDestination = DefaultPerDestination
	}
	c.PerDestination = min(c.PerDestination, c.Parallel)
	if c.StatsEvery <= 0 {
		c.StatsEvery = 5 * time.Second
	}
	return c
}

// startWindow is how long after a postback was handed over (Send) its delivery may still
// start: its lease, less the delivery's Timeout and a margin for recording the result (5 s,
// or a quarter of what the lease leaves beyond Timeout when that is short), so that the
// lease never runs out, and another worker never sends it too, while it waits for a slot.
func (c WorkerConfig) startWindow() time.Duration {
	spare := c.Lease - c.Timeout
	return max(spare-min(5*time.Second, spare/4), 0)
}

// directQueue is how many handed-over postbacks wait for a slot at most (and as many more
// for Run to take them); beyond that Send refuses, and they are claimed like any other once
// their lease runs out.
const directQueue = 4096

// outboxStore is the postback outbox as the worker uses it: claim due rows, give back
// those it cannot start, record each delivery's result, and count what is pending.
type outboxStore interface {
	Claim(ctx context.Context, c persistence.Claim) (persistence.Claimed, error)
	ReleasePostbacks(ctx context.Context, cs []persistence.ClaimedPostback) error
	MarkPostbackFailed(ctx context.Context, c persistence.ClaimedPostback, retryIn, window time.Duration, errText string, permanent bool) (dead bool, err error)
	NewDeliveryMarks() *persistence.DeliveryMarks
	PostbackStats(ctx context.Context) (persistence.PostbackStats, error)
}

// listener opens the LISTEN connection on which enqueues wake the worker.
type listener interface {
	ListenOn(ctx context.Context, channel string) (*persistence.Listener, error)
}

// Worker delivers the postback outbox. Every serve process runs one; they share the table
// safely (rows are claimed with FOR UPDATE SKIP LOCKED and leased while delivered).
type Worker struct {
	outbox outboxStore
	feed   listener
	cfg    WorkerConfig
	log    *zap.Logger
	out    outbound

	wake   chan struct{}
	done   chan struct{}
	direct chan handed                // handed over by Send
	due    atomic.Bool                // the outbox may hold due rows: claim
	marks  *persistence.DeliveryMarks // set by Run: records deliveries by group commit

	// The partner postbacks' and the buyer webhooks' figures, apart.
	postbacks, webhooks tally
	// lags is each partner's delivery lag for /metrics (lags.go).
	lags lags
	// tests are the destinations with a test send in flight: one at a time each.
	tests   map[persistence.Destination]bool
	testsMu sync.Mutex
}

// handed is a postback handed over by Send, and by when its delivery must start.
type handed struct {
	c       persistence.ClaimedPostback
	startBy time.Time
}

// tally is one kind of delivery's figures for /metrics: the totals count this process's
// attempts, the gauges the whole table.
type tally struct {
	delivered, failures, deadLettered atomic.Uint64
	pending, dead                     atomic.Int64
	oldestPending                     atomic.Int64 // nanoseconds
}

// tally is the figures c counts toward.
func (w *Worker) tally(c persistence.ClaimedPostback) *tally {
	if c.Body != nil {
		return &w.webhooks
	}
	return &w.postbacks
}

// NewWorker returns a worker over the postback outbox, woken by notifications heard through
// feed; Run starts it.
func NewWorker(outbox outboxStore, feed listener, cfg WorkerConfig, log *zap.Logger) *Worker {
	if log == nil {
		log = zap.NewNop()
	}
	cfg = cfg.withDefaults()
	return &Worker{outbox: outbox, feed: feed, cfg: cfg, log: log, out: newOutbound(cfg), tests: map[persistence.Destination]bool{},
		wake: make(chan struct{}, 1), done: make(chan struct{}), direct: make(chan handed, directQueue)}
}

// Wake makes the worker look for due rows now. Enqueues wake every process's worker through
// NOTIFY already; this is for callers in the same process that want no round trip.
func (w *Worker) Wake() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// claimable notes that due rows may be waiting in the outbox (a NOTIFY of an enqueue, or
// the LISTEN connection (re)established) and wakes the worker.
func (w *Worker) claimable() {
	w.due.Store(true)
	w.Wake()
}

// Lease is how long a postback stays with the worker that holds it before others may claim
// it: the lease to store a postback with when it is handed over by Send.
func (w *Worker) Lease() time.Duration { return w.cfg.Lease }

// Send hands over a postback stored leased to this process (a callback's, straight after
// its commit), sparing the claim round trip. It reports false, leaving the postback to be
// claimed once its lease runs out, when the worker is too far behind to take it. A postback
// handed over that cannot start within its lease (its destination's slots stay busy) is
// given back to the table, due, for any worker to claim.
func (w *Worker) Send(c persistence.ClaimedPostback) bool {
	select {
	case w.direct <- handed{c: c, startBy: time.Now().Add(w.cfg.startWindow())}:
		w.Wake()
		return true
	default:
		return false
	}
}

// Done is closed when Run has returned.
func (w *Worker) Done() <-chan struct{} { return w.done }

// deliver sends one postback and records the result (its slot is held until the record
// commits).
func (w *Worker) deliver(ctx context.Context, c persistence.ClaimedPostback) {
	var status int
	var err error
	deadline := time.Now().Add(w.cfg.Timeout)
	if c.Body != nil {
		status, err = w.post(c, deadline)
	} else {
		f := w.out.get(c.URL, deadline, 0)
		status, err = f.status, f.err
	}
	t := w.tally(c)
	ok := err == nil && status >= 200 && status < 300
	if !ok && ctx.Err() != nil {
		return // shutting down: the lease runs out and another attempt follows
	}
	// A delivery is recorded even if ctx ended meanwhile.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	log := w.log.With(zap.Int64("postback_id", c.ID), zap.String("tid", c.TID), zap.String("kind", c.Kind),
		zap.Int64("publisher_id", c.PublisherID), zap.Int64("buyer_id", c.BuyerID), zap.Int("attempt", c.Attempts))
	if ok {
		if err := w.marks.Mark(sctx, c.ID); err != nil {
			log.Warn("record postback delivery", zap.Error(err)) // delivered again after the lease
			return
		}
		t.delivered.Add(1)
		return
	}
	t.failures.Add(1)
	why := reason(status, err)
	if err != nil {
		log = log.With(zap.NamedError("cause", err)) // the operator's log may name the address
	}
	dead, merr := w.outbox.MarkPostbackFailed(sctx, c, w.backoff(c.Attempts), w.cfg.Window, why, permanent(err))
	switch {
	case merr != nil:
		log.Warn("record postback failure", zap.String("reason", why), zap.Error(merr))
	case dead:
		t.deadLettered.Add(1)
		log.Error("postback dead-lettered", zap.String("reason", why))
	case c.Attempts == 1:
		log.Warn("postback failed; will retry", zap.String("reason", why))
	default:
		log.Debug("postback failed again; will retry", zap.String("reason", why))
	}
}

// backoff is the delay after failed attempt n (1-based): BaseBackoff × 2^(n-1), ±20 %
// jitter, capped at MaxBackoff.
func (w *Worker) backoff(n int) time.Duration {
	d := w.cfg.MaxBackoff
	if n-1 < 40 {
		d = min(w.cfg.BaseBackoff<<(n-1), w.cfg.MaxBackoff)
		if d <= 0 { // overflow
			d = w.cfg.MaxBackoff
		}
	}
	d = time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
	return min(d, w.cfg.MaxBackoff)
}

func (w *Worker) refreshStats(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	s, err := w.outbox.PostbackStats(sctx)
	if err != nil {
		return err
	}
	w.postbacks.pending.Store(s.Pending)
	w.postbacks.dead.Store(s.Dead)
	w.postbacks.oldestPending.Store(int64(s.OldestPending))
	w.webhooks.pending.Store(s.WebhooksPending)
	w.webhooks.dead.Store(s.WebhooksDead)
	w.webhooks.oldestPending.Store(int64(s.WebhooksOldestPending))
	w.lags.set(s.Backlogs)
	return nil
}

// RegisterMetrics exposes the outbox on /metrics: partner postbacks as switchboard_postbacks_*,
// buyer webhooks as switchboard_webhooks_*. Pending and dead count the whole table (every
// process's worker reports the same, refreshed every StatsEvery); the totals count this
// process's attempts. Each partner's pending postbacks and delivery lag are
// switchboard_postbacks_partner_*{publisher="<id>"}.
func (w *Worker) RegisterMetrics(m *httpio.Metrics) {
	w.postbacks.register(m, "switchboard_postbacks_", "Postback")
	w.webhooks.register(m, "switchboard_webhooks_", "Buyer webhook")
	w.lags.register(m)
}

// register exposes t under prefix; what names the deliveries in the help texts.
func (t *tally) register(m *httpio.Metrics, prefix, what string) {
	one := func(f func() float64) func() []httpio.Sample {
		return func() []httpio.Sample { return []httpio.Sample{{Value: f()}} }
	}
	m.Gauge(prefix+"pending", "gauge", what+"s neither delivered nor dead-lettered.",
		one(func() float64 { return float64(t.pending.Load()) }))
	m.Gauge(prefix+"dead", "gauge", what+"s dead-lettered after their retry window.",
		one(func() float64 { return float64(t.dead.Load()) }))
	m.Gauge(prefix+"oldest_pending_seconds", "gauge", "Age of the oldest pending "+strings.ToLower(what)+".",
		one(func() float64 { return time.Duration(t.oldestPending.Load()).Seconds() }))
	m.Gauge(prefix+"delivered_total", "counter", what+"s this process delivered (2xx).",
		one(func() float64 { return float64(t.delivered.Load()) }))
	m.Gauge(prefix+"failures_total", "counter", what+" attempts of this process that failed.",
		one(func() float64 { return float64(t.failures.Load()) }))
	m.Gauge(prefix+"dead_lettered_total", "counter", what+"s this process dead-lettered.",
		one(func() float64 { return float64(t.deadLettered.Load()) }))
}
