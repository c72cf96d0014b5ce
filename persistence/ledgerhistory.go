package persistence

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/internal/fault"
)

// ledgerSince is the first migration of the ledger: a serve process of an earlier release
// decides outcomes without writing their events.
const ledgerSince = 52

// historySQL finds, among the sessions with ids in [$1, $2), each decided one the ledger
// lacks the outcome of: not a test, told to its partner (a lone session, or the last of an
// ended re-routing chain), without an outcome event, and not made a complete by a reconcile
// of the ledger (its first event an acceptance). It locks them, so that no reject or
// reconcile numbers an event of theirs meanwhile, and returns what their events need: the
// outcome and its amounts as stored, and the sums of the events they have.
const historySQL = `SELECT s.id, s.tid, s.outcome, s.outcome_at, COALESCE(s.rejected_at, s.outcome_at), s.rejected, s.overage,
	s.campaign_id, s.buyer_id, COALESCE(s.publisher_id, 0), COALESCE((s.payout_usd * 10000)::bigint, 0), COALESCE(s.reward, 0),
	c.cpi_cents::bigint * 100,
	COALESCE((SELECT sum(e.charge_usd) FROM ledger_events e WHERE e.session_id = s.id), 0)::bigint,
	COALESCE((SELECT sum(e.earning_usd) FROM ledger_events e WHERE e.session_id = s.id AND e.kind <> 'screenout'), 0)::bigint,
	COALESCE((SELECT max(e.seq) FROM ledger_events e WHERE e.session_id = s.id), 0)
FROM sessions s JOIN campaigns c ON c.id = s.campaign_id
WHERE s.id >= $1 AND s.id < $2 AND s.outcome IS NOT NULL AND NOT s.is_test
	AND (s.chain_id IS NULL OR NOT EXISTS (SELECT 1 FROM sessions n WHERE n.chain_id = s.chain_id AND n.chain_hop > s.chain_hop)
		AND (SELECT ch.ended_at IS NOT NULL FROM reroute_chains ch WHERE ch.id = s.chain_id))
	AND NOT EXISTS (SELECT 1 FROM ledger_events e WHERE e.session_id = s.id AND e.kind IN ('complete', 'screenout'))
	AND COALESCE((SELECT e.kind FROM ledger_events e WHERE e.session_id = s.id ORDER BY e.seq LIMIT 1), '') <> 'acceptance'
ORDER BY s.id
FOR UPDATE OF s`

// historyEvents are the events that give a session decided without the ledger its history:
// its outcome as event 0 (charged and paid as the outcome was, dated when it was decided),
// and, when the session's state differs from its events so far (a complete rejected without
// the ledger), the movement to that state, dated when it was rejected.
func historyEvents(s Session, outcomeAt, correctedAt time.Time, rejected, overage bool, payout, reward, cpi, charged, told int64, maxSeq int) []ledgerEvent {
	complete := s.Outcome == "complete"
	e := ledgerEvent{sessionID: s.ID, campaignID: s.CampaignID, buyerID: s.BuyerID, publisherID: s.PublisherID,
		tid: s.TID, kind: LedgerScreenout, earning: payout, reward: reward, at: &outcomeAt}
	if complete {
		e.kind = LedgerComplete
		if !overage {
			e.charge = cpi
		}
		told += payout
	}
	charged += e.charge
	var wantCharge, wantTold int64
	if complete && !rejected {
		wantTold = payout
		if !overage {
			wantCharge = cpi
		}
	}
	out := []ledgerEvent{e}
	if charged == wantCharge && told == wantTold {
		return out
	}
	c := ledgerEvent{sessionID: s.ID, campaignID: s.CampaignID, buyerID: s.BuyerID, publisherID: s.PublisherID,
		tid: s.TID, kind: LedgerReversal, seq: maxSeq + 1, charge: wantCharge - charged, earning: wantTold - told, at: &correctedAt}
	switch {
	case c.earning == -payout:
		c.reward = -reward
	case c.earning == payout:
		c.reward = reward
	}
	if c.charge > 0 || c.earning > 0 {
		c.kind = LedgerAcceptance
	}
	return append(out, c)
}

