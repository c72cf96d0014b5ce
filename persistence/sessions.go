package persistence

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/switchboard/switchboard/engine/fault"
)

// Channels that keep every serve process's counters and panel current
// (docs/architecture.md, "Counting across processes").
const (
	// CountsChannel carries comma-separated ids of campaigns whose counts changed; listeners
	// re-read those campaigns' counts from the database.
	CountsChannel = "switchboard_counts"
	// EntriesChannel carries "<origin>|<participant>:<campaign>:<unix>,..." for every admitted
	// entry, so that other processes' panels learn reentry history at once.
	EntriesChannel = "switchboard_entries"
)

// Outcomes a callback can record (CONTRACT §7).
const (
	OutcomeComplete     = "complete"
	OutcomeOverQuota    = "over_quota"
	OutcomeQualityTerm  = "quality_term"
	OutcomeDisqualified = "disqualified"
)

// ValidOutcome reports whether s is one of the four callback outcomes.
func ValidOutcome(s string) bool {
	switch s {
	case OutcomeComplete, OutcomeOverQuota, OutcomeQualityTerm, OutcomeDisqualified:
		return true
	}
	return false
}

// Refusal reasons of an entry the database did not admit.
const (
	RefusedStatus   = "status"   // the campaign is not active (or gone)
	RefusedQuota    = "quota"    // no open non-global quota matched, or a global one is full
	RefusedDaily    = "daily"    // max_daily_completes reached today (UTC)
	RefusedExcluded = "excluded" // campaign_exclusions
	RefusedReentry  = "reentry"  // reentry_interval forbids another entry yet
	RefusedRelated  = "related"  // entered a related campaign before
)

// Entry is one respondent asking to enter a campaign.
type Entry struct {
	TID           string
	CampaignID    int64
	PublisherID   int64
	ParticipantID int64
	DeviceID      string
	QuotaIDs      []int64 // every quota the engine found matching, global ones included
	RespondentID  string  // used when the participant has no {RESPONDENT_ID} for this buyer yet
}

// Admission is the database's verdict on an Entry.
type Admission struct {
	Refused      string  // "" when admitted, else one of the Refused* reasons
	QuotaIDs     []int64 // the quotas the session counts toward (open non-global and global)
	RespondentID string  // the participant's {RESPONDENT_ID} for the campaign's buyer
	EnteredAt    time.Time
}

