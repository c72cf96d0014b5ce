package persistence

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/outcome"
)

// OutcomeRecord is what a callback decides for a session.
type OutcomeRecord struct {
	Outcome   string
	At        time.Time
	PayoutUSD int64 // ten-thousandths of a dollar
	Reward    int64
	// Postback is the partner's notification of this outcome, stored in the outbox in the
	// same transaction when (and only when) this callback decides the outcome. URL "": none.
	Postback Postback
	// PostbackLease, when positive, stores the postback already leased to the caller for
	// that long (its first attempt), so that the caller sends it straight after the commit
	// (OutcomeResult.Postback) instead of a worker claiming it; should the caller not
	// manage, the lease runs out and any worker claims it. Zero: the workers are woken to
	// claim it (NOTIFY).
	PostbackLease time.Duration
}

// OutcomeResult is what recording a callback's outcome did.
type OutcomeResult struct {
	// Decided: this callback decided the session's outcome. Held: the session still held
	// its in_progress places (the sweeper had not released it). Overage: a late complete
	// its quotas or the day's max_daily_completes had no room for (docs/rules.md §5): counted
	// nowhere, the buyer not charged.
	Decided, Held, Overage bool
	// Stored is the session as stored, when an earlier callback had decided it.
	Stored Session
	// Postback is the outbox row stored with a decided outcome and leased to the caller
	// (OutcomeRecord.PostbackLease); ID 0: none.
	Postback ClaimedPostback
}

// recordOutcomesSQL records the first outcome of each listed session ($1 session ids,
// distinct, in id order, with $2–$5 the outcome, time, payout and reward and $6–$9 the
// postback's tid, publisher, URL and lease in microseconds, $11–$12 the campaign's cpi in
// cents and whether the partner is told of the outcome) in one statement, stores each told
// outcome's ledger event (outcomeLedgerSQL), and moves the
// counts: a session that had no outcome leaves in_progress (unless the sweeper released it
// already), a complete counts toward every quota of its quota_ids, the day's counts move and
// the postback is enqueued, leased to the caller when its lease is positive (its first
// attempt), else due at once with the workers woken at commit, and a quota whose completes
// reach its num_respondents stores a quota.filled webhook event (for a buyer with a webhook
// URL), with the workers woken at commit. Quota rows are locked in id
// order so that concurrent batches and entries never deadlock. It returns one row per session
// it decided: id, whether it still held its places, whether it is an overage (always false
// here), and its postback's outbox id (0: none) and creation time; a session that had an
// outcome already, or whose campaign is closed (reconciled or archived, Session.Closed: a
// reconcile that committed after the caller read the session), returns no row, and so does
// the complete of a session the sweeper released: whether it counts depends on its quotas'
// room, which recordLateOutcomeSQL decides (docs/rules.md §5, "Late completes"). Each session
// is found by its id's primary key probe, in its
// own partition (pruned for each probe): a range of the batch's ids beside the join made
// the generic plan read that whole range by the primary key (every session of a young
// database, 29 ms for 8 sessions among 30,000). Through the partitioned table every
// partition's probe is set up on each run; recordOutcomesOn names the partition instead
// (sessionParts.outcomesOn).
var recordOutcomesSQL = recordOutcomesOn("sessions")

// recordLateOutcomeSQL is recordOutcomesSQL for one session whose complete may come late
// (its session released by the sweeper, docs/rules.md §5): with the session's quota rows
// locked first (FOR UPDATE returns their latest committed counts, so two late completes of
// one quota are decided one after the other), the complete counts when the quotas have
// room as an entry would need it (some non-global quota click-balanced or with completes +
// in_progress below num_respondents, and no global quota full) and the day's completes
// (UTC, of the outcome's time) are below the campaign's max_daily_completes; else the
// session is stored an overage: outcome complete, counted nowhere (no quota, no daily
// completes). The caller's transaction holds the campaign's late-complete lock
// (lateCampaignLockSQL) before this statement takes its snapshot, so that the late
// completes of one campaign read each other's daily counts.
// A session that was released after the statement's snapshot, its quotas unread, is left
// undecided for the caller to run again. Any other outcome is recorded as by
// recordOutcomesSQL. It runs one session at a time: room is decided per complete.
var recordLateOutcomeSQL = outcomesStatement("sessions", true)

