package persistence

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// Ledger event kinds (ledger_events.kind, docs/payouts.md, "Ledger").
const (
	LedgerComplete   = "complete"   // a complete callback the partner is told of
	LedgerScreenout  = "screenout"  // any other outcome the partner is told of (a time payout, or nothing)
	LedgerReversal   = "reversal"   // a complete rejected (reject_completes, or unlisted by reconcile)
	LedgerAcceptance = "acceptance" // a session reconcile made an accepted complete
)

// EventID is the public id of a session's seq-th ledger event, which the partner's postback
// of that event carries (event_id): the session's tid, a dot, the number.
func EventID(tid string, seq int) string { return tid + "." + strconv.Itoa(seq) }

// OutcomeEventSeq is the number of the ledger event of a callback's outcome: a session that
// a callback decides has no event before it (a rejection needs a complete, and a reconcile's
// acceptance sets the outcome, so that no callback decides it afterwards).
const OutcomeEventSeq = 1

// outcomeLedgerSQL is the CTE body, in recordOutcomesSQL, that stores the ledger event of
// each decided outcome the partner is told of (s.told): a complete charges the buyer the cpi
// unless it is an overage, the partner earns the payout, and the exchange keeps the
// difference (negative for an overage or a time payout). It returns nothing: a
// data-modifying WITH runs to its end whether or not the statement reads it, and a RETURNING
// would keep every row for no reader.
const outcomeLedgerSQL = `INSERT INTO ledger_events (session_id, seq, tid, kind, campaign_id, buyer_id, publisher_id, charge_usd, earning_usd, margin_usd, reward, at)
	SELECT e.id, 1, e.tid, CASE WHEN e.outcome = 'complete' THEN 'complete' ELSE 'screenout' END, e.campaign_id, e.buyer_id, e.publisher_id,
		e.charge, e.payout, e.charge - e.payout, e.reward, e.at
	FROM (SELECT s.*, CASE WHEN s.outcome = 'complete' AND NOT s.overage THEN s.cpi * 100 ELSE 0 END AS charge FROM s
		WHERE s.told AND NOT s.is_test) e`

// ledgerEvent is one row of ledger_events to store.
type ledgerEvent struct {
	sessionID, campaignID, buyerID, publisherID int64
	tid, kind                                   string
	seq                                         int
	charge, earning, reward                     int64
	at                                          *time.Time // nil: when it is written (now())
}

// nextEventSeqs reads the number the next ledger event of each session of ids takes. The
// caller holds the sessions' row locks, so that no other transaction numbers one meanwhile.
func nextEventSeqs(ctx context.Context, tx pgx.Tx, ids []int64) (map[int64]int, error) {
	out := make(map[int64]int, len(ids))
	for _, id := range ids {
		out[id] = 1
	}
	rows, err := tx.Query(ctx, `SELECT session_id, max(seq) FROM ledger_events WHERE session_id = ANY($1) GROUP BY 1`, ids)
	if err != nil {
		return nil, err
	}
	var id int64
	var seq int16
	_, err = pgx.ForEachRow(rows, []any{&id, &seq}, func() error {
		out[id] = int(seq) + 1
		return nil
	})
	return out, err
}

// insertLedgerEvents stores es in one statement, inside the transaction of their change.
func insertLedgerEvents(ctx context.Context, tx pgx.Tx, es []ledgerEvent) error {
	if len(es) == 0 {
		return nil
	}
	n := len(es)
	sids, seqs, tids, kinds := make([]int64, n), make([]int32, n), make([]string, n), make([]string, n)
	cids, bids, pids := make([]int64, n), make([]int64, n), make([]int64, n)
	charges, earnings, rewards, ats := make([]int64, n), make([]int64, n), make([]int64, n), make([]*time.Time, n)
	for i, e := range es {
		sids[i], seqs[i], tids[i], kinds[i] = e.sessionID, int32(e.seq), e.tid, e.kind
		cids[i], bids[i], pids[i] = e.campaignID, e.buyerID, e.publisherID
		charges[i], earnings[i], rewards[i], ats[i] = e.charge, e.earning, e.reward, e.at
	}
	_, err := tx.Exec(ctx, `INSERT INTO ledger_events (session_id, seq, tid, kind, campaign_id, buyer_id, publisher_id, charge_usd, earning_usd, margin_usd, reward, at)
		SELECT sid, seq, tid, kind, cid, bid, NULLIF(pid, 0), charge, earning, charge - earning, reward, COALESCE(at, now())
		FROM unnest($1::bigint[], $2::int[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[], $11::timestamptz[])
			AS e(sid, seq, tid, kind, cid, bid, pid, charge, earning, reward, at)`,
		sids, seqs, tids, kinds, cids, bids, pids, charges, earnings, rewards, ats)
	return err
}

