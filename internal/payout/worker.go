package payout

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/internal/mirror"
	"github.com/switchboard/switchboard/internal/retry"
	"github.com/switchboard/switchboard/persistence"
)

// WorkerConfig tunes a postback Worker. Zero fields take the defaults shown.
// DefaultParallel is how many postbacks a worker has in hand at most (being sent, or sent
// and being recorded), and so how many a crashed process can leave delivered but unrecorded
// (sent again after the lease; the partner's idempotency on tid makes that harmless).
const DefaultParallel = 16

type WorkerConfig struct {
	Timeout     time.Duration // one GET, connect to body: 10 s
	Lease       time.Duration // how long a claimed row stays invisible to other workers: Timeout + 20 s
	BaseBackoff time.Duration // the first retry's delay: 1 s, doubling per attempt
	MaxBackoff  time.Duration // the longest delay between attempts: 10 min
	Window      time.Duration // retries stop (dead letter) this long after enqueueing: 24 h
	Poll        time.Duration // look for due rows at least this often: 1 s
	Parallel    int           // deliveries in flight at once: DefaultParallel
	StatsEvery  time.Duration // refresh of the pending/dead gauges: 5 s
	// Client sends the GETs; nil: a client whose reads and writes time out after Timeout.
	// Postbacks follow at most 3 redirects.
	Client *fasthttp.Client
	// WebhookClient sends buyer webhooks; nil: Client's settings with a dialer that refuses
	// loopback, private, link-local and other non-public addresses (a buyer chooses the URL,
	// and must not reach the deployment's own network through it) unless WebhookPrivate.
	WebhookClient  *fasthttp.Client
	WebhookPrivate bool // deliver webhooks to non-public addresses too (tests, one-host setups)
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
	if c.StatsEvery <= 0 {
		c.StatsEvery = 5 * time.Second
	}
	if c.Client == nil {
		// fasthttp rather than net/http: at thousands of postbacks a second, net/http's
		// goroutines and allocations per request cost more CPU than the callbacks that
		// caused them.
		c.Client = &fasthttp.Client{
			Name:                "switchboard-postback/1",
			ReadTimeout:         c.Timeout,
			WriteTimeout:        c.Timeout,
			MaxConnWaitTimeout:  c.Timeout,
			MaxConnsPerHost:     c.Parallel,
			MaxResponseBodySize: maxPostbackBody,
			Dial: func(addr string) (net.Conn, error) {
				return fasthttp.DialTimeout(addr, c.Timeout)
			},
		}
	}
	if c.WebhookClient == nil {
		dial := func(addr string) (net.Conn, error) { return fasthttp.DialTimeout(addr, c.Timeout) }
		if !c.WebhookPrivate {
			dial = publicDial(c.Timeout)
		}
		c.WebhookClient = &fasthttp.Client{
			Name:                "switchboard-webhook/1",
			ReadTimeout:         c.Timeout,
			WriteTimeout:        c.Timeout,
			MaxConnWaitTimeout:  c.Timeout,
			MaxConnsPerHost:     c.Parallel,
			MaxResponseBodySize: maxPostbackBody,
			Dial:                dial,
		}
	}
	return c
}

// directQueue is how many handed-over postbacks wait for a slot at most; beyond that they
// wait for their lease to run out and are claimed like any other.
const directQueue = 4096