// lateCampaignLockSQL serializes the late completes of one campaign (transaction advisory
// lock (730045104, hashint8(campaign id)), beside admission's 730045103): each reads the day's
// completes the ones before it left, so that with one complete left under
// max_daily_completes and two late completes at once exactly one counts. Only late completes
// take it, before any quota row lock, so it never waits in a cycle with another lock.
const lateCampaignLockSQL = `SELECT pg_advisory_xact_lock(730045104, hashint8($1::bigint))`

// recordOutcomesOn is recordOutcomesSQL updating table, sessions or one of its partitions.
func recordOutcomesOn(table string) string { return outcomesStatement(table, false) }

// outcomesStatement is recordOutcomesSQL (late false) or recordLateOutcomeSQL (late true)
// updating table.
func outcomesStatement(table string, late bool) string {
	// Late: the room of the released sessions' completes (c), read from their quotas locked
	// in id order (lk), per session (r).
	room, from, decide, overage := "", "FROM j", "AND (j.outcome <> 'complete' OR s.released_at IS NULL)", ""
	if late {
		room = `
), c AS (
	SELECT t.id, t.quota_ids, COALESCE((SELECT d.completes < m.max_daily_completes FROM campaigns m
			JOIN campaign_daily_counts d ON d.campaign_id = m.id AND d.day = (j.at AT TIME ZONE 'UTC')::date
			WHERE m.id = t.campaign_id), true) AS daily
	FROM ` + table + ` t JOIN j ON t.id = j.id
	WHERE j.outcome = 'complete' AND t.outcome IS NULL AND t.released_at IS NOT NULL AND NOT t.is_test
), lk AS (
	SELECT cq.id, cq.is_global, cq.is_click_balanced, cq.num_respondents, cq.completes, cq.in_progress
	FROM campaign_quotas cq WHERE cq.id IN (SELECT unnest(c.quota_ids) FROM c) ORDER BY cq.id FOR UPDATE
), r AS (
	SELECT c.id, COALESCE(bool_or(NOT lk.is_global AND (lk.is_click_balanced OR lk.completes + lk.in_progress < lk.num_respondents)), false)
		AND NOT COALESCE(bool_or(lk.is_global AND NOT lk.is_click_balanced AND lk.completes + lk.in_progress >= lk.num_respondents), false)
		AND c.daily AS fits
	FROM c LEFT JOIN lk ON lk.id = ANY(c.quota_ids) GROUP BY c.id, c.daily`
		from = "FROM j LEFT JOIN r ON r.id = j.id"
		decide = "AND (j.outcome <> 'complete' OR s.released_at IS NULL OR s.is_test OR r.id IS NOT NULL)"
		overage = ", overage = j.outcome = 'complete' AND s.released_at IS NOT NULL AND NOT s.is_test AND NOT COALESCE(r.fits, false)"
	}
	return `WITH j AS (
	SELECT * FROM unnest($1::bigint[], $2::text[], $3::timestamptz[], $4::bigint[], $5::bigint[], $6::text[], $7::bigint[], $8::text[], $9::bigint[],
		$11::bigint[], $12::bool[])
		AS j(id, outcome, at, payout, reward, pb_tid, pb_pub, pb_url, pb_lease, cpi, told)` + room + `
), s AS (
	UPDATE ` + table + ` s SET outcome = j.outcome, outcome_at = j.at, payout_usd = j.payout::numeric / 10000, reward = j.reward` + overage + `
	` + from + ` WHERE s.id = j.id AND s.outcome IS NULL ` + decide + `
	AND NOT EXISTS (SELECT 1 FROM campaigns c WHERE c.id = s.campaign_id AND c.status IN (4, 6))
	RETURNING s.id, s.tid, s.campaign_id, s.buyer_id, s.publisher_id, s.quota_ids, s.released_at IS NULL AS held, s.overage, s.is_test,
		j.outcome, j.at, j.payout, j.reward, j.cpi, j.told, j.pb_tid, j.pb_pub, j.pb_url, j.pb_lease
), le AS (
	` + outcomeLedgerSQL + `
), x AS (
	SELECT qid, count(*) FILTER (WHERE s.held) AS held, count(*) FILTER (WHERE s.outcome = 'complete' AND NOT s.overage) AS completes
	FROM s, unnest(s.quota_ids) AS qid WHERE NOT s.is_test GROUP BY qid
), l AS (
	SELECT cq.id FROM campaign_quotas cq WHERE cq.id IN (SELECT qid FROM x) ORDER BY cq.id FOR UPDATE
), q AS (
	UPDATE campaign_quotas cq SET in_progress = cq.in_progress - x.held, completes = cq.completes + x.completes
	FROM x, l WHERE cq.id = x.qid AND l.id = x.qid
	RETURNING cq.id, cq.campaign_id, cq.completes, cq.num_respondents, cq.is_click_balanced, x.completes AS added
), ` + quotaFilledSQL + `, d AS (
	INSERT INTO campaign_daily_counts AS d (campaign_id, day, outcomes, completes)
	SELECT s.campaign_id, (s.at AT TIME ZONE 'UTC')::date, count(*), count(*) FILTER (WHERE s.outcome = 'complete' AND NOT s.overage)
	FROM s WHERE NOT s.is_test GROUP BY 1, 2 ORDER BY 1, 2
	ON CONFLICT (campaign_id, day) DO UPDATE SET outcomes = d.outcomes + EXCLUDED.outcomes, completes = d.completes + EXCLUDED.completes
	RETURNING 1
), p AS (
	INSERT INTO postback_outbox (tid, kind, publisher_id, url, attempts, next_attempt_at, event_id)
	SELECT s.pb_tid, 'outcome', s.pb_pub, s.pb_url, CASE WHEN s.pb_lease > 0 THEN 1 ELSE 0 END,
		now() + GREATEST(s.pb_lease, 0) * interval '1 microsecond', s.tid || '.1'
	FROM s WHERE s.pb_url <> '' ORDER BY s.id
	ON CONFLICT (event_id) WHERE event_id IS NOT NULL DO NOTHING
	RETURNING id, tid, created_at, attempts
)
SELECT s.id, s.held, s.overage, COALESCE(p.id, 0), COALESCE(p.created_at, now()), (SELECT count(*) FROM q) + (SELECT count(*) FROM d),
	(SELECT count(pg_notify($10, '')) FROM (SELECT 1 FROM p WHERE p.attempts = 0 UNION ALL SELECT 1 FROM w LIMIT 1) n)
FROM s LEFT JOIN p ON p.tid = s.pb_tid`
}

