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

// Postback kinds: at most one of each per transaction id.
const (
	PostbackOutcome    = "outcome"    // the first valid callback's outcome
	PostbackReversal   = "reversal"   // a rejected (or reconciled-away) complete
	PostbackAcceptance = "acceptance" // a session reconcile made an accepted complete
)

// Postback is one server-to-server notification to a supply partner, fully built and signed
// by the caller (internal/payout).
type Postback struct {
	TID         string
	Kind        string // PostbackOutcome, PostbackReversal or PostbackAcceptance
	PublisherID int64
	URL         string // the signed GET URL; empty: the publisher takes no postbacks
}

// EnqueuePostback stores p in the outbox inside the caller's transaction, so that it exists
// exactly when the outcome, rejection or reconciliation it announces does, and wakes the
// workers when tx commits. (TID, Kind) is the idempotency key: a postback already enqueued
// is left as it is. A postback without a URL is not stored.
func EnqueuePostback(ctx context.Context, tx pgx.Tx, p Postback) error {
	return EnqueuePostbacks(ctx, tx, []Postback{p})
}

// EnqueuePostbacks is EnqueuePostback for many postbacks in one statement (reject_completes
// and reconcile reverse thousands at once).
func EnqueuePostbacks(ctx context.Context, tx pgx.Tx, ps []Postback) error {
	n := 0
	tids, kinds, pubs, urls := make([]string, 0, len(ps)), make([]string, 0, len(ps)), make([]int64, 0, len(ps)), make([]string, 0, len(ps))
	for _, p := range ps {
		if p.URL == "" {
			continue
		}
		tids, kinds, pubs, urls = append(tids, p.TID), append(kinds, p.Kind), append(pubs, p.PublisherID), append(urls, p.URL)
		n++
	}
	if n == 0 {
		return nil
	}
	tag, err := tx.Exec(ctx, `INSERT INTO postback_outbox (tid, kind, publisher_id, url)
		SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[])
		ON CONFLICT (tid, kind) DO NOTHING`, tids, kinds, pubs, urls)
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

// ClaimPostbacks leases up to limit due postbacks: rows locked by another claimer are
// skipped, and each claimed row's next_attempt_at moves lease ahead, so no other worker
// takes it while this one delivers, and a worker that dies mid-delivery leaves it to be
// claimed again once the lease runs out (at-least-once). The claim runs in the settings of
// beginOutboxTx.
func (db *DB) ClaimPostbacks(ctx context.Context, limit int, lease time.Duration) ([]ClaimedPostback, error) {
	b, out := claimBatch(limit, lease)
	if err := db.sendTx(ctx, b); err != nil {
		return nil, classify(err)
	}
	return *out, nil
}

// claimBatch is one claim of ClaimPostbacks in one round trip; *out holds the claimed rows
// once the batch is sent.
func claimBatch(limit int, lease time.Duration) (b *pgx.Batch, out *[]ClaimedPostback) {
	out = new([]ClaimedPostback)
	b = beginOutboxTx()
	b.Queue(`WITH due AS (
			SELECT id FROM postback_outbox
			WHERE delivered_at IS NULL AND dead_at IS NULL AND next_attempt_at <= now()
			ORDER BY next_attempt_at LIMIT $1
			FOR UPDATE SKIP LOCKED)
		UPDATE postback_outbox o
		SET attempts = o.attempts + 1, next_attempt_at = now() + $2::bigint * interval '1 microsecond'
		FROM due WHERE o.id = due.id
		RETURNING o.id, o.tid, o.kind, COALESCE(o.publisher_id, 0), o.url, o.attempts, o.created_at,
			COALESCE(o.buyer_id, 0), o.body,
			CASE WHEN o.buyer_id IS NOT NULL THEN (SELECT b.api_secret FROM buyers b WHERE b.id = o.buyer_id) ELSE '' END`,
		limit, lease.Microseconds()).Query(func(rows pgx.Rows) error {
		var err error
		*out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (ClaimedPostback, error) {
			var c ClaimedPostback
			err := r.Scan(&c.ID, &c.TID, &c.Kind, &c.PublisherID, &c.URL, &c.Attempts, &c.CreatedAt,
				&c.BuyerID, &c.Body, &c.BuyerSecret)
			return c, err
		})
		return err
	})
	b.Queue("COMMIT")
	return b, out
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
// operator, RetryPostbacks); an attempt failing at or
// after that point dead-letters the row. The row is left alone when c's lease was lost (a
// later claim or a delivery got there first). It reports whether the row is now dead.
// errText must be short and carry no secret.
func (db *DB) MarkPostbackFailed(ctx context.Context, c ClaimedPostback, retryIn, window time.Duration, errText string) (dead bool, err error) {
	err = db.Pool.QueryRow(ctx, `UPDATE postback_outbox SET last_error = $3,
			dead_at = CASE WHEN now() >= COALESCE(retried_at, created_at) + $4::bigint * interval '1 microsecond' THEN now() END,
			next_attempt_at = LEAST(now() + $2::bigint * interval '1 microsecond',
				COALESCE(retried_at, created_at) + $4::bigint * interval '1 microsecond')
		WHERE id = $1 AND attempts = $5 AND delivered_at IS NULL AND dead_at IS NULL
		RETURNING dead_at IS NOT NULL`,
		c.ID, retryIn.Microseconds(), errText, window.Microseconds(), c.Attempts).Scan(&dead)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return dead, classify(err)
}

// PostbackStats counts the outbox for /metrics: partner postbacks, and buyer webhooks apart.
type PostbackStats struct {
	Pending       int64         // neither delivered nor dead
	Dead          int64         // dead-lettered
	OldestPending time.Duration // age of the oldest pending row, 0 when none

	WebhooksPending       int64
	WebhooksDead          int64
	WebhooksOldestPending time.Duration
}

// PostbackStats reads the outbox's counts.
func (db *DB) PostbackStats(ctx context.Context) (PostbackStats, error) {
	var s PostbackStats
	var oldest, hookOldest float64
	// Each part reads one partial index; delivered rows, the bulk of the table, are not read.
	err := db.Pool.QueryRow(ctx, `WITH pending AS (
			SELECT created_at, buyer_id IS NOT NULL AS hook FROM postback_outbox WHERE delivered_at IS NULL AND dead_at IS NULL
		), dead AS (
			SELECT buyer_id IS NOT NULL AS hook FROM postback_outbox WHERE dead_at IS NOT NULL)
		SELECT (SELECT count(*) FILTER (WHERE NOT hook) FROM pending),
			(SELECT count(*) FILTER (WHERE NOT hook) FROM dead),
			COALESCE(EXTRACT(EPOCH FROM now() - (SELECT min(created_at) FILTER (WHERE NOT hook) FROM pending)), 0)::float8,
			(SELECT count(*) FILTER (WHERE hook) FROM pending),
			(SELECT count(*) FILTER (WHERE hook) FROM dead),
			COALESCE(EXTRACT(EPOCH FROM now() - (SELECT min(created_at) FILTER (WHERE hook) FROM pending)), 0)::float8`).
		Scan(&s.Pending, &s.Dead, &oldest, &s.WebhooksPending, &s.WebhooksDead, &hookOldest)
	s.OldestPending = time.Duration(oldest * float64(time.Second))
	s.WebhooksOldestPending = time.Duration(hookOldest * float64(time.Second))
	return s, classify(err)
}

// DeliveryMarks records postback deliveries by group commit: every delivery that finishes
// while a batch commits joins the next one, so a busy worker pays one UPDATE per batch
// instead of per postback (no waiting for company: each delivery holds its worker's slot
// until its mark commits). Marks run in the settings of beginOutboxTx.
type DeliveryMarks struct {
	db *DB
	gc groupCommit[*markJob]
}

type markJob struct {
	id   int64
	err  error
	done chan struct{}
}

// NewDeliveryMarks starts the recorder; Close stops it.
func (db *DB) NewDeliveryMarks() *DeliveryMarks {
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
