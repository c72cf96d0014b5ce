package persistence

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostbackChannel is the NOTIFY channel that wakes every process's postback worker when a
// postback is enqueued; the payload is empty.
const PostbackChannel = "switchboard_postback"

// Postback kinds.
const (
	PostbackOutcome    = "outcome"    // the first valid callback's outcome
	PostbackReversal   = "reversal"   // a rejected (or reconciled-away) complete
	PostbackAcceptance = "acceptance" // a session reconcile made an accepted complete
)

// Postback is one server-to-server notification to a supply partner, fully built and signed
// by the caller (router/payout).
type Postback struct {
	TID         string
	Kind        string // PostbackOutcome, PostbackReversal or PostbackAcceptance
	PublisherID int64
	URL         string // the signed GET URL; empty: the publisher takes no postbacks
	// EventID is the ledger event the postback tells of (EventID, carried in the URL as
	// event_id); each is stored once, with its event.
	EventID string
}

// EnqueuePostback stores p in the outbox inside the caller's transaction, so that it exists
// exactly when the outcome, rejection or reconciliation it announces does (with its ledger
// event), and wakes the workers when tx commits. EventID is the idempotency key: a postback
// of an event already enqueued is left as it is. A postback without a URL is not stored.
func EnqueuePostback(ctx context.Context, tx pgx.Tx, p Postback) error {
	return EnqueuePostbacks(ctx, tx, []Postback{p})
}

// EnqueuePostbacks is EnqueuePostback for many postbacks in one statement (reject_completes
// and reconcile reverse thousands at once).
func EnqueuePostbacks(ctx context.Context, tx pgx.Tx, ps []Postback) error {
	n := 0
	tids, kinds, pubs, urls, evs := make([]string, 0, len(ps)), make([]string, 0, len(ps)), make([]int64, 0, len(ps)), make([]string, 0, len(ps)), make([]string, 0, len(ps))
	for _, p := range ps {
		if p.URL == "" {
			continue
		}
		tids, kinds, pubs, urls, evs = append(tids, p.TID), append(kinds, p.Kind), append(pubs, p.PublisherID), append(urls, p.URL), append(evs, p.EventID)
		n++
	}
	if n == 0 {
		return nil
	}
	tag, err := tx.Exec(ctx, `INSERT INTO postback_outbox (tid, kind, publisher_id, url, event_id)
		SELECT tid, kind, pub, url, NULLIF(ev, '') FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[]) AS p(tid, kind, pub, url, ev)
		ON CONFLICT (event_id) WHERE event_id IS NOT NULL DO NOTHING`,
		tids, kinds, pubs, urls, evs)
	if err != nil || tag.RowsAffected() == 0 {
		return err
	}
	_, err = tx.Exec(ctx, `SELECT pg_notify($1, '')`, PostbackChannel)
	return err
}

// ClaimedPostback is an outbox row a worker holds a lease on.
type ClaimedPostback struct {
	ID          int64
	TID         string // a webhook's event_id
	Kind        string
	PublisherID int64 // 0 on a webhook
	URL         string
	Attempts    int // including the one this claim is for
	CreatedAt   time.Time

	// A webhook (Kind PostbackWebhook) is a POST of Body, signed with its buyer's
	// api_secret, BuyerSecret, at delivery. Both are empty on a partner postback (a GET of
	// the signed URL). BuyerSecret must never be logged.
	BuyerID     int64
	Body        []byte
	BuyerSecret string
}

// Destination is who an outbox row goes to: a supply partner (its postbacks) or a buyer (its
// webhook). Workers bound how many deliveries each destination has in flight, so that one
// slow endpoint cannot take every delivery slot.
type Destination struct {
	PublisherID int64 // the partner of a postback; 0 on a webhook
	BuyerID     int64 // the buyer of a webhook; 0 on a postback
}

// Destination is who c goes to.
func (c ClaimedPostback) Destination() Destination {
	if c.PublisherID != 0 {
		return Destination{PublisherID: c.PublisherID}
	}
	return Destination{BuyerID: c.BuyerID}
}

// key is d as one number, as claimSQL computes it from a row: the publisher id, or the
// buyer id negated.
func (d Destination) key() int64 {
	if d.PublisherID != 0 {
		return d.PublisherID
	}
	return -d.BuyerID
}