// outcomeItem is one callback of a batch; res is the verdict.
type outcomeItem struct {
	s   *Session
	o   *OutcomeRecord
	res OutcomeResult
}

// recordOutcomes runs recordOutcomesSQL for items (distinct sessions) in one transaction:
// one statement, one COMMIT, one round trip; late: recordLateOutcomeSQL, for one item.
func (db *SessionStore) recordOutcomes(ctx context.Context, items []*outcomeItem, late bool) error {
	if len(items) == 0 {
		return nil
	}
	slices.SortFunc(items, func(a, b *outcomeItem) int { return cmp.Compare(a.s.ID, b.s.ID) })
	n := len(items)
	ids, outcomes, ats, payouts, rewards := make([]int64, n), make([]string, n), make([]time.Time, n), make([]int64, n), make([]int64, n)
	pbTIDs, pbPubs, pbURLs, pbLeases := make([]string, n), make([]int64, n), make([]string, n), make([]int64, n)
	cpis, told := make([]int64, n), make([]bool, n)
	byID := make(map[int64]*outcomeItem, n)
	for i, it := range items {
		it.res = OutcomeResult{}
		ids[i], outcomes[i], ats[i], payouts[i], rewards[i] = it.s.ID, it.o.Outcome, it.o.At, it.o.PayoutUSD, it.o.Reward
		pbTIDs[i], pbPubs[i], pbURLs[i] = it.o.Postback.TID, it.o.Postback.PublisherID, it.o.Postback.URL
		pbLeases[i] = it.o.PostbackLease.Microseconds()
		cpis[i], told[i] = it.s.CPICents, true // a lone session's outcome is told (a chain's: ContinueChain)
		byID[it.s.ID] = it
	}
	// One round trip: BEGIN, a generic plan (custom plans of this statement cost more to
	// plan than to run, and small batches would always get one), the statement, COMMIT.
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue("SET LOCAL plan_cache_mode = force_generic_plan")
	sql := recordLateOutcomeSQL
	if late {
		b.Queue(lateCampaignLockSQL, items[0].s.CampaignID)
	} else {
		sql = db.parts.outcomesOn(ctx, db.Pool, ids[0], ids[n-1]+1)
	}
	b.Queue(sql, ids, outcomes, ats, payouts, rewards, pbTIDs, pbPubs, pbURLs, pbLeases, PostbackChannel, cpis, told).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id, pbID, moved, notified int64
			var held, overage bool
			var created time.Time
			if err := rows.Scan(&id, &held, &overage, &pbID, &created, &moved, &notified); err != nil {
				return err
			}
			it := byID[id]
			if it == nil {
				continue
			}
			it.res.Decided, it.res.Held, it.res.Overage = true, held, overage
			if pbID != 0 && it.o.PostbackLease > 0 {
				pb := it.o.Postback
				it.res.Postback = ClaimedPostback{ID: pbID, TID: pb.TID, Kind: PostbackOutcome, PublisherID: pb.PublisherID,
					URL: pb.URL, Attempts: 1, CreatedAt: created}
			}
		}
		return rows.Err()
	})
	b.Queue("COMMIT")
	if err := db.sendTx(ctx, b); err != nil {
		for _, it := range items {
			it.res = OutcomeResult{}
		}
		return err
	}
	return nil
}