// Worker delivers the postback outbox. Every serve process runs one; they share the table
// safely (rows are claimed with FOR UPDATE SKIP LOCKED and leased while delivered).
type Worker struct {
	db  *persistence.DB
	cfg WorkerConfig
	log *zap.Logger

	wake   chan struct{}
	done   chan struct{}
	direct chan persistence.ClaimedPostback // handed over by Send
	due    atomic.Bool                      // the outbox may hold due rows: claim
	marks  *persistence.DeliveryMarks       // set by Run: records deliveries by group commit

	// The partner postbacks' and the buyer webhooks' figures, apart.
	postbacks, webhooks tally
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

// NewWorker returns a worker over db; Run starts it.
func NewWorker(db *persistence.DB, cfg WorkerConfig, log *zap.Logger) *Worker {
	if log == nil {
		log = zap.NewNop()
	}
	return &Worker{db: db, cfg: cfg.withDefaults(), log: log,
		wake: make(chan struct{}, 1), done: make(chan struct{}), direct: make(chan persistence.ClaimedPostback, directQueue)}
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
// claimed once its lease runs out, when the worker is too far behind to take it.
func (w *Worker) Send(c persistence.ClaimedPostback) bool {
	select {
	case w.direct <- c:
		w.Wake()
		return true
	default:
		return false
	}
}

// Done is closed when Run has returned.
func (w *Worker) Done() <-chan struct{} { return w.done }

// Run delivers due postbacks until ctx ends, then waits for the deliveries in flight (which
// ctx cancels; their rows are retried when their lease runs out).
func (w *Worker) Run(ctx context.Context) {
	defer close(w.done)
	// Deliveries are recorded in batches; the recorder stops after the last delivery.
	w.marks = w.db.NewDeliveryMarks()
	defer w.marks.Close()
	var inflight sync.WaitGroup
	defer inflight.Wait()

	listenCtx, stopListen := context.WithCancel(ctx)
	defer stopListen()
	inflight.Add(1)
	go func() {
		defer inflight.Done()
		// Wake-ups only: every notification, and every (re)connect (notifications may have
		// been lost), means due rows may be waiting.
		mirror.Run(listenCtx, mirror.Config[struct{}]{
			Name:     "postback outbox",
			Log:      w.log,
			Listen:   mirror.Listener(w.db.ListenOn, persistence.PostbackChannel),
			Notified: func(string, func(struct{})) { w.claimable() },
			Full:     func(context.Context) error { w.claimable(); return nil },
		})
	}()

	inflight.Add(1)
	go func() {
		defer inflight.Done()
		stats := time.NewTicker(w.cfg.StatsEvery)
		defer stats.Stop()
		outage := retry.NewOutage(w.log, "postback stats", retry.Default, nil)
		for {
			outage.Attempt(ctx, w.refreshStats)
			select {
			case <-ctx.Done():
				return
			case <-stats.C:
			}
		}
	}()

	slots := make(chan struct{}, w.cfg.Parallel)
	poll := time.NewTicker(w.cfg.Poll)
	defer poll.Stop()
	// Under load, slots free up one delivery at a time; claiming for each would cost a
	// statement per postback. A claim waits until half the slots are free, or for the poll
	// (so that slow deliveries cannot hold the rest back).
	minClaim := max(1, w.cfg.Parallel/2)
	// While the database is away claims back off (retried at a wake or poll once due) and
	// the failure is logged once.
	claims := retry.NewOutage(w.log, "postback claim", retry.Default, nil)
	polled := true
	w.due.Store(true)
	send := func(c persistence.ClaimedPostback) {
		slots <- struct{}{}
		inflight.Add(1)
		go func() {
			defer inflight.Done()
			w.deliver(ctx, c)
			<-slots
			w.Wake() // a free slot: there may be more due
		}()
	}
	for {
		// Postbacks this process's callbacks handed over (Send) first: they are leased to it.
	direct:
		for len(slots) < cap(slots) {
			select {
			case c := <-w.direct:
				send(c)
			default:
				break direct
			}
		}
		// Between polls, only when rows may be due: enqueued elsewhere (NOTIFY), or the last
		// claim came back full. Postbacks handed over by Send are not in the table's due set.
		if free := cap(slots) - len(slots); free > 0 && (polled || free >= minClaim && w.due.Load()) && claims.Due() {
			polled = false
			w.due.Store(false)
			claimed, err := w.db.ClaimPostbacks(ctx, free, w.cfg.Lease)
			switch {
			case err == nil:
				claims.Succeeded()
			case ctx.Err() == nil:
				claims.Failed(err)
			}
			for _, c := range claimed {
				send(c)
			}
			switch {
			case err != nil:
				w.due.Store(true) // try again at the next wake
			case len(claimed) == free:
				w.due.Store(true)
				continue // a full batch: more may be due right away
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		case <-poll.C:
			polled = true
		}
	}
}

// deliver sends one postback and records the result (its slot is held until the record
// commits).
func (w *Worker) deliver(ctx context.Context, c persistence.ClaimedPostback) {
	var status int
	var err error
	if c.Body != nil {
		status, err = w.post(c)
	} else {
		status, err = w.get(c.URL)
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
	reason := "status " + strconv.Itoa(status)
	if err != nil {
		reason = errorText(err)
	}
	dead, err := w.db.MarkPostbackFailed(sctx, c, w.backoff(c.Attempts), w.cfg.Window, reason)
	switch {
	case err != nil:
		log.Warn("record postback failure", zap.String("reason", reason), zap.Error(err))
	case dead:
		t.deadLettered.Add(1)
		log.Error("postback dead-lettered", zap.String("reason", reason))
	case c.Attempts == 1:
		log.Warn("postback failed; will retry", zap.String("reason", reason))
	default:
		log.Debug("postback failed again; will retry", zap.String("reason", reason))
	}
}

// maxPostbackBody is how much of a partner's answer is read: its status is what counts.
const maxPostbackBody = 64 << 10

// maxRedirects is how many redirects a postback follows.
const maxRedirects = 3

// get sends one GET (following up to maxRedirects redirects) and returns the status; the
// body is read (up to maxPostbackBody) and dropped. A partner that sends more still
// answered with its status.
func (w *Worker) get(target string) (int, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(target)
	req.Header.SetMethod(fasthttp.MethodGet)
	err := w.cfg.Client.DoRedirects(req, resp, maxRedirects)
	if errors.Is(err, fasthttp.ErrBodyTooLarge) && resp.StatusCode() != 0 {
		err = nil
	}
	if err != nil {
		return 0, err
	}
	return resp.StatusCode(), nil
}

// errorText is a short reason for last_error and logs. net/http wraps its errors with the
// request URL, whose query carries the signature: only the inner error is kept.
func errorText(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	s := err.Error()
	if len(s) > 200 {
		s = s[:200]
	}
	return s
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
	s, err := w.db.PostbackStats(sctx)
	if err != nil {
		return err
	}
	w.postbacks.pending.Store(s.Pending)
	w.postbacks.dead.Store(s.Dead)
	w.postbacks.oldestPending.Store(int64(s.OldestPending))
	w.webhooks.pending.Store(s.WebhooksPending)
	w.webhooks.dead.Store(s.WebhooksDead)
	w.webhooks.oldestPending.Store(int64(s.WebhooksOldestPending))
	return nil
}

// RegisterMetrics exposes the outbox on /metrics: partner postbacks as switchboard_postbacks_*,
// buyer webhooks as switchboard_webhooks_*. Pending and dead count the whole table (every
// process's worker reports the same, refreshed every StatsEvery); the totals count this
// process's attempts.
func (w *Worker) RegisterMetrics(m *httpio.Metrics) {
	w.postbacks.register(m, "switchboard_postbacks_", "Postback")
	w.webhooks.register(m, "switchboard_webhooks_", "Buyer webhook")
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