// chainLedgerSQL stores the ledger event of the outcome that ends a re-routing chain
// (session $1, event $2, cpi $3 cents, payout $4, reward $5), as outcomeLedgerSQL does for
// a lone session, reading the outcome and the overage flag the same transaction stored.
const chainLedgerSQL = `INSERT INTO ledger_events (session_id, seq, tid, kind, campaign_id, buyer_id, publisher_id, charge_usd, earning_usd, margin_usd, reward, at)
	SELECT e.id, $2, e.tid, CASE WHEN e.outcome = 'complete' THEN 'complete' ELSE 'screenout' END, e.campaign_id, e.buyer_id, e.publisher_id,
		e.charge, $4::bigint, e.charge - $4::bigint, $5::bigint, e.outcome_at
	FROM (SELECT s.*, CASE WHEN s.outcome = 'complete' AND NOT s.overage THEN $3::bigint * 100 ELSE 0 END AS charge
		FROM sessions s WHERE s.id = $1 AND NOT s.is_test) e`

// LedgerDifference is one figure of the ledger that the outcomes do not give: a session's
// (or a postback's) What, as the ledger holds it and as the outcomes give it.
type LedgerDifference struct {
	SessionID int64  `json:"session_id"`
	TID       string `json:"tid"`
	What      string `json:"what"`
	Ledger    int64  `json:"ledger"`
	Outcomes  int64  `json:"outcomes"`
}

// LedgerTotals are the sums of the checked events, in ten-thousandths of a USD.
type LedgerTotals struct {
	Events   int64 `json:"events"`
	Charges  int64 `json:"charges_usd"`
	Earnings int64 `json:"earnings_usd"`
	Margin   int64 `json:"margin_usd"`
}

// LedgerCheck is what CheckLedger found.
type LedgerCheck struct {
	Sessions    int64              `json:"sessions"`
	Totals      LedgerTotals       `json:"totals"`
	Differences []LedgerDifference `json:"differences"`
}