// storedSessions loads the sessions of ids (callbacks that did not decide an outcome).
func (db *SessionStore) storedSessions(ctx context.Context, ids []int64) (map[int64]Session, error) {
	rows, err := db.Pool.Query(ctx, `SELECT `+sessionColumns+sessionFrom+` WHERE s.id = ANY($1)`, ids)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	out := make(map[int64]Session, len(ids))
	for rows.Next() {
		s, err := scanSession(rows)
		if err != nil {
			return nil, classify(err)
		}
		out[s.ID] = s
	}
	return out, classify(rows.Err())
}

// RecordOutcome stores the first outcome of session s, with its postback, in its own
// transaction (the naive path). When an earlier callback had decided the session, the result
// carries the stored session.
func (db *SessionStore) RecordOutcome(ctx context.Context, s Session, o OutcomeRecord) (OutcomeResult, error) {
	it := &outcomeItem{s: &s, o: &o}
	if err := retry(ctx, func() error { return db.recordOutcomes(ctx, []*outcomeItem{it}, false) }); err != nil {
		return OutcomeResult{}, classify(err)
	}
	for range lateRounds {
		if it.res.Decided {
			return it.res, nil
		}
		stored, err := scanSession(db.Pool.QueryRow(ctx, `SELECT `+sessionColumns+sessionFrom+` WHERE s.id = $1`, s.ID))
		if err != nil || !lateComplete(stored, o) {
			return OutcomeResult{Stored: stored}, classify(err)
		}
		if err := retry(ctx, func() error { return db.recordOutcomes(ctx, []*outcomeItem{it}, true) }); err != nil {
			return OutcomeResult{}, classify(err)
		}
	}
	return OutcomeResult{}, fault.Unavailable(errLateUndecided)
}

// lateRounds bounds how often a late complete is tried: recordLateOutcomeSQL leaves it
// undecided only when the sweeper released its session after the statement's snapshot,
// which happens once per session.
const lateRounds = 3

// errLateUndecided is a late complete that lateRounds tries left undecided.
var errLateUndecided = errors.New("persistence: late complete left undecided")

// lateComplete reports whether o, left undecided by recordOutcomesSQL on session stored
// (read after it), is a late complete for recordLateOutcomeSQL: the session still has no
// outcome, its campaign is open and the sweeper released it.
func lateComplete(stored Session, o OutcomeRecord) bool {
	return stored.Outcome == "" && !stored.Closed() && stored.Released && o.Outcome == outcome.Complete
}

// OutcomeWriter records callbacks by group commit: concurrent callbacks are recorded by one
// statement (recordOutcomesSQL) with one COMMIT. Each is still decided on its own (first
// outcome wins; two callbacks of one session in a batch: the earlier one decides) and its
// postback is enqueued in that same transaction.
type OutcomeWriter struct {
	db *SessionStore
	gc groupCommit[*outcomeJob]
}

type outcomeJob struct {
	item outcomeItem
	s    Session       // item.s
	o    OutcomeRecord // item.o

	err  error
	done jobDone
}