// Claim bounds one claim of due postbacks.
type Claim struct {
	Limit int           // rows at most
	Lease time.Duration // how long the claimed rows stay invisible to other claims
	// PerDestination, when > 0, is how many deliveries one destination may have in flight:
	// a destination with InFlight[d] >= PerDestination gets no row, another at most
	// PerDestination - InFlight[d].
	PerDestination int
	InFlight       map[Destination]int
}

// ClaimPostbacks leases up to limit due postbacks, whatever their destination (Claim).
func (db *OutboxStore) ClaimPostbacks(ctx context.Context, limit int, lease time.Duration) ([]ClaimedPostback, error) {
	r, err := db.Claim(ctx, Claim{Limit: limit, Lease: lease})
	return r.Rows, err
}

// Claimed is what a Claim leased, and what it saw of the rows it left.
type Claimed struct {
	Rows []ClaimedPostback
	// Left: the claim left due rows it looked at (their destination's room or the limit
	// was reached).
	Left bool
	// Full: the claim's window was full, so that more rows may be due beyond it.
	Full bool
}

// Claim leases due postbacks within c's bounds, the longest due first: rows locked by another
// claimer are skipped, and each claimed row's next_attempt_at moves c.Lease ahead, so no other
// worker takes it while this one delivers, and a worker that dies mid-delivery leaves it to be
// claimed again once the lease runs out (at-least-once). The claim looks at the due rows of
// destinations with room, a window of up to four times c.Limit of them. It runs in the
// settings of beginOutboxTx.
func (db *OutboxStore) Claim(ctx context.Context, c Claim) (Claimed, error) {
	b, out, window := claimBatch(c)
	if err := db.sendTx(ctx, b); err != nil {
		return Claimed{}, classify(err)
	}
	return Claimed{Rows: *out, Left: *window > len(*out), Full: *window == claimWindow(c)}, nil
}

// claimWindow is how many due rows a claim looks at.
func claimWindow(c Claim) int {
	if c.PerDestination <= 0 {
		return c.Limit
	}
	return min(4*c.Limit, 4096)
}

// claimBatch is one Claim in one round trip; *out holds the claimed rows once the batch is
// sent, *window how many due rows it looked at.
func claimBatch(c Claim) (b *pgx.Batch, out *[]ClaimedPostback, window *int) {
	out, window = new([]ClaimedPostback), new(int)
	per := c.PerDestination
	if per <= 0 {
		per = c.Limit
	}
	busy, room, full := []int64{}, []int64{}, []int64{} // never NULL: "<> ALL(NULL)" is never true
	for d, n := range c.InFlight {
		if n >= per {
			full = append(full, d.key())
		} else if n > 0 {
			busy, room = append(busy, d.key()), append(room, int64(per-n))
		}
	}
	b = beginOutboxTx()
	// A destination's rows are ranked by due time; it gets those within its room.
	b.Queue(`WITH due AS (
			SELECT id, COALESCE(publisher_id, -buyer_id) AS dest, next_attempt_at FROM postback_outbox
			WHERE delivered_at IS NULL AND dead_at IS NULL AND next_attempt_at <= now()
				AND COALESCE(publisher_id, -buyer_id) <> ALL($3::bigint[])
			ORDER BY next_attempt_at LIMIT $4
			FOR UPDATE SKIP LOCKED
		), pick AS (
			SELECT r.id FROM (
				SELECT due.id, due.next_attempt_at,
					row_number() OVER (PARTITION BY due.dest ORDER BY due.next_attempt_at, due.id) AS n,
					COALESCE(busy.room, $7::bigint) AS room
				FROM due LEFT JOIN unnest($5::bigint[], $6::bigint[]) AS busy(dest, room) ON busy.dest = due.dest) r
			WHERE r.n <= r.room
			ORDER BY r.next_attempt_at, r.id LIMIT $1
		)
		UPDATE postback_outbox o
		SET attempts = o.attempts + 1, next_attempt_at = now() + $2::bigint * interval '1 microsecond'
		FROM pick WHERE o.id = pick.id
		RETURNING o.id, o.tid, o.kind, COALESCE(o.publisher_id, 0), o.url, o.attempts, o.created_at,
			COALESCE(o.buyer_id, 0), o.body,
			CASE WHEN o.buyer_id IS NOT NULL THEN (SELECT b.api_secret FROM buyers b WHERE b.id = o.buyer_id) ELSE '' END,
			(SELECT count(*) FROM due)`,
		c.Limit, c.Lease.Microseconds(), full, claimWindow(c), busy, room, per).Query(func(rows pgx.Rows) error {
		var err error
		*out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (ClaimedPostback, error) {
			var c ClaimedPostback
			err := r.Scan(&c.ID, &c.TID, &c.Kind, &c.PublisherID, &c.URL, &c.Attempts, &c.CreatedAt,
				&c.BuyerID, &c.Body, &c.BuyerSecret, window)
			return c, err
		})
		return err
	})
	b.Queue("COMMIT")
	return b, out, window
}