// admitSQL admits one entry in one statement, in whatever transaction it runs. It locks the
// matched quota rows of the campaign in id order (FOR UPDATE returns their latest committed
// counts), admits only when the campaign is active, at least one matched non-global quota is
// open (completes + in_progress < num, or entries < num when click-balanced), no matched
// global quota is full, today's completes are under max_daily_completes and neither an
// exclusion, reentry_interval nor a related campaign forbids it; then it counts the entry
// (entries and in_progress) on the open non-global and the global quotas, creates the
// respondent id on first entry for this buyer and inserts the session.
//
// $1 tid, $2 campaign, $3 publisher, $4 participant, $5 device id, $6 matched quota ids,
// $7 candidate respondent id.
const admitSQL = `WITH c AS (
	SELECT id, buyer_id, status, max_daily_completes, reentry_interval FROM campaigns WHERE id = $2
), q AS (
	SELECT id, is_global,
		CASE WHEN is_click_balanced THEN entries >= num_respondents
		     ELSE completes + GREATEST(in_progress, 0) >= num_respondents END AS full
	FROM campaign_quotas WHERE campaign_id = $2 AND id = ANY($6::bigint[])
	ORDER BY id FOR UPDATE
), v AS (
	SELECT c.buyer_id, CASE
		WHEN c.status <> 2 THEN 'status'
		WHEN NOT EXISTS (SELECT 1 FROM q WHERE NOT q.is_global AND NOT q.full)
		  OR EXISTS (SELECT 1 FROM q WHERE q.is_global AND q.full) THEN 'quota'
		WHEN c.max_daily_completes IS NOT NULL AND COALESCE((SELECT d.completes FROM campaign_daily_counts d
			WHERE d.campaign_id = c.id AND d.day = (now() AT TIME ZONE 'UTC')::date), 0) >= c.max_daily_completes THEN 'daily'
		WHEN EXISTS (SELECT 1 FROM campaign_exclusions e WHERE e.campaign_id = c.id AND e.participant_id = $4) THEN 'excluded'
		WHEN c.reentry_interval IS DISTINCT FROM 0 AND EXISTS (SELECT 1 FROM sessions s
			WHERE s.participant_id = $4 AND s.campaign_id = c.id AND NOT s.is_test
			AND (c.reentry_interval IS NULL OR s.entered_at > now() - make_interval(mins => c.reentry_interval))) THEN 'reentry'
		WHEN EXISTS (SELECT 1 FROM campaign_relationships r WHERE (r.campaign_id = c.id OR r.related_campaign_id = c.id)
			AND EXISTS (SELECT 1 FROM sessions s WHERE s.participant_id = $4 AND NOT s.is_test
				AND s.campaign_id = CASE WHEN r.campaign_id = c.id THEN r.related_campaign_id ELSE r.campaign_id END)) THEN 'related'
		ELSE '' END AS refused
	FROM c
), upd AS (
	UPDATE campaign_quotas cq SET entries = cq.entries + 1, in_progress = cq.in_progress + 1
	FROM q, v WHERE v.refused = '' AND cq.id = q.id AND (q.is_global OR NOT q.full)
	RETURNING cq.id
), r AS (
	INSERT INTO respondents (buyer_id, participant_id, respondent_id)
	SELECT v.buyer_id, $4, $7 FROM v WHERE v.refused = ''
	ON CONFLICT (buyer_id, participant_id) DO NOTHING
	RETURNING respondent_id
), rid AS (
	SELECT COALESCE((SELECT respondent_id FROM r),
		(SELECT x.respondent_id FROM respondents x, v WHERE x.buyer_id = v.buyer_id AND x.participant_id = $4), '') AS id
), ins AS (
	INSERT INTO sessions (tid, campaign_id, buyer_id, publisher_id, participant_id, device_id, quota_ids, respondent_id)
	SELECT $1, $2, v.buyer_id, $3, $4, $5, ARRAY(SELECT id FROM upd ORDER BY id), rid.id FROM v, rid WHERE v.refused = ''
	RETURNING quota_ids, entered_at, respondent_id
)
SELECT COALESCE((SELECT refused FROM v), 'status'), (SELECT quota_ids FROM ins),
	COALESCE((SELECT respondent_id FROM ins), ''), COALESCE((SELECT entered_at FROM ins), now())`

func admitArgs(e *Entry) []any {
	return []any{e.TID, e.CampaignID, e.PublisherID, e.ParticipantID, e.DeviceID, e.QuotaIDs, e.RespondentID}
}

func scanAdmission(row pgx.Row) (Admission, error) {
	var a Admission
	err := row.Scan(&a.Refused, &a.QuotaIDs, &a.RespondentID, &a.EnteredAt)
	return a, err
}

// Admit decides one entry in its own transaction: the naive path, one commit per entry.
// Deadlocks and serialization failures are retried.
func (db *DB) Admit(ctx context.Context, e Entry) (Admission, error) {
	var a Admission
	err := retry(ctx, func() error {
		var err error
		a, err = scanAdmission(db.Pool.QueryRow(ctx, admitSQL, admitArgs(&e)...))
		return err
	})
	if err != nil {
		return Admission{}, classify(err)
	}
	return db.fillRespondent(ctx, &e, a)
}

// fillRespondent covers the one race of admitSQL: a concurrent first entry of the same
// participant for the same buyer inserted the respondent after this statement's snapshot.
func (db *DB) fillRespondent(ctx context.Context, e *Entry, a Admission) (Admission, error) {
	if a.Refused != "" || a.RespondentID != "" {
		return a, nil
	}
	err := db.Pool.QueryRow(ctx, `WITH r AS (SELECT r.respondent_id FROM respondents r JOIN sessions s
			ON s.buyer_id = r.buyer_id AND s.participant_id = r.participant_id WHERE s.tid = $1)
		UPDATE sessions SET respondent_id = (SELECT respondent_id FROM r) WHERE tid = $1 RETURNING respondent_id`, e.TID).
		Scan(&a.RespondentID)
	return a, classify(err)
}