// ledgerCheckSQL recomputes, for every session with an outcome (or, when $1 is set, every
// session with a ledger event in the month starting at $1), its figures from the session
// itself and its chain, and returns each that the ledger's events do not match:
//   - charge: the buyer pays the cpi of a complete neither rejected, an overage nor a test;
//   - earning: the partner holds the payout of a complete not rejected, told by its outcome
//     or an acceptance, besides the time payout of the outcome it was told of first;
//   - outcome: a session's callback outcome is one event exactly when the partner was told
//     of it (a lone session, or the last of its re-routing chain), and a chain's other
//     sessions have none until an acceptance;
//   - balance: each event's charge is its earning plus the exchange's margin.
//
// The outcome event's own amount is checked while the session still has that outcome; an
// acceptance replaces the stored payout with the complete's.
const ledgerCheckSQL = `WITH m AS (
	SELECT $1::timestamptz AS lo, ($1::timestamptz AT TIME ZONE 'UTC' + interval '1 month') AT TIME ZONE 'UTC' AS hi
), ss AS (
	SELECT s.id, s.tid, s.outcome, s.rejected, s.overage, s.is_test, COALESCE((s.payout_usd * 10000)::bigint, 0) AS payout,
		c.cpi_cents::bigint * 100 AS cpi,
		s.chain_id IS NULL OR NOT EXISTS (SELECT 1 FROM sessions n WHERE n.chain_id = s.chain_id AND n.chain_hop > s.chain_hop)
			AND (SELECT ch.ended_at IS NOT NULL FROM reroute_chains ch WHERE ch.id = s.chain_id) AS last
	FROM sessions s JOIN campaigns c ON c.id = s.campaign_id, m
	WHERE CASE WHEN m.lo IS NULL THEN s.outcome IS NOT NULL OR EXISTS (SELECT 1 FROM ledger_events e WHERE e.session_id = s.id)
		ELSE s.id IN (SELECT e.session_id FROM ledger_events e WHERE e.at >= m.lo AND e.at < m.hi) END
), agg AS (
	SELECT ss.*,
		COALESCE((SELECT sum(e.charge_usd) FROM ledger_events e WHERE e.session_id = ss.id), 0)::bigint AS charge,
		COALESCE((SELECT sum(e.earning_usd) FROM ledger_events e WHERE e.session_id = ss.id AND e.kind <> 'screenout'), 0)::bigint AS told,
		(SELECT count(*) FROM ledger_events e WHERE e.session_id = ss.id AND e.kind IN ('complete', 'screenout')) AS outcome_events,
		(SELECT e.kind FROM ledger_events e WHERE e.session_id = ss.id ORDER BY e.seq LIMIT 1) AS first_kind,
		(SELECT CASE WHEN e.kind IN ('complete', 'screenout') THEN e.earning_usd END FROM ledger_events e
			WHERE e.session_id = ss.id ORDER BY e.seq LIMIT 1) AS first_earning,
		(SELECT count(*) FROM ledger_events e WHERE e.session_id = ss.id AND e.charge_usd <> e.earning_usd + e.margin_usd) AS unbalanced
	FROM ss
), d AS (
	SELECT id, tid, 'charge' AS what, charge AS ledger,
		CASE WHEN outcome = 'complete' AND NOT rejected AND NOT overage AND NOT is_test THEN cpi ELSE 0 END AS want FROM agg
	UNION ALL
	SELECT id, tid, 'earning', told, CASE WHEN outcome = 'complete' AND NOT rejected AND NOT is_test THEN payout ELSE 0 END FROM agg
	UNION ALL
	SELECT id, tid, 'outcome events', outcome_events,
		CASE WHEN is_test OR outcome IS NULL OR first_kind = 'acceptance' OR NOT last THEN 0 ELSE 1 END FROM agg
	UNION ALL
	SELECT id, tid, 'outcome earning', first_earning, payout FROM agg
	WHERE first_earning IS NOT NULL AND outcome <> 'complete' AND first_kind = 'screenout' AND NOT EXISTS (
		SELECT 1 FROM ledger_events e WHERE e.session_id = agg.id AND e.kind = 'acceptance')
	UNION ALL
	SELECT id, tid, 'unbalanced events', unbalanced, 0 FROM agg
)
SELECT id, tid, what, ledger, want, (SELECT count(*) FROM ss) FROM d WHERE ledger IS DISTINCT FROM want ORDER BY id, what`

// postbackCheckSQL returns each partner postback naming a ledger event (stored in the month
// at $1, or all) that tells of no such event, of another kind, or of another amount.
const postbackCheckSQL = `WITH m AS (
	SELECT $1::timestamptz AS lo, ($1::timestamptz AT TIME ZONE 'UTC' + interval '1 month') AT TIME ZONE 'UTC' AS hi
), p AS (
	SELECT o.id, o.tid, o.kind, o.event_id,
		(substring(o.url FROM '[?&]payout_usd=([0-9]+\.[0-9]{4})')::numeric * 10000)::bigint AS amount
	FROM postback_outbox o, m WHERE o.publisher_id IS NOT NULL AND o.event_id IS NOT NULL AND (m.lo IS NULL OR o.created_at >= m.lo AND o.created_at < m.hi)
)
SELECT COALESCE(e.session_id, 0), p.tid,
	CASE WHEN e.session_id IS NULL THEN 'postback without event ' || p.id
		WHEN e.kind <> CASE p.kind WHEN 'outcome' THEN e.kind WHEN 'reversal' THEN 'reversal' ELSE 'acceptance' END
			OR p.kind = 'outcome' AND e.kind NOT IN ('complete', 'screenout') THEN 'postback kind ' || p.id
		ELSE 'postback amount ' || p.id END,
	COALESCE(abs(e.earning_usd), 0), COALESCE(p.amount, 0)
FROM p LEFT JOIN ledger_events e ON e.tid = p.tid AND p.event_id = e.tid || '.' || e.seq
WHERE e.session_id IS NULL OR e.kind <> CASE p.kind WHEN 'outcome' THEN e.kind WHEN 'reversal' THEN 'reversal' ELSE 'acceptance' END
	OR p.kind = 'outcome' AND e.kind NOT IN ('complete', 'screenout') OR abs(e.earning_usd) IS DISTINCT FROM p.amount
ORDER BY p.id`