// ReleasePostbacks gives back rows claimed (or stored leased) but never sent: each is due at
// once with its attempt uncounted, for any worker to claim, and the workers are woken. A row
// whose lease was lost meanwhile (claimed again, delivered, dead) is left alone.
func (db *OutboxStore) ReleasePostbacks(ctx context.Context, cs []ClaimedPostback) error {
	if len(cs) == 0 {
		return nil
	}
	ids, attempts := make([]int64, len(cs)), make([]int32, len(cs))
	for i, c := range cs {
		ids[i], attempts[i] = c.ID, int32(c.Attempts)
	}
	_, err := db.Pool.Exec(ctx, `WITH r AS (
			UPDATE postback_outbox o SET attempts = o.attempts - 1, next_attempt_at = now()
			FROM unnest($1::bigint[], $2::int[]) AS g(id, attempts)
			WHERE o.id = g.id AND o.attempts = g.attempts AND o.delivered_at IS NULL AND o.dead_at IS NULL
			RETURNING 1)
		SELECT count(pg_notify($3, '')) FROM (SELECT 1 FROM r LIMIT 1) n`, ids, attempts, PostbackChannel)
	return classify(err)
}

// beginOutboxTx starts a batch holding one worker transaction on the outbox (a claim or
// delivery marks) in the settings those run with:
//   - no waiting for the WAL flush: a claim or mark lost in a database crash only means a
//     postback is sent again after its lease, which at-least-once delivery allows already;
//   - a custom plan every time: a generic plan made while the outbox was small (a fresh
//     deployment, before autovacuum's first analyze) reads the whole table for every batch
//     (5–10 ms per mark once it held a few thousand rows, measured) and stays cached until
//     that analyze; planning these statements costs tens of microseconds.
func beginOutboxTx() *pgx.Batch {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue("SET LOCAL synchronous_commit = off")
	b.Queue("SET LOCAL plan_cache_mode = force_custom_plan")
	return b
}

// MarkPostbackFailed records a failed attempt of claim c: the next attempt comes after
// retryIn, but no later than window after the row was created (or last retried by an
// operator, RetryPostbacks); an attempt failing at or after that point dead-letters the row,
// and so does a permanent failure (one every retry would meet alike: the destination is
// refused) at once. The row is left alone when c's lease was lost (a later claim or a
// delivery got there first). It reports whether the row is now dead. errText must be short
// and carry no secret.
func (db *OutboxStore) MarkPostbackFailed(ctx context.Context, c ClaimedPostback, retryIn, window time.Duration, errText string, permanent bool) (dead bool, err error) {
	err = db.Pool.QueryRow(ctx, `UPDATE postback_outbox SET last_error = $3,
			dead_at = CASE WHEN $6 OR now() >= COALESCE(retried_at, created_at) + $4::bigint * interval '1 microsecond' THEN now() END,
			next_attempt_at = LEAST(now() + $2::bigint * interval '1 microsecond',
				COALESCE(retried_at, created_at) + $4::bigint * interval '1 microsecond')
		WHERE id = $1 AND attempts = $5 AND delivered_at IS NULL AND dead_at IS NULL
		RETURNING dead_at IS NOT NULL`,
		c.ID, retryIn.Microseconds(), errText, window.Microseconds(), c.Attempts, permanent).Scan(&dead)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return dead, classify(err)
}

// PostbackStats counts the outbox for /metrics and the operator console: partner postbacks,
// and buyer webhooks apart, and the backlog of each destination.
type PostbackStats struct {
	Pending       int64         // neither delivered nor dead
	Dead          int64         // dead-lettered
	OldestPending time.Duration // age of the oldest pending row, 0 when none

	WebhooksPending       int64
	WebhooksDead          int64
	WebhooksOldestPending time.Duration

	// Backlogs are the destinations with pending rows, the longest waiting first.
	Backlogs []Backlog
}