// outcomeJobs keeps callback jobs for the next callbacks.
var outcomeJobs = sync.Pool{New: func() any {
	j := &outcomeJob{done: newJobDone()}
	j.item.s, j.item.o = &j.s, &j.o
	return j
}}

// release gives j back to outcomeJobs, holding nothing of its callback.
func (j *outcomeJob) release() {
	j.s, j.o, j.item.res, j.err = Session{}, OutcomeRecord{}, OutcomeResult{}, nil
	outcomeJobs.Put(j)
}

// NewOutcomeWriter starts the writer's workers (cfg as for EntryWriter).
func (db *SessionStore) NewOutcomeWriter(cfg EntryWriterConfig) *OutcomeWriter {
	w := &OutcomeWriter{db: db}
	w.gc.start(cfg, w.run)
	return w
}

// Close stops the workers once the queued callbacks are written.
func (w *OutcomeWriter) Close() { w.gc.close() }

// Record is RecordOutcome through the group commit.
func (w *OutcomeWriter) Record(ctx context.Context, s Session, o OutcomeRecord) (OutcomeResult, error) {
	j := outcomeJobs.Get().(*outcomeJob)
	j.s, j.o = s, o
	if err := w.gc.offer(uint64(s.CampaignID), j, ctx.Done(), ctx.Err); err != nil {
		j.release()
		return OutcomeResult{}, err
	}
	// Queued: wait for the batch even if ctx ends, so that a recorded outcome is never
	// reported as a failure.
	j.done.wait()
	res, err := j.item.res, j.err
	j.release()
	return res, err
}

// run records one batch, retrying it whole after a deadlock or serialization failure; any
// other failure is retried callback by callback so that one bad callback cannot fail its
// neighbours.
func (w *OutcomeWriter) run(batch []*outcomeJob) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// One item per session: a later callback of the same session in this batch is decided
	// by the earlier one, like a callback arriving after it.
	items := make([]*outcomeItem, 0, len(batch))
	first := make(map[int64]bool, len(batch))
	for _, j := range batch {
		j.item.res = OutcomeResult{}
		if !first[j.item.s.ID] {
			first[j.item.s.ID] = true
			items = append(items, &j.item)
		}
	}
	err := retry(ctx, func() error { return w.db.recordOutcomes(ctx, items, false) })
	if err != nil && len(batch) > 1 && !isUnavailable(err) {
		for _, j := range batch {
			w.run([]*outcomeJob{j})
		}
		return
	}
	if err != nil {
		for _, j := range batch {
			j.item.res, j.err = OutcomeResult{}, classify(err)
			j.done.signal()
		}
		return
	}
	var undecided []int64
	for _, j := range batch {
		if !j.item.res.Decided {
			undecided = append(undecided, j.item.s.ID)
		}
	}
	var stored map[int64]Session
	if len(undecided) > 0 {
		stored, err = w.db.storedSessions(ctx, undecided)
	}
	if err == nil && len(stored) > 0 {
		stored, err = w.recordLate(ctx, items, stored)
	}
	for _, j := range batch {
		if !j.item.res.Decided {
			if s, ok := stored[j.item.s.ID]; ok {
				j.item.res.Stored = s
			} else if err != nil {
				j.err = err
			} else {
				j.err = fault.NotFound("not found")
			}
		}
		j.done.signal()
	}
}

// recordLate records, one at a time (recordLateOutcomeSQL), the late completes among items
// that the batch left undecided (stored: their sessions as read after it), and returns the
// undecided sessions as stored afterwards.
func (w *OutcomeWriter) recordLate(ctx context.Context, items []*outcomeItem, stored map[int64]Session) (map[int64]Session, error) {
	for range lateRounds {
		var late []int64
		for _, it := range items {
			if s, ok := stored[it.s.ID]; ok && !it.res.Decided && lateComplete(s, *it.o) {
				if err := retry(ctx, func() error { return w.db.recordOutcomes(ctx, []*outcomeItem{it}, true) }); err != nil {
					return nil, err
				}
				late = append(late, it.s.ID)
			}
		}
		if len(late) == 0 {
			return stored, nil
		}
		// The batch's later callbacks of those sessions answer as the late ones decided.
		again, err := w.db.storedSessions(ctx, late)
		if err != nil {
			return nil, err
		}
		for id, s := range again {
			stored[id] = s
		}
	}
	return stored, nil
}