// LedgerHistory is what a BackfillLedger call did.
type LedgerHistory struct {
	Batches  int   `json:"batches"`
	Sessions int   `json:"sessions"` // sessions given their history
	Events   int   `json:"events"`
	NextID   int64 `json:"next_id"` // the watermark: every session below it is done
	Done     bool  `json:"done"`    // the watermark passed the newest session
}

// BackfillLedger writes the ledger of every session decided without it (docs/payouts.md,
// "History"): sessions decided before the ledger existed, whose statements and `ledger
// check` need their events. It walks the sessions by id from its watermark
// (ledger_backfill.next_id) to the newest, batch sessions at a time, each batch one short
// transaction that locks only the sessions it gives events and advances the watermark, so
// it runs while serving, resumes where it stopped, and running it again adds nothing. It
// refuses while a serve process of a release without the ledger is alive (it would decide
// outcomes without events behind the watermark). progress, when set, is called after
// each batch.
func (db *LedgerStore) BackfillLedger(ctx context.Context, batch int, progress func(LedgerHistory)) (LedgerHistory, error) {
	var h LedgerHistory
	if batch <= 0 {
		batch = 1000
	}
	var older bool
	var top int64
	if err := db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM serve_processes
		WHERE updated_at > now() - interval '1 minute' AND (schema IS NULL OR schema < $1)),
		(SELECT b.next_id FROM ledger_backfill b), COALESCE((SELECT max(id) FROM sessions), 0)`, ledgerSince).
		Scan(&older, &h.NextID, &top); err != nil {
		return h, classify(err)
	}
	if older {
		return h, fault.Conflict("a serve process of a release without the ledger is alive: upgrade every process first")
	}
	for h.NextID <= top {
		if err := ctx.Err(); err != nil {
			return h, fault.Unavailable(err)
		}
		from, to := h.NextID, top+1
		var n, ne int
		err := db.Tx(ctx, func(tx pgx.Tx) error {
			// The batch is the next batch sessions by id (ids are sparse: sessions are
			// partitioned in blocks of ids), found on the primary key.
			if err := tx.QueryRow(ctx, `SELECT COALESCE((SELECT id FROM sessions WHERE id >= $1 ORDER BY id OFFSET $2 LIMIT 1), $3)`,
				from, batch, to).Scan(&to); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, historySQL, from, to)
			if err != nil {
				return err
			}
			var es []ledgerEvent
			var s Session
			var outcomeAt, correctedAt time.Time
			var rejected, overage bool
			var payout, reward, cpi, charged, told int64
			var maxSeq int16
			n = 0
			if _, err := pgx.ForEachRow(rows, []any{&s.ID, &s.TID, &s.Outcome, &outcomeAt, &correctedAt, &rejected, &overage,
				&s.CampaignID, &s.BuyerID, &s.PublisherID, &payout, &reward, &cpi, &charged, &told, &maxSeq}, func() error {
				es = append(es, historyEvents(s, outcomeAt, correctedAt, rejected, overage, payout, reward, cpi, charged, told, int(maxSeq))...)
				n++
				return nil
			}); err != nil {
				return err
			}
			if err := insertLedgerEvents(ctx, tx, es); err != nil {
				return err
			}
			ne = len(es)
			_, err = tx.Exec(ctx, `UPDATE ledger_backfill SET next_id = GREATEST(next_id, $1), updated_at = now()`, to)
			return err
		})
		if err != nil {
			return h, err
		}
		h.Batches++
		h.Sessions += n
		h.Events += ne
		h.NextID = to
		if progress != nil {
			progress(h)
		}
	}
	var through int64
	if err := db.Pool.QueryRow(ctx, `SELECT through FROM ledger_backfill`).Scan(&through); err != nil {
		return h, classify(err)
	}
	h.Done = h.NextID > through
	return h, nil
}
