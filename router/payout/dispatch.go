package payout

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/internal/mirror"
	"github.com/switchboard/switchboard/internal/retry"
	"github.com/switchboard/switchboard/persistence"
)

// Run delivers due postbacks until ctx ends, then waits for the deliveries in flight (which
// ctx cancels; their rows are retried when their lease runs out).
func (w *Worker) Run(ctx context.Context) {
	defer close(w.done)
	// Deliveries are recorded in batches; the recorder stops after the last delivery.
	w.marks = w.outbox.NewDeliveryMarks()
	defer w.marks.Close()
	var inflight sync.WaitGroup
	defer inflight.Wait()

	listenCtx, stopListen := context.WithCancel(ctx)
	defer stopListen()
	inflight.Add(1)
	go func() {
		defer inflight.Done()
		w.listen(listenCtx)
	}()
	inflight.Add(1)
	go func() {
		defer inflight.Done()
		w.refreshStatsEvery(ctx)
	}()

	d := w.newDispatch(&inflight)
	defer d.poll.Stop()
	w.due.Store(true)
	for {
		d.startReady(ctx)
		if d.claim(ctx) {
			continue
		}
		if !d.wait(ctx) {
			return
		}
	}
}

// listen wakes the worker at every notification of an enqueue, and at every (re)connect
// (notifications may have been lost): either means due rows may be waiting.
func (w *Worker) listen(ctx context.Context) {
	mirror.Run(ctx, mirror.Config[struct{}]{
		Name:     "postback outbox",
		Log:      w.log,
		Listen:   mirror.Listener(w.feed.ListenOn, persistence.PostbackChannel),
		Notified: func(string, func(struct{})) { w.claimable() },
		Full:     func(context.Context) error { w.claimable(); return nil },
	})
}

// refreshStatsEvery refreshes the /metrics gauges every StatsEvery until ctx ends, logging
// an outage of the database once.
func (w *Worker) refreshStatsEvery(ctx context.Context) {
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
}

// dispatch is the state of one Run: the delivery slots, the deliveries in flight, and when
// to claim from the table next.
type dispatch struct {
	w        *Worker
	inflight *sync.WaitGroup // deliveries and give-backs in flight; Run waits for them
	s        *slots
	poll     *time.Ticker
	// minClaim is how many slots must be free before a claim between polls: under load,
	// slots free up one delivery at a time, and claiming for each would cost a statement per
	// postback. A claim waits until half of one destination's slots are free (a destination
	// with rows left claims again once half its room is free), or for the poll (so that slow
	// deliveries cannot hold the rest back).
	minClaim int
	// claims backs off while the database is away (retried at a wake or poll once due) and
	// logs the failure once.
	claims *retry.Outage
	polled bool // the poll ticked since the last claim
}

// newDispatch starts the state of a Run whose deliveries inflight counts.
func (w *Worker) newDispatch(inflight *sync.WaitGroup) *dispatch {
	return &dispatch{
		w:        w,
		inflight: inflight,
		s:        newSlots(w.cfg.Parallel, w.cfg.PerDestination),
		poll:     time.NewTicker(w.cfg.Poll),
		minClaim: max(1, w.cfg.PerDestination/2),
		claims:   retry.NewOutage(w.log, "postback claim", retry.Default, nil),
		polled:   true,
	}
}

// startReady starts what may start without the table: finished deliveries free their
// slots, postbacks this process's callbacks handed over (Send; they are leased to it) take
// their turn first, those that can no longer start within their lease are given back, and
// every startable one is sent.
func (d *dispatch) startReady(ctx context.Context) {
	if d.s.collect() {
		d.w.due.Store(true)
	}
	for d.s.queued < directQueue {
		select {
		case h := <-d.w.direct:
			d.s.queue(h)
			continue
		default:
		}
		break
	}
	if late := d.s.expired(time.Now()); len(late) > 0 {
		d.giveBack(ctx, late)
	}
	for _, c := range d.s.startable() {
		d.send(ctx, c)
	}
}

// claim claims due rows for the free slots and sends them, between polls only when rows may
// be due: enqueued elsewhere (NOTIFY), or the last claim came back full. Postbacks handed
// over by Send are not in the table's due set. It reports whether to claim again at once.
func (d *dispatch) claim(ctx context.Context) (again bool) {
	w := d.w
	free := d.s.free()
	if free <= 0 || !(d.polled || free >= d.minClaim && w.due.Load()) || !d.claims.Due() {
		return false
	}
	d.polled = false
	w.due.Store(false)
	r, err := w.outbox.Claim(ctx, persistence.Claim{Limit: free, Lease: w.cfg.Lease,
		PerDestination: w.cfg.PerDestination, InFlight: d.s.busy})
	switch {
	case err == nil:
		d.claims.Succeeded()
	case ctx.Err() == nil:
		d.claims.Failed(err)
	}
	d.s.claimed(r.Rows, r.Full)
	for _, c := range r.Rows {
		d.send(ctx, c)
	}
	switch {
	case err != nil:
		w.due.Store(true) // try again at the next wake
	case (r.Left || r.Full) && len(r.Rows) > 0:
		// Due rows were left, for want of slots or of their destination's room, or lie
		// beyond the window, and this claim changed what may be claimed: claim again at once.
		w.due.Store(true)
		return true
	case r.Full:
		w.due.Store(true) // as slots free up
	}
	return false
}

// wait waits for a reason to look again: a wake, a finished delivery or the poll. It
// reports false once ctx has ended.
func (d *dispatch) wait(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-d.w.wake:
	case dest := <-d.s.finished:
		if d.s.done(dest) {
			d.w.due.Store(true)
		}
	case <-d.poll.C:
		d.polled = true
	}
	return true
}

// send delivers c in a slot of its destination, held until its result is recorded.
func (d *dispatch) send(ctx context.Context, c persistence.ClaimedPostback) {
	dest := d.s.take(c)
	d.inflight.Add(1)
	go func() {
		defer d.inflight.Done()
		d.w.deliver(ctx, c)
		d.s.finished <- dest
	}()
}

// giveBack returns postbacks that could not start within their lease to the table, due. On
// failure the rows wait for their lease like any lost claim; none was sent.
func (d *dispatch) giveBack(ctx context.Context, cs []persistence.ClaimedPostback) {
	d.inflight.Add(1)
	go func() {
		defer d.inflight.Done()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := d.w.outbox.ReleasePostbacks(rctx, cs); err != nil {
			d.w.log.Warn("give back postbacks", zap.Int("postbacks", len(cs)), zap.Error(err))
		}
	}()
}