// retry runs fn again after a deadlock or serialization failure, a few times.
func retry(ctx context.Context, fn func() error) error {
	var err error
	for attempt := 0; attempt < 8; attempt++ {
		if err = fn(); err == nil || !retryable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt+1) * time.Millisecond):
		}
	}
	return err
}

// retryable reports a transaction failure that running it again can cure.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}

// EntryWriter admits entries by group commit: concurrent entries are collected into one
// pipelined batch that PostgreSQL runs as one implicit transaction with one COMMIT (one WAL
// flush) for the whole batch. Each entry is still decided by admitSQL against the counts
// left by the entries before it, so batching changes durability cost, never the verdicts.
type EntryWriter struct {
	db       *DB
	jobs     chan *entryJob
	maxBatch int
	maxWait  time.Duration
	wg       sync.WaitGroup
	stop     chan struct{}
	once     sync.Once
}

type entryJob struct {
	ctx  context.Context
	e    Entry
	a    Admission
	err  error
	done chan struct{}
}

// EntryWriterConfig tunes an EntryWriter.
type EntryWriterConfig struct {
	Workers  int           // concurrent batches in flight (default 4)
	MaxBatch int           // entries per batch at most (default 128)
	MaxWait  time.Duration // how long a batch waits for company (default 0: none, batches form while others commit)
}

// NewEntryWriter starts the writer's workers; Close stops them.
func (db *DB) NewEntryWriter(cfg EntryWriterConfig) *EntryWriter {
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 128
	}
	w := &EntryWriter{db: db, jobs: make(chan *entryJob, 4096), maxBatch: cfg.MaxBatch, maxWait: cfg.MaxWait, stop: make(chan struct{})}
	for range cfg.Workers {
		w.wg.Add(1)
		go w.work()
	}
	return w
}

// Close stops the workers once the queued entries are written.
func (w *EntryWriter) Close() {
	w.once.Do(func() { close(w.stop) })
	w.wg.Wait()
}

// Admit queues e and waits for its verdict, durably committed when admitted.
func (w *EntryWriter) Admit(ctx context.Context, e Entry) (Admission, error) {
	j := &entryJob{ctx: ctx, e: e, done: make(chan struct{})}
	select {
	case w.jobs <- j:
	case <-w.stop:
		return Admission{}, fault.Unavailable(errors.New("entry writer closed"))
	case <-ctx.Done():
		return Admission{}, fault.Unavailable(ctx.Err())
	}
	// The job is in the queue: its fate is decided by a batch; wait for it even if ctx ends,
	// so that a committed admission is never reported as a failure.
	<-j.done
	if j.err != nil {
		return Admission{}, j.err
	}
	return w.db.fillRespondent(context.WithoutCancel(ctx), &j.e, j.a)
}

func (w *EntryWriter) work() {
	defer w.wg.Done()
	batch := make([]*entryJob, 0, w.maxBatch)
	for {
		batch = batch[:0]
		select {
		case j := <-w.jobs:
			batch = append(batch, j)
		case <-w.stop:
			for {
				select {
				case j := <-w.jobs:
					w.run([]*entryJob{j})
				default:
					return
				}
			}
		}
		var timer <-chan time.Time
		if w.maxWait > 0 {
			timer = time.After(w.maxWait)
		}
	collect:
		for len(batch) < w.maxBatch {
			if timer == nil {
				select {
				case j := <-w.jobs:
					batch = append(batch, j)
				default:
					break collect
				}
				continue
			}
			select {
			case j := <-w.jobs:
				batch = append(batch, j)
			case <-timer:
				break collect
			}
		}
		w.run(batch)
	}
}

