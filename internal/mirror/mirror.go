// Package mirror keeps an in-memory copy of database state current: the loop every mirror
// shares (the engine's campaigns, the counters, the panel, the blocked set, the postback
// outbox's wake-ups). It holds a dedicated LISTEN connection, reconnecting with capped,
// jittered backoff; gathers the keys notifications name and reloads them in batches after a
// debounce; reloads everything after every (re)connect (notifications sent while
// disconnected are lost) and periodically as a safety net. Failed reloads are retried with
// backoff and logged once per outage (internal/retry).
//
// The package knows no SQL: persistence opens the connection (persistence.DB.ListenOn) and
// the mirror's owner supplies the reloads.
package mirror

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/internal/retry"
)

// Conn is a dedicated LISTEN connection (persistence.Listener).
type Conn interface {
	// Next waits for the next notification's payload; an error means the connection is
	// lost.
	Next(ctx context.Context) (string, error)
	// Close ends the connection.
	Close()
}

// Listener adapts a function that LISTENs on a named channel (persistence.DB.ListenOn) to
// Config.Listen.
func Listener[C Conn](listen func(ctx context.Context, channel string) (C, error), channel string) func(context.Context) (Conn, error) {
	return func(ctx context.Context) (Conn, error) {
		c, err := listen(ctx, channel)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

// Config describes one mirror. K is the key that notifications name (a campaign id, a
// participant id).
type Config[K comparable] struct {
	// Name names the mirror in logs ("engine", "counters", ...).
	Name string
	// Log receives the mirror's lines (nil: none).
	Log *zap.Logger
	// Listen opens the LISTEN connection (see Listener). Nil: no notifications; Full runs
	// once at start.
	Listen func(ctx context.Context) (Conn, error)
	// Notified reads a notification's payload, passing the keys it names to add, or acts on
	// it at once (then adding nothing). It runs on the listening goroutine and must not
	// block.
	Notified func(payload string, add func(K))
	// Debounce is how long a burst of notifications gathers before its keys are reloaded
	// (0: reload at once).
	Debounce time.Duration
	// Reload reloads the named keys. When it fails they are kept and retried with backoff.
	Reload func(ctx context.Context, keys []K) error
	// Full reloads everything: after every (re)connect, and after a failed Safety. It is
	// retried with backoff until it succeeds. Nil: nothing to reload.
	Full func(ctx context.Context) error
	// Every is the period of the safety reload (0: none).
	Every time.Duration
	// Safety is the periodic safety reload (nil: Full); it may skip the work when it can
	// tell nothing changed.
	Safety func(ctx context.Context) error
	// Backoff is the delay between failed attempts (zero: retry.Default).
	Backoff retry.Backoff
	// MaxPending bounds the keys waiting for Reload (default 100,000); beyond it
	// notifications are dropped (logged once per episode) and the safety reload catches up.
	MaxPending int
}

// IDs is the Notified of channels whose payload names one id or a comma-separated list of
// ids (decimal int64); anything else in the payload is skipped.
func IDs(payload string, add func(int64)) {
	for f := range strings.SplitSeq(payload, ",") {
		if id, err := strconv.ParseInt(f, 10, 64); err == nil {
			add(id)
		}
	}
}

// errPendingFull is the failure of dropping notifications.
var errPendingFull = errors.New("too many keys waiting for reload")

// mirror is one running Config.
type mirror[K comparable] struct {
	cfg       Config[K]
	stats     *stats
	mu        sync.Mutex
	pending   map[K]struct{}
	kick      chan struct{}
	connected chan struct{}
}

// Run keeps the mirror current until ctx ends; it returns once its goroutines have.
func Run[K comparable](ctx context.Context, cfg Config[K]) {
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	if cfg.Backoff == (retry.Backoff{}) {
		cfg.Backoff = retry.Default
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = 100_000
	}
	if cfg.Safety == nil {
		cfg.Safety = cfg.Full
	}
	m := &mirror[K]{cfg: cfg, pending: map[K]struct{}{}, kick: make(chan struct{}, 1), connected: make(chan struct{}, 1),
		stats: track(cfg.Name, cfg.Listen != nil)}
	defer untrack(m.stats)
	var wg sync.WaitGroup
	if cfg.Listen != nil {
		wg.Add(1)
		go func() { defer wg.Done(); m.listen(ctx) }()
	} else {
		m.connected <- struct{}{}
	}
	m.loop(ctx)
	wg.Wait()
}

// listen holds the LISTEN connection, reconnecting with backoff, and tells loop of every
// (re)connect.
func (m *mirror[K]) listen(ctx context.Context) {
	conn := retry.NewOutage(m.cfg.Log, m.cfg.Name+" listen", m.cfg.Backoff, nil)
	drops := retry.NewOutage(m.cfg.Log, m.cfg.Name+" notifications", m.cfg.Backoff, nil)
	add := func(k K) {
		m.mu.Lock()
		if len(m.pending) >= m.cfg.MaxPending {
			m.mu.Unlock()
			drops.Failed(errPendingFull)
			return
		}
		m.pending[k] = struct{}{}
		m.mu.Unlock()
		drops.Succeeded()
		select {
		case m.kick <- struct{}{}:
		default:
		}
	}
	for conn.Wait(ctx) {
		c, err := m.cfg.Listen(ctx)
		if err != nil {
			if ctx.Err() == nil {
				conn.Failed(err)
			}
			continue
		}
		conn.Succeeded()
		m.stats.connected.Store(true)
		select {
		case m.connected <- struct{}{}:
		default:
		}
		for {
			payload, err := c.Next(ctx)
			if err != nil {
				if ctx.Err() == nil {
					conn.Failed(err)
				}
				break
			}
			if m.cfg.Notified != nil {
				m.cfg.Notified(payload, add)
			}
		}
		m.stats.connected.Store(false)
		c.Close()
	}
}

// loop runs the reloads, one at a time.
func (m *mirror[K]) loop(ctx context.Context) {
	full := retry.NewOutage(m.cfg.Log, m.cfg.Name+" full reload", m.cfg.Backoff, nil)
	keys := retry.NewOutage(m.cfg.Log, m.cfg.Name+" reload", m.cfg.Backoff, nil)
	var tick <-chan time.Time
	if m.cfg.Every > 0 && m.cfg.Safety != nil {
		t := time.NewTicker(m.cfg.Every)
		defer t.Stop()
		tick = t.C
	}
	needFull, safety, kicked := false, false, false
	for {
		if (needFull || safety) && full.Due() && m.cfg.Full != nil {
			reload := m.cfg.Safety
			if needFull {
				reload = m.cfg.Full
			}
			if err := reload(ctx); err != nil {
				if ctx.Err() != nil {
					return
				}
				full.Failed(err)
				needFull = true
			} else {
				full.Succeeded()
				m.stats.reloaded()
				needFull = false
			}
			safety = false
		}
		if kicked && keys.Due() {
			kicked = false
			if ids := m.take(); len(ids) > 0 {
				if err := m.cfg.Reload(ctx, ids); err != nil {
					if ctx.Err() != nil {
						return
					}
					keys.Failed(err)
					m.putBack(ids)
					kicked = true
				} else {
					keys.Succeeded()
					m.stats.reloaded()
				}
			}
		}
		var retryIn <-chan time.Time
		var timer *time.Timer
		if wait, ok := m.retryWait(needFull, full, kicked, keys); ok {
			timer = time.NewTimer(wait)
			retryIn = timer.C
		}
		m.wait(ctx, &needFull, &safety, &kicked, tick, retryIn)
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// wait blocks until something is to be done: a (re)connect, the safety tick, a retry due,
// or notifications (after their debounce).
func (m *mirror[K]) wait(ctx context.Context, needFull, safety, kicked *bool, tick, retryIn <-chan time.Time) {
	select {
	case <-ctx.Done():
	case <-m.connected:
		*needFull = m.cfg.Full != nil
	case <-tick:
		*safety = true
	case <-retryIn:
	case <-m.kick:
		if m.cfg.Debounce > 0 {
			t := time.NewTimer(m.cfg.Debounce)
			defer t.Stop()
			select {
			case <-ctx.Done():
			case <-t.C:
			}
		}
		*kicked = m.cfg.Reload != nil
	}
}

// retryWait is how long until a failed reload is due again, if one is waiting.
func (m *mirror[K]) retryWait(needFull bool, full *retry.Outage, kicked bool, keys *retry.Outage) (time.Duration, bool) {
	var wait time.Duration
	ok := false
	for _, w := range []struct {
		waiting bool
		o       *retry.Outage
	}{{needFull && m.cfg.Full != nil, full}, {kicked, keys}} {
		if w.waiting {
			if d := w.o.Until(); !ok || d < wait {
				wait, ok = d, true
			}
		}
	}
	return wait, ok
}

func (m *mirror[K]) take() []K {
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := make([]K, 0, len(m.pending))
	for k := range m.pending {
		ids = append(ids, k)
	}
	clear(m.pending)
	return ids
}

func (m *mirror[K]) putBack(ids []K) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range ids {
		m.pending[k] = struct{}{}
	}
}