// Backlog is one destination's pending rows: how many, how many of them failed at least
// once, and how long the oldest has waited (its delivery lag).
type Backlog struct {
	Destination
	Pending, Failing int64
	Oldest           time.Duration
}

// PostbackStats reads the outbox's counts. It reads the pending rows (one partial index) and
// counts the dead ones (another); delivered rows, the bulk of the table, are not read.
func (db *OutboxStore) PostbackStats(ctx context.Context) (PostbackStats, error) {
	var s PostbackStats
	rows, err := db.Pool.Query(ctx, `SELECT COALESCE(publisher_id, 0), COALESCE(buyer_id, 0), count(*),
			count(*) FILTER (WHERE last_error IS NOT NULL), EXTRACT(EPOCH FROM now() - min(created_at))::float8
		FROM postback_outbox WHERE delivered_at IS NULL AND dead_at IS NULL
		GROUP BY 1, 2 ORDER BY 5 DESC, 1, 2`)
	if err != nil {
		return s, classify(err)
	}
	s.Backlogs, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Backlog, error) {
		var b Backlog
		var oldest float64
		err := r.Scan(&b.PublisherID, &b.BuyerID, &b.Pending, &b.Failing, &oldest)
		b.Oldest = time.Duration(max(oldest, 0) * float64(time.Second))
		return b, err
	})
	if err != nil {
		return s, classify(err)
	}
	for _, b := range s.Backlogs {
		pending, oldest := &s.Pending, &s.OldestPending
		if b.BuyerID != 0 {
			pending, oldest = &s.WebhooksPending, &s.WebhooksOldestPending
		}
		*pending += b.Pending
		*oldest = max(*oldest, b.Oldest)
	}
	err = db.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE buyer_id IS NULL), count(*) FILTER (WHERE buyer_id IS NOT NULL)
		FROM postback_outbox WHERE dead_at IS NOT NULL`).Scan(&s.Dead, &s.WebhooksDead)
	return s, classify(err)
}

// DeliveryMarks records postback deliveries by group commit: every delivery that finishes
// while a batch commits joins the next one, so a busy worker pays one UPDATE per batch
// instead of per postback (no waiting for company: each delivery holds its worker's slot
// until its mark commits). Marks run in the settings of beginOutboxTx.
type DeliveryMarks struct {
	db *OutboxStore
	gc groupCommit[*markJob]
}

type markJob struct {
	id   int64
	err  error
	done chan struct{}
}

// NewDeliveryMarks starts the recorder; Close stops it.
func (db *OutboxStore) NewDeliveryMarks() *DeliveryMarks {
	m := &DeliveryMarks{db: db}
	// One batch at a time: at 3,000 callbacks/s two workers split the marks into twice as
	// many transactions, for 5–10 % more CPU per callback and no more throughput (router
	// timing test, medians of 3).
	m.gc.start(EntryWriterConfig{Workers: 1, MaxBatch: 256}, m.run)
	return m
}

// Mark records that postback id was delivered, once its batch has committed.
func (m *DeliveryMarks) Mark(ctx context.Context, id int64) error {
	j := &markJob{id: id, done: make(chan struct{})}
	if err := m.gc.offer(0, j, ctx.Done(), ctx.Err); err != nil {
		return err
	}
	<-j.done
	return j.err
}

// Close stops the recorder once the queued marks are written.
func (m *DeliveryMarks) Close() { m.gc.close() }

func (m *DeliveryMarks) run(batch []*markJob) {
	ids := make([]int64, len(batch))
	for i, j := range batch {
		ids[i] = j.id
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := classify(m.db.sendTx(ctx, markBatch(ids)))
	for _, j := range batch {
		j.err = err
		close(j.done)
	}
}

// markBatch records the deliveries of ids in one round trip.
func markBatch(ids []int64) *pgx.Batch {
	b := beginOutboxTx()
	b.Queue(`UPDATE postback_outbox SET delivered_at = now(), last_error = NULL
		WHERE id = ANY($1) AND delivered_at IS NULL`, ids)
	b.Queue("COMMIT")
	return b
}
