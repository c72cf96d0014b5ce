// Package retry is how background loops retry work that fails while the database is away:
// exponential, capped, jittered backoff between attempts, and a log line per change of state
// (failing, then recovered with the count of failures) instead of one per attempt. A loop that
// runs every 20 ms must not write a thousand lines during a 20 s outage.
package retry

import (
	"context"
	"math/rand/v2"
	"time"

	"go.uber.org/zap"
)

// Backoff is an exponential delay between failed attempts: Min after the first failure,
// doubling per failure up to Max, each delay jittered by ±20 % (and never above Max) so that
// processes that failed together do not retry together.
type Backoff struct {
	Min, Max time.Duration
}

// Default is the backoff of background loops: 100 ms doubling up to 5 s.
var Default = Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second}

// Delay is the wait after the n-th consecutive failure (1-based).
func (b Backoff) Delay(n int) time.Duration {
	if b.Min <= 0 {
		b.Min = Default.Min
	}
	if b.Max < b.Min {
		b.Max = b.Min
	}
	d := b.Max
	if n < 1 {
		n = 1
	}
	if n-1 < 40 {
		if e := b.Min << (n - 1); e > 0 && e < b.Max {
			d = e
		}
	}
	d = time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
	return min(d, b.Max)
}

// Outage follows one background task's attempts: it logs the first failure after a success
// (Warn "background task failing"), then nothing until an attempt succeeds again (Info
// "background task recovered", with the count of failures and how long it lasted), and it
// says when the next attempt is due. It is not safe for concurrent use: one loop owns it.
type Outage struct {
	log      *zap.Logger
	task     string
	backoff  Backoff
	now      func() time.Time
	failures int
	since    time.Time // first failure of the current outage
	next     time.Time // earliest next attempt while failing
}

// NewOutage follows the task named task (a constant, logged as the "task" field), waiting
// backoff between failed attempts. now is the clock (nil: time.Now).
func NewOutage(log *zap.Logger, task string, backoff Backoff, now func() time.Time) *Outage {
	if log == nil {
		log = zap.NewNop()
	}
	if now == nil {
		now = time.Now
	}
	return &Outage{log: log, task: task, backoff: backoff, now: now}
}

// Failed records a failed attempt and returns the delay before the next one. Only the first
// failure of an outage is logged.
func (o *Outage) Failed(err error) time.Duration {
	t := o.now()
	o.failures++
	d := o.backoff.Delay(o.failures)
	if o.failures == 1 {
		o.since = t
		o.log.Warn("background task failing; retrying with backoff", zap.String("task", o.task),
			zap.Duration("retry_in", d), zap.Error(err))
	}
	o.next = t.Add(d)
	return d
}

// Succeeded records a successful attempt, logging the recovery when it ends an outage.
func (o *Outage) Succeeded() {
	if o.failures == 0 {
		return
	}
	o.log.Info("background task recovered", zap.String("task", o.task), zap.Int("failures", o.failures),
		zap.Duration("outage", o.now().Sub(o.since)))
	o.failures = 0
	o.next = time.Time{}
}

// Failing reports whether the last attempt failed.
func (o *Outage) Failing() bool { return o.failures > 0 }

// Due reports whether an attempt may be made now: always after a success, and after a
// failure once its backoff has passed. Loops on a fixed tick skip their work while not due.
func (o *Outage) Due() bool { return o.failures == 0 || !o.now().Before(o.next) }

// Wait sleeps until the next attempt is due; it reports false when ctx ended first.
func (o *Outage) Wait(ctx context.Context) bool {
	if o.Due() {
		return ctx.Err() == nil
	}
	t := time.NewTimer(o.next.Sub(o.now()))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Until is how long until the next attempt is due (0: now).
func (o *Outage) Until() time.Duration {
	if o.Due() {
		return 0
	}
	return o.next.Sub(o.now())
}

// Attempt runs f when an attempt is due and records its result; a failure after ctx ended
// (shutting down) is not one. Loops on a fixed tick call it every tick.
func (o *Outage) Attempt(ctx context.Context, f func(ctx context.Context) error) {
	if !o.Due() {
		return
	}
	if err := f(ctx); err == nil {
		o.Succeeded()
	} else if ctx.Err() == nil {
		o.Failed(err)
	}
}