// closedMonthCheckSQL returns each total of a closed month (the month at $1, or every one)
// that its events no longer sum to: a closed month never changes (docs/payouts.md,
// "Statements"), so a difference means its events were changed behind the ledger's
// triggers. The month names itself in the difference's tid column.
const closedMonthCheckSQL = `WITH m AS (
	SELECT month, events, charge_usd, earning_usd, month::timestamp AT TIME ZONE 'UTC' AS lo,
		(month::timestamp + interval '1 month') AT TIME ZONE 'UTC' AS hi
	FROM ledger_months WHERE events IS NOT NULL AND ($1::timestamptz IS NULL OR month = ($1::timestamptz AT TIME ZONE 'UTC')::date)
), t AS (
	SELECT m.*, s.n, s.c, s.e FROM m, LATERAL (SELECT count(*) AS n, COALESCE(sum(charge_usd), 0)::bigint AS c,
		COALESCE(sum(earning_usd), 0)::bigint AS e FROM ledger_events WHERE at >= m.lo AND at < m.hi) s
)
SELECT to_char(month, 'YYYY-MM'), what, closed, now FROM t, LATERAL (VALUES
	('closed month events', events, n), ('closed month charges', charge_usd, c), ('closed month earnings', earning_usd, e)) v(what, closed, now)
WHERE closed <> now ORDER BY month, what`

// CheckLedger recomputes every figure of the ledger from the outcomes (sessions, their
// rejected and overage flags, their chains) and the partner postbacks stored, for the month
// starting at month (UTC; the zero time: everything), and reports each difference
// (docs/payouts.md, "Ledger"), and each closed month whose events no longer sum to its
// totals when it closed. It reads; it changes nothing.
func (db *LedgerStore) CheckLedger(ctx context.Context, month time.Time) (LedgerCheck, error) {
	var lo *time.Time
	if !month.IsZero() {
		m := time.Date(month.Year(), month.Month(), 1, 0, 0, 0, 0, time.UTC)
		lo = &m
	}
	out := LedgerCheck{Differences: []LedgerDifference{}}
	rows, err := db.Pool.Query(ctx, ledgerCheckSQL, lo)
	if err != nil {
		return LedgerCheck{}, classify(err)
	}
	var d LedgerDifference
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&d.SessionID, &d.TID, &d.What, &d.Ledger, &d.Outcomes, &n}, func() error {
		out.Differences = append(out.Differences, d)
		return nil
	}); err != nil {
		return LedgerCheck{}, classify(err)
	}
	rows, err = db.Pool.Query(ctx, postbackCheckSQL, lo)
	if err != nil {
		return LedgerCheck{}, classify(err)
	}
	if _, err := pgx.ForEachRow(rows, []any{&d.SessionID, &d.TID, &d.What, &d.Ledger, &d.Outcomes}, func() error {
		out.Differences = append(out.Differences, d)
		return nil
	}); err != nil {
		return LedgerCheck{}, classify(err)
	}
	rows, err = db.Pool.Query(ctx, closedMonthCheckSQL, lo)
	if err != nil {
		return LedgerCheck{}, classify(err)
	}
	if _, err := pgx.ForEachRow(rows, []any{&d.TID, &d.What, &d.Ledger, &d.Outcomes}, func() error {
		d.SessionID = 0
		out.Differences = append(out.Differences, d)
		return nil
	}); err != nil {
		return LedgerCheck{}, classify(err)
	}
	t := &out.Totals
	err = db.Pool.QueryRow(ctx, `SELECT count(DISTINCT session_id), count(*), COALESCE(sum(charge_usd), 0)::bigint,
		COALESCE(sum(earning_usd), 0)::bigint, COALESCE(sum(margin_usd), 0)::bigint
		FROM ledger_events WHERE $1::timestamptz IS NULL OR at >= $1::timestamptz AND at < ($1::timestamptz AT TIME ZONE 'UTC' + interval '1 month') AT TIME ZONE 'UTC'`, lo).
		Scan(&out.Sessions, &t.Events, &t.Charges, &t.Earnings, &t.Margin)
	return out, classify(err)
}