// run commits one batch, retrying it whole after a deadlock or serialization failure; any
// other failure is retried entry by entry so that one bad entry cannot fail its neighbours.
func (w *EntryWriter) run(batch []*entryJob) {
	// Lock quota rows in one global order (campaign, then quota id inside admitSQL) so that
	// concurrent batches do not deadlock each other.
	slices.SortStableFunc(batch, func(a, b *entryJob) int {
		switch {
		case a.e.CampaignID < b.e.CampaignID:
			return -1
		case a.e.CampaignID > b.e.CampaignID:
			return 1
		}
		return 0
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := retry(ctx, func() error { return w.runOnce(ctx, batch) })
	if err == nil {
		for _, j := range batch {
			close(j.done)
		}
		return
	}
	if len(batch) > 1 && !isUnavailable(err) {
		for _, j := range batch {
			w.run([]*entryJob{j})
		}
		return
	}
	for _, j := range batch {
		j.err = classify(err)
		close(j.done)
	}
}

func (w *EntryWriter) runOnce(ctx context.Context, batch []*entryJob) error {
	b := &pgx.Batch{}
	for _, j := range batch {
		b.Queue(admitSQL, admitArgs(&j.e)...).QueryRow(func(row pgx.Row) error {
			var err error
			j.a, err = scanAdmission(row)
			return err
		})
	}
	// A batch runs as one implicit transaction: all admitted or none.
	return w.db.Pool.SendBatch(ctx, b).Close()
}

func isUnavailable(err error) bool {
	return fault.KindOf(classify(err)) == fault.KindUnavailable
}

// StartTestSession stores a test session (redirect_test) of campaign campaignID with
// transaction id tid: on any campaign status, with no partner or participant, never counted
// toward quotas, caps or billing.
func (db *DB) StartTestSession(ctx context.Context, tid string, campaignID int64) (time.Time, error) {
	var at time.Time
	err := db.Pool.QueryRow(ctx, `INSERT INTO sessions (tid, campaign_id, buyer_id, is_test, respondent_id)
		SELECT $1, id, buyer_id, true, 'TEST' || substr($1, 1, 12) FROM campaigns WHERE id = $2
		RETURNING entered_at`, tid, campaignID).Scan(&at)
	return at, classify(err)
}

// Session is a stored transaction as callbacks, rejections and reconciliation see it.
type Session struct {
	ID             int64
	TID            string
	CampaignID     int64
	BuyerID        int64
	PublisherID    int64
	ParticipantID  int64
	UserIdentifier string // the partner's identifier of the participant
	QuotaIDs       []int64
	IsTest         bool
	EnteredAt      time.Time
	Outcome        string // "" while none arrived
	OutcomeAt      time.Time
	Released       bool // the sweeper took it out of in_progress
	Rejected       bool
	PayoutUSD      int64 // ten-thousandths of a dollar
	Reward         int64
	CPICents       int64
	LOI            int
}

const sessionColumns = `s.id, s.tid, s.campaign_id, s.buyer_id, COALESCE(s.publisher_id, 0), COALESCE(s.participant_id, 0),
	COALESCE(p.user_identifier, ''),
	s.quota_ids, s.is_test, s.entered_at, COALESCE(s.outcome, ''), COALESCE(s.outcome_at, 'epoch'::timestamptz),
	s.released_at IS NOT NULL, s.rejected, COALESCE((s.payout_usd * 10000)::bigint, 0), COALESCE(s.reward, 0),
	c.cpi_cents, c.length_of_interview`

const sessionFrom = ` FROM sessions s JOIN campaigns c ON c.id = s.campaign_id LEFT JOIN participants p ON p.id = s.participant_id`

func scanSession(row pgx.Row) (Session, error) {
	var s Session
	var cpi int32
	err := row.Scan(&s.ID, &s.TID, &s.CampaignID, &s.BuyerID, &s.PublisherID, &s.ParticipantID, &s.UserIdentifier,
		&s.QuotaIDs, &s.IsTest, &s.EnteredAt, &s.Outcome, &s.OutcomeAt, &s.Released, &s.Rejected, &s.PayoutUSD, &s.Reward,
		&cpi, &s.LOI)
	s.CPICents = int64(cpi)
	return s, err
}

// SessionByTID loads a session; an unknown tid is fault.NotFound.
func (db *DB) SessionByTID(ctx context.Context, tid string) (Session, error) {
	s, err := scanSession(db.Pool.QueryRow(ctx, `SELECT `+sessionColumns+sessionFrom+` WHERE s.tid = $1`, tid))
	return s, classify(err)
}

// OutcomeRecord is what a callback decides for a session.
type OutcomeRecord struct {
	Outcome   string
	At        time.Time
	PayoutUSD int64 // ten-thousandths of a dollar
	Reward    int64
}

// recordOutcomeSQL records the first outcome of a session and moves its quotas' counts in
// one statement: the session leaves in_progress (unless the sweeper released it already), a
// complete counts toward every quota of quota_ids, and the day's counts move. It returns no
// row when the session had an outcome already.
const recordOutcomeSQL = `WITH s AS (
	UPDATE sessions SET outcome = $2, outcome_at = $3, payout_usd = $4::numeric / 10000, reward = $5
	WHERE id = $1 AND outcome IS NULL
	RETURNING campaign_id, quota_ids, released_at IS NULL AS held, is_test
), q AS (
	UPDATE campaign_quotas cq
	SET in_progress = cq.in_progress - CASE WHEN s.held THEN 1 ELSE 0 END,
		completes = cq.completes + CASE WHEN $2 = 'complete' THEN 1 ELSE 0 END
	FROM s WHERE cq.id = ANY(s.quota_ids) AND NOT s.is_test
	RETURNING cq.id
), d AS (
	INSERT INTO campaign_daily_counts AS d (campaign_id, day, outcomes, completes)
	SELECT s.campaign_id, ($3::timestamptz AT TIME ZONE 'UTC')::date, 1, CASE WHEN $2 = 'complete' THEN 1 ELSE 0 END
	FROM s WHERE NOT s.is_test
	ON CONFLICT (campaign_id, day) DO UPDATE SET outcomes = d.outcomes + 1, completes = d.completes + EXCLUDED.completes
	RETURNING 1
)
SELECT s.held, (SELECT count(*) FROM q) + (SELECT count(*) FROM d) FROM s`

// RecordOutcome stores the first outcome of session s in one transaction with whatever
// enqueue adds to it (the partner's postback). It reports decided true when this call
// decided the outcome (held: the session still held its in_progress places), false with the
// stored session when an earlier callback had decided it.
func (db *DB) RecordOutcome(ctx context.Context, s Session, o OutcomeRecord, enqueue func(tx pgx.Tx) error) (decided, held bool, stored Session, err error) {
	err = retry(ctx, func() error {
		decided, held = false, false
		return db.Tx(ctx, func(tx pgx.Tx) error {
			var n int64
			err := tx.QueryRow(ctx, recordOutcomeSQL, s.ID, o.Outcome, o.At, o.PayoutUSD, o.Reward).Scan(&held, &n)
			if errors.Is(err, pgx.ErrNoRows) {
				stored, err = scanSession(tx.QueryRow(ctx, `SELECT `+sessionColumns+sessionFrom+` WHERE s.id = $1`, s.ID))
				return err
			}
			if err != nil {
				return err
			}
			decided = true
			if enqueue != nil {
				return enqueue(tx)
			}
			return nil
		})
	})
	return decided, held, stored, classify(err)
}

// OutcomeWriter records callbacks by group commit: concurrent callbacks share one
// transaction and one COMMIT. Each is still decided by recordOutcomeSQL (first outcome wins)
// and its postback is enqueued in that same transaction.
type OutcomeWriter struct {
	db       *DB
	jobs     chan *outcomeJob
	maxBatch int
	wg       sync.WaitGroup
	stop     chan struct{}
	once     sync.Once
}

type outcomeJob struct {
	s       Session
	o       OutcomeRecord
	enqueue func(tx pgx.Tx) error

	decided, held bool
	stored        Session
	err           error
	done          chan struct{}
}

// NewOutcomeWriter starts the writer's workers (cfg as for EntryWriter; MaxWait unused).
func (db *DB) NewOutcomeWriter(cfg EntryWriterConfig) *OutcomeWriter {
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 128
	}
	w := &OutcomeWriter{db: db, jobs: make(chan *outcomeJob, 4096), maxBatch: cfg.MaxBatch, stop: make(chan struct{})}
	for range cfg.Workers {
		w.wg.Add(1)
		go w.work()
	}
	return w
}

// Close stops the workers once the queued callbacks are written.
func (w *OutcomeWriter) Close() {
	w.once.Do(func() { close(w.stop) })
	w.wg.Wait()
}

// Record is RecordOutcome through the group commit.
func (w *OutcomeWriter) Record(ctx context.Context, s Session, o OutcomeRecord, enqueue func(tx pgx.Tx) error) (decided, held bool, stored Session, err error) {
	j := &outcomeJob{s: s, o: o, enqueue: enqueue, done: make(chan struct{})}
	select {
	case w.jobs <- j:
	case <-w.stop:
		return false, false, Session{}, fault.Unavailable(errors.New("outcome writer closed"))
	case <-ctx.Done():
		return false, false, Session{}, fault.Unavailable(ctx.Err())
	}
	<-j.done
	return j.decided, j.held, j.stored, j.err
}

func (w *OutcomeWriter) work() {
	defer w.wg.Done()
	batch := make([]*outcomeJob, 0, w.maxBatch)
	for {
		batch = batch[:0]
		select {
		case j := <-w.jobs:
			batch = append(batch, j)
		case <-w.stop:
			for {
				select {
				case j := <-w.jobs:
					w.run([]*outcomeJob{j})
				default:
					return
				}
			}
		}
	collect:
		for len(batch) < w.maxBatch {
			select {
			case j := <-w.jobs:
				batch = append(batch, j)
			default:
				break collect
			}
		}
		w.run(batch)
	}
}

func (w *OutcomeWriter) run(batch []*outcomeJob) {
	slices.SortStableFunc(batch, func(a, b *outcomeJob) int {
		switch {
		case a.s.CampaignID < b.s.CampaignID:
			return -1
		case a.s.CampaignID > b.s.CampaignID:
			return 1
		}
		return 0
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := retry(ctx, func() error {
		return w.db.Tx(ctx, func(tx pgx.Tx) error { return w.runOnce(ctx, tx, batch) })
	})
	if err != nil && len(batch) > 1 && !isUnavailable(err) {
		for _, j := range batch {
			w.run([]*outcomeJob{j})
		}
		return
	}
	for _, j := range batch {
		if err != nil {
			j.decided, j.held, j.err = false, false, classify(err)
		}
		close(j.done)
	}
}

func (w *OutcomeWriter) runOnce(ctx context.Context, tx pgx.Tx, batch []*outcomeJob) error {
	b := &pgx.Batch{}
	for _, j := range batch {
		j.decided, j.held = false, false
		b.Queue(recordOutcomeSQL, j.s.ID, j.o.Outcome, j.o.At, j.o.PayoutUSD, j.o.Reward).QueryRow(func(row pgx.Row) error {
			var n int64
			err := row.Scan(&j.held, &n)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			j.decided = err == nil
			return err
		})
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	for _, j := range batch {
		if j.decided {
			if j.enqueue != nil {
				if err := j.enqueue(tx); err != nil {
					return err
				}
			}
			continue
		}
		var err error
		if j.stored, err = scanSession(tx.QueryRow(ctx, `SELECT `+sessionColumns+sessionFrom+` WHERE s.id = $1`, j.s.ID)); err != nil {
			return err
		}
	}
	return nil
}

// CompleteFullCampaigns moves those of ids that are active and whose non-global quotas are
// all full (completes, or entries when click-balanced, reach num_respondents; at least one
// such quota) to 3 Complete, and announces them. It returns the ids it moved.
func (db *DB) CompleteFullCampaigns(ctx context.Context, ids []int64) ([]int64, error) {
	var out []int64
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE campaigns c SET status = 3, status_changed_at = now(), completed_at = now(), updated_at = now()
			WHERE c.status = 2 AND ($1::bigint[] IS NULL OR c.id = ANY($1))
			AND EXISTS (SELECT 1 FROM campaign_quotas q WHERE q.campaign_id = c.id AND NOT q.is_global)
			AND NOT EXISTS (SELECT 1 FROM campaign_quotas q WHERE q.campaign_id = c.id AND NOT q.is_global
				AND CASE WHEN q.is_click_balanced THEN q.entries < q.num_respondents ELSE q.completes < q.num_respondents END)
			RETURNING c.id`, ids)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		return NotifyCampaigns(ctx, tx, out...)
	})
	return out, err
}

// ReleaseStaleSessions takes sessions that got no callback within 2 × LOI + 10 minutes out
// of in_progress, so that they stop holding quota places (a later callback is still
// accepted). It handles at most limit sessions and returns the campaigns whose counts moved.
func (db *DB) ReleaseStaleSessions(ctx context.Context, limit int) ([]int64, error) {
	var out []int64
	err := retry(ctx, func() error {
		rows, err := db.Pool.Query(ctx, `WITH s AS (
				UPDATE sessions s SET released_at = now()
				WHERE s.id IN (SELECT s2.id FROM sessions s2 JOIN campaigns c ON c.id = s2.campaign_id
					WHERE s2.outcome IS NULL AND s2.released_at IS NULL AND NOT s2.is_test
					AND s2.entered_at < now() - make_interval(mins => 2 * c.length_of_interview + 10)
					ORDER BY s2.id LIMIT $1 FOR UPDATE OF s2 SKIP LOCKED)
				AND s.outcome IS NULL AND s.released_at IS NULL
				RETURNING s.campaign_id, s.quota_ids
			), x AS (
				SELECT qid, count(*) AS n FROM s, unnest(s.quota_ids) AS qid GROUP BY qid
			), q AS (
				UPDATE campaign_quotas cq SET in_progress = cq.in_progress - x.n FROM x WHERE cq.id = x.qid RETURNING cq.id
			)
			SELECT DISTINCT campaign_id FROM s`, limit)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		return err
	})
	return out, classify(err)
}

// PauseBrokenLinks moves to 7 System Paused every active campaign whose last n entries
// (since it last changed status) whose callback window (2 × LOI + 10 minutes) has passed got
// no callback, with no callback from any entry after them either. It returns the ids moved.
func (db *DB) PauseBrokenLinks(ctx context.Context, n int) ([]int64, error) {
	var out []int64
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE campaigns c SET status = 7, status_changed_at = now(), updated_at = now()
			FROM (
				SELECT c2.id FROM campaigns c2
				CROSS JOIN LATERAL (
					SELECT count(*) AS n, min(x.entered_at) AS first FROM (
						SELECT s.entered_at FROM sessions s
						WHERE s.campaign_id = c2.id AND NOT s.is_test AND s.entered_at > c2.status_changed_at
						AND s.entered_at < now() - make_interval(mins => 2 * c2.length_of_interview + 10)
						ORDER BY s.entered_at DESC LIMIT $1) x
				) w
				WHERE c2.status = 2 AND w.n >= $1
				AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.campaign_id = c2.id AND NOT s.is_test
					AND s.entered_at >= w.first AND s.outcome IS NOT NULL)
			) broken
			WHERE c.id = broken.id AND c.status = 2
			RETURNING c.id`, n)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		return NotifyCampaigns(ctx, tx, out...)
	})
	return out, err
}

// QuotaCount is a quota's authoritative counts.
type QuotaCount struct {
	QuotaID, CampaignID            int64
	Completes, InProgress, Entries int64
}

// CampaignCount is a campaign's authoritative statistics.
type CampaignCount struct {
	CampaignID   int64
	Day          time.Time // the UTC day DayCompletes belongs to (today)
	DayCompletes int64
	Outcomes     int64
	Completes    int64
}

// Counts reads the counts of the given campaigns, or of every active campaign when ids is
// nil, in one snapshot.
func (db *DB) Counts(ctx context.Context, ids []int64) ([]QuotaCount, []CampaignCount, error) {
	var qs []QuotaCount
	var cs []CampaignCount
	err := pgx.BeginTxFunc(ctx, db.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		filter := `campaign_id IN (SELECT id FROM campaigns WHERE status = 2)`
		args := []any{}
		if ids != nil {
			filter, args = `campaign_id = ANY($1)`, []any{ids}
		}
		rows, err := tx.Query(ctx, `SELECT id, campaign_id, completes, in_progress, entries FROM campaign_quotas WHERE `+filter, args...)
		if err != nil {
			return err
		}
		qs, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (QuotaCount, error) {
			var q QuotaCount
			err := r.Scan(&q.QuotaID, &q.CampaignID, &q.Completes, &q.InProgress, &q.Entries)
			return q, err
		})
		if err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT campaign_id, (now() AT TIME ZONE 'UTC')::date,
			COALESCE(sum(completes) FILTER (WHERE day = (now() AT TIME ZONE 'UTC')::date), 0), sum(outcomes), sum(completes)
			FROM campaign_daily_counts WHERE `+filter+` GROUP BY campaign_id`, args...)
		if err != nil {
			return err
		}
		cs, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (CampaignCount, error) {
			var c CampaignCount
			err := r.Scan(&c.CampaignID, &c.Day, &c.DayCompletes, &c.Outcomes, &c.Completes)
			return c, err
		})
		return err
	})
	return qs, cs, classify(err)
}

// NotifyCounts announces campaigns whose counts changed (outside any transaction: the
// changes are committed already).
func (db *DB) NotifyCounts(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	for _, chunk := range chunkPayloads(ids) {
		if _, err := db.Pool.Exec(ctx, `SELECT pg_notify($1, $2)`, CountsChannel, chunk); err != nil {
			return classify(err)
		}
	}
	return nil
}

// NotifyEntries announces admitted entries to the other processes' panels; items are
// "<participant>:<campaign>:<unix>" and origin names this process.
func (db *DB) NotifyEntries(ctx context.Context, origin string, items []string) error {
	for len(items) > 0 {
		var b strings.Builder
		b.WriteString(origin)
		b.WriteByte('|')
		n := 0
		for n < len(items) && b.Len()+len(items[n])+1 < 7900 {
			if n > 0 {
				b.WriteByte(',')
			}
			b.WriteString(items[n])
			n++
		}
		if n == 0 {
			n = 1 // an absurdly long item: drop it
		} else if _, err := db.Pool.Exec(ctx, `SELECT pg_notify($1, $2)`, EntriesChannel, b.String()); err != nil {
			return classify(err)
		}
		items = items[n:]
	}
	return nil
}

// chunkPayloads joins ids into comma-separated payloads under NOTIFY's 8000-byte limit.
func chunkPayloads(ids []int64) []string {
	var out []string
	var b []byte
	for _, id := range ids {
		if len(b) > 7900 {
			out = append(out, string(b))
			b = b[:0]
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	if len(b) > 0 {
		out = append(out, string(b))
	}
	return out
}

// CampaignRoute is what entry needs to know of a campaign beyond the engine's definition.
type CampaignRoute struct {
	ID           int64
	BuyerID      int64
	Status       int
	SupplierLink string
	BuyerSecret  string
	CustomerID   string
	LOI          int
}

// CampaignRoute loads the supplier link and buyer of a campaign.
func (db *DB) CampaignRoute(ctx context.Context, id int64) (CampaignRoute, error) {
	var r CampaignRoute
	var status int16
	err := db.Pool.QueryRow(ctx, `SELECT c.id, c.buyer_id, c.status, c.supplier_link, b.api_secret, b.customer_id, c.length_of_interview
		FROM campaigns c JOIN buyers b ON b.id = c.buyer_id WHERE c.id = $1`, id).
		Scan(&r.ID, &r.BuyerID, &status, &r.SupplierLink, &r.BuyerSecret, &r.CustomerID, &r.LOI)
	r.Status = int(status)
	return r, classify(err)
}

// RetargetIdentifier returns the {RETARGET_IDENTIFIER} of a participant for a campaign: the
// replacement_id, else the identifier, of the unexpired retargeting record that names the
// participant (types 0 and 1, resolved to participant_id), its device identifier (type 2) or
// that identifier's hash (type 3); "" when none does.
func (db *DB) RetargetIdentifier(ctx context.Context, campaignID, participantID int64, deviceID, deviceHash string) (string, error) {
	var out string
	err := db.Pool.QueryRow(ctx, `SELECT COALESCE(NULLIF(replacement_id, ''), identifier) FROM campaign_retargets
		WHERE campaign_id = $1 AND expires_at > now() AND (
			(retargeting_type IN (0, 1) AND participant_id = $2)
			OR (retargeting_type = 2 AND $3 <> '' AND identifier = $3)
			OR (retargeting_type = 3 AND $4 <> '' AND upper(identifier) = $4))
		ORDER BY retargeting_type, id LIMIT 1`, campaignID, participantID, deviceID, deviceHash).Scan(&out)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return out, classify(err)
}
