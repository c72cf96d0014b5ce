package persistence

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/quality"
)

// rejectSQL rejects completes of campaign $1 (buyer $2) chosen by the filter on sessions s
// and the transaction-id list $3: accepted ones stop counting toward their quotas and
// toward the completes of the day they completed on; an overage (docs/rules.md §5) counted
// toward neither. It returns the rejected session ids.
func rejectSQL(filter string) string {
	return `WITH r AS (
		UPDATE sessions s SET rejected = true, rejected_at = now()
		WHERE s.campaign_id = $1 AND s.buyer_id = $2 AND NOT s.is_test AND s.outcome = 'complete' AND NOT s.rejected
		AND ` + filter + `
		RETURNING s.id, s.quota_ids, s.outcome_at, s.overage
	), x AS (
		SELECT qid, count(*) AS n FROM r, unnest(r.quota_ids) AS qid WHERE NOT r.overage GROUP BY qid
	), q AS (
		UPDATE campaign_quotas cq SET completes = cq.completes - x.n FROM x WHERE cq.id = x.qid RETURNING 1
	), dd AS (
		SELECT (outcome_at AT TIME ZONE 'UTC')::date AS day, count(*) AS n FROM r WHERE NOT r.overage GROUP BY 1
	), d AS (
		UPDATE campaign_daily_counts d SET completes = d.completes - dd.n FROM dd
		WHERE d.campaign_id = $1 AND d.day = dd.day RETURNING 1
	)
	SELECT id, overage FROM r ORDER BY id`
}

// Reversal builds the partner's reversal postback of a complete that a rejection reverses,
// from the session and its publisher, with the payout rules persistence does not know, for
// the ledger event eventID. The rejecting transaction reads the publisher and stores the
// postback (URL "": none). A session without a publisher has no partner and gets no call.
type Reversal func(s Session, pub Publisher, eventID string) (Postback, error)

// RejectEffects are what rejecting completes does besides un-counting them, all inside the
// rejecting transaction.
type RejectEffects struct {
	// Reverse builds each rejected complete's reversal postback; nil: none.
	Reverse Reversal
	// Quality, when set, makes each rejection of a participant's non-test session a quality
	// signal (docs/quality.md), recorded and decided with this policy.
	Quality *quality.Policy
}

// rejectWith rejects the completes filter picks and applies fx. It returns how many it
// rejected and what the quality signals decided.
func rejectWith(ctx context.Context, tx pgx.Tx, filter string, campaignID, buyerID int64, tids []string, fx RejectEffects) (int, []QualityOutcome, error) {
	rows, err := tx.Query(ctx, rejectSQL(filter), campaignID, buyerID, tids)
	if err != nil {
		return 0, nil, err
	}
	var ids []int64
	overage := map[int64]bool{}
	var id int64
	var over bool
	if _, err := pgx.ForEachRow(rows, []any{&id, &over}, func() error {
		ids, overage[id] = append(ids, id), over
		return nil
	}); err != nil || len(ids) == 0 {
		return len(ids), nil, err
	}
	ss, err := sessionsByID(ctx, tx, ids)
	if err != nil {
		return 0, nil, err
	}
	// Each rejected complete's reversal is a ledger event: the buyer is refunded the cpi it
	// was charged (nothing for an overage), the partner loses the payout it was told of.
	seqs, err := nextEventSeqs(ctx, tx, ids)
	if err != nil {
		return 0, nil, err
	}
	events := make([]ledgerEvent, 0, len(ss))
	for _, s := range ss {
		e := ledgerEvent{sessionID: s.ID, campaignID: s.CampaignID, buyerID: s.BuyerID, publisherID: s.PublisherID,
			tid: s.TID, kind: LedgerReversal, seq: seqs[s.ID], earning: -s.PayoutUSD, reward: -s.Reward}
		if !overage[s.ID] {
			e.charge = -s.CPICents * 100
		}
		events = append(events, e)
	}
	if err := insertLedgerEvents(ctx, tx, events); err != nil {
		return 0, nil, err
	}
	if fx.Reverse != nil {
		pubs, err := sessionPublishers(ctx, tx, ss)
		if err != nil {
			return 0, nil, err
		}
		pbs := make([]Postback, 0, len(ss))
		for _, s := range ss {
			if s.PublisherID == 0 {
				continue
			}
			pb, err := fx.Reverse(s, pubs[s.PublisherID], EventID(s.TID, seqs[s.ID]))
			if err != nil {
				return 0, nil, err
			}
			pbs = append(pbs, pb)
		}
		if err := EnqueuePostbacks(ctx, tx, pbs); err != nil {
			return 0, nil, err
		}
	}
	var decided []QualityOutcome
	if fx.Quality != nil {
		for _, s := range ss {
			if s.ParticipantID == 0 || s.IsTest {
				continue
			}
			out, err := RecordQualitySignalsTx(ctx, tx, *fx.Quality, []QualitySignal{{
				ParticipantID: s.ParticipantID, PublisherID: s.PublisherID, Kind: quality.SignalRejected,
				Ref: s.TID, TID: s.TID, Evidence: map[string]any{"campaign_id": s.CampaignID}}})
			if err != nil {
				return 0, nil, err
			}
			decided = append(decided, out)
		}
	}
	return len(ids), decided, nil
}

// sessionsByID reads sessions in id order.
func sessionsByID(ctx context.Context, tx pgx.Tx, ids []int64) ([]Session, error) {
	rows, err := tx.Query(ctx, `SELECT `+sessionColumns+sessionFrom+` WHERE s.id = ANY($1) ORDER BY s.id`, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Session, error) { return scanSession(r) })
}

// sessionPublishers reads the publishers of sessions, each once.
func sessionPublishers(ctx context.Context, tx pgx.Tx, ss []Session) (map[int64]Publisher, error) {
	ids := make([]int64, 0, 4)
	seen := map[int64]bool{}
	for _, s := range ss {
		if s.PublisherID != 0 && !seen[s.PublisherID] {
			seen[s.PublisherID] = true
			ids = append(ids, s.PublisherID)
		}
	}
	out := make(map[int64]Publisher, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := tx.Query(ctx, `SELECT `+publisherColumns+` FROM publishers WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		p, err := scanPublisher(rows)
		if err != nil {
			return nil, err
		}
		out[p.ID] = p
	}
	return out, rows.Err()
}

func ownCampaign(ctx context.Context, tx pgx.Tx, buyerID, campaignID int64, lock bool) (int, error) {
	q := `SELECT status FROM campaigns WHERE id = $1 AND buyer_id = $2`
	if lock {
		q += ` FOR UPDATE`
	}
	var status int16
	err := tx.QueryRow(ctx, q, campaignID, buyerID).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fault.NotFound("campaign not found")
	}
	return int(status), err
}

// Rejection is the answer to reject_completes.
type Rejection struct {
	ID                     int64    `json:"id"`
	RejectedTransactionIDs []string `json:"rejected_transaction_ids"`
	NotFoundTransactionIDs []string `json:"not_found_transaction_ids"`
	newlyRejected          int
	quality                []QualityOutcome
}

// NewlyRejected is how many completes this request rejected (the others were already).
func (r Rejection) NewlyRejected() int { return r.newlyRejected }

// QualityOutcomes are what the rejections' quality signals decided (RejectEffects.Quality),
// for the caller to apply once the transaction has committed.
func (r Rejection) QualityOutcomes() []QualityOutcome { return r.quality }

// RejectCompletes rejects the listed completes of a buyer's campaign (docs/rules.md §8): they no
// longer count toward their quotas, and fx is applied to each newly rejected one inside the
// same transaction. Listed ids that are completes of the campaign (rejected now or
// before) are reported rejected; any other id (unknown, another campaign's or buyer's, not a
// complete) is reported not found.
func (db *SessionStore) RejectCompletes(ctx context.Context, buyerID, campaignID int64, tids []string, fx RejectEffects) (Rejection, error) {
	tids = dedupe(tids)
	var out Rejection
	err := retry(ctx, func() error {
		out = Rejection{}
		return db.Tx(ctx, func(tx pgx.Tx) error {
			if _, err := ownCampaign(ctx, tx, buyerID, campaignID, false); err != nil {
				return err
			}
			n, decided, err := rejectWith(ctx, tx, `s.tid = ANY($3)`, campaignID, buyerID, tids, fx)
			if err != nil {
				return err
			}
			out.newlyRejected, out.quality = n, decided
			rows, err := tx.Query(ctx, `SELECT tid FROM sessions WHERE tid = ANY($3) AND campaign_id = $1 AND buyer_id = $2
				AND NOT is_test AND outcome = 'complete' AND rejected`, campaignID, buyerID, tids)
			if err != nil {
				return err
			}
			got, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			set := make(map[string]bool, len(got))
			for _, t := range got {
				set[t] = true
			}
			out.RejectedTransactionIDs, out.NotFoundTransactionIDs = []string{}, []string{}
			for _, t := range tids {
				if set[t] {
					out.RejectedTransactionIDs = append(out.RejectedTransactionIDs, t)
				} else {
					out.NotFoundTransactionIDs = append(out.NotFoundTransactionIDs, t)
				}
			}
			return tx.QueryRow(ctx, `INSERT INTO complete_rejections (campaign_id, buyer_id, rejected_tids, not_found_tids)
				VALUES ($1, $2, $3, $4) RETURNING id`, campaignID, buyerID, out.RejectedTransactionIDs, out.NotFoundTransactionIDs).
				Scan(&out.ID)
		})
	})
	return out, classify(err)
}

// Reconciliation is the answer to reconcile.
type Reconciliation struct {
	ID            int64   `json:"id"`
	AcceptedCount int64   `json:"accepted_count"`
	RejectedCount int64   `json:"rejected_count"`
	PurchaseOrder *string `json:"purchase_order"`
	quality       []QualityOutcome
}

// QualityOutcomes are what the rejections' quality signals decided (RejectEffects.Quality),
// for the caller to apply once the transaction has committed.
func (r Reconciliation) QualityOutcomes() []QualityOutcome { return r.quality }

// acceptSQL makes the listed sessions ($3) of campaign $1 accepted completes: each that was
// not one (another outcome, none yet, a rejected complete, or an overage: the buyer takes
// and pays for it, docs/rules.md §5) becomes a complete that counts toward its quotas
// (leaving in_progress if it was still there) and toward the day's counts, and a quota that
// this fills stores its quota.filled webhook event. It returns the ids of the sessions it
// converted, each with whether its partner was paid for a complete already (an overage
// not rejected: nothing to price or tell).
var acceptSQL = `WITH old AS (
	SELECT id, outcome, rejected, overage, released_at IS NULL AS held, quota_ids, outcome_at FROM sessions
	WHERE tid = ANY($3) AND campaign_id = $1 AND buyer_id = $2 AND NOT is_test AND (outcome IS DISTINCT FROM 'complete' OR rejected OR overage)
	ORDER BY id FOR UPDATE
), u AS (
	UPDATE sessions s SET outcome = 'complete', outcome_at = COALESCE(s.outcome_at, now()), rejected = false, rejected_at = NULL, overage = false
	FROM old WHERE s.id = old.id RETURNING s.id, old.overage AND NOT old.rejected AS paid
), x AS (
	SELECT qid, count(*) AS n, count(*) FILTER (WHERE old.outcome IS NULL AND old.held) AS ip
	FROM old, unnest(old.quota_ids) AS qid GROUP BY qid
), q AS (
	UPDATE campaign_quotas cq SET completes = cq.completes + x.n, in_progress = cq.in_progress - x.ip FROM x WHERE cq.id = x.qid
	RETURNING cq.id, cq.campaign_id, cq.completes, cq.num_respondents, cq.is_click_balanced, x.n AS added
), ` + quotaFilledSQL + `, dd AS (
	SELECT (COALESCE(outcome_at, now()) AT TIME ZONE 'UTC')::date AS day, count(*) AS n,
		count(*) FILTER (WHERE outcome IS NULL) AS newout FROM old GROUP BY 1
), d AS (
	INSERT INTO campaign_daily_counts AS d (campaign_id, day, outcomes, completes) SELECT $1, day, newout, n FROM dd
	ON CONFLICT (campaign_id, day) DO UPDATE SET outcomes = d.outcomes + EXCLUDED.outcomes, completes = d.completes + EXCLUDED.completes
	RETURNING 1
)
SELECT id, paid FROM u ORDER BY id`

// Accepted is what a session that reconcile made an accepted complete now pays its partner,
// and the postback that tells the partner.
type Accepted struct {
	PayoutUSD int64    // ten-thousandths of a dollar
	Reward    int64    // in-app currency
	Postback  Postback // kind PostbackAcceptance; an empty URL stores none
}

// Acceptance prices a session that reconcile makes an accepted complete, from the session
// and its publisher, with the payout rules persistence does not know, its postback telling
// of the ledger event eventID. The reconciling transaction reads the publisher and stores
// the amounts and the postback. ok false leaves the session's amounts as they were and
// sends nothing. A session without a publisher has no partner and gets no call.
type Acceptance func(s Session, pub Publisher, eventID string) (a Accepted, ok bool, err error)

// acceptWith runs acceptSQL, then stores the amounts accept gives each converted session and
// enqueues their postbacks: one statement each for the whole list, which may hold 10,000 ids.
func acceptWith(ctx context.Context, tx pgx.Tx, campaignID, buyerID int64, tids []string, accept Acceptance) error {
	rows, err := tx.Query(ctx, acceptSQL, campaignID, buyerID, tids)
	if err != nil {
		return err
	}
	var ids []int64
	paid := map[int64]bool{}
	var id int64
	var p bool
	if _, err := pgx.ForEachRow(rows, []any{&id, &p}, func() error {
		ids, paid[id] = append(ids, id), p
		return nil
	}); err != nil || len(ids) == 0 {
		return err
	}
	ss, err := sessionsByID(ctx, tx, ids)
	if err != nil {
		return err
	}
	seqs, err := nextEventSeqs(ctx, tx, ids)
	if err != nil {
		return err
	}
	pubs, err := sessionPublishers(ctx, tx, ss)
	if err != nil {
		return err
	}
	// Each acceptance is a ledger event: the buyer is charged the cpi; the partner earns the
	// complete's payout unless it holds it already (an overage not rejected).
	events := make([]ledgerEvent, 0, len(ss))
	priced, payouts, rewards := make([]int64, 0, len(ss)), make([]int64, 0, len(ss)), make([]int64, 0, len(ss))
	pbs := make([]Postback, 0, len(ss))
	for _, s := range ss {
		e := ledgerEvent{sessionID: s.ID, campaignID: s.CampaignID, buyerID: s.BuyerID, publisherID: s.PublisherID,
			tid: s.TID, kind: LedgerAcceptance, seq: seqs[s.ID], charge: s.CPICents * 100}
		if s.PublisherID != 0 && !paid[s.ID] && accept != nil {
			a, ok, err := accept(s, pubs[s.PublisherID], EventID(s.TID, seqs[s.ID]))
			if err != nil {
				return err
			}
			if ok {
				priced, payouts, rewards, pbs = append(priced, s.ID), append(payouts, a.PayoutUSD), append(rewards, a.Reward), append(pbs, a.Postback)
				e.earning, e.reward = a.PayoutUSD, a.Reward
			}
		}
		events = append(events, e)
	}
	if err := insertLedgerEvents(ctx, tx, events); err != nil {
		return err
	}
	if len(priced) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `UPDATE sessions s SET payout_usd = j.payout::numeric / 10000, reward = j.reward
		FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS j(id, payout, reward) WHERE s.id = j.id`,
		priced, payouts, rewards); err != nil {
		return err
	}
	return EnqueuePostbacks(ctx, tx, pbs)
}

// Reconcile makes the listed transaction ids the campaign's final accepted completes
// (docs/rules.md §8): a listed session that is not an accepted complete becomes one (accept
// prices it and builds its postback, see acceptWith), an accepted complete that is not
// listed is rejected (fx is applied to it), all in one transaction, and the campaign
// becomes 6 Reconciled. accepted_count counts the listed ids that are sessions of the
// campaign; rejected_count the completes that were not listed.
func (db *SessionStore) Reconcile(ctx context.Context, buyerID, campaignID int64, tids []string, purchaseOrder *string, accept Acceptance, fx RejectEffects) (Reconciliation, error) {
	tids = dedupe(tids)
	var out Reconciliation
	err := retry(ctx, func() error {
		out = Reconciliation{PurchaseOrder: purchaseOrder}
		return db.Tx(ctx, func(tx pgx.Tx) error {
			status, err := ownCampaign(ctx, tx, buyerID, campaignID, true)
			if err != nil {
				return err
			}
			if status == StatusArchived {
				return fault.Invalid("status", "an archived campaign cannot be reconciled")
			}
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM sessions WHERE tid = ANY($3) AND campaign_id = $1 AND buyer_id = $2 AND NOT is_test`,
				campaignID, buyerID, tids).Scan(&out.AcceptedCount); err != nil {
				return err
			}
			if err := acceptWith(ctx, tx, campaignID, buyerID, tids, accept); err != nil {
				return err
			}
			// An overage left unlisted stays one: the buyer was never charged for it, and its
			// partner keeps its pay (docs/rules.md §8).
			_, decided, err := rejectWith(ctx, tx, `NOT (s.tid = ANY($3)) AND NOT s.overage`, campaignID, buyerID, tids, fx)
			if err != nil {
				return err
			}
			out.quality = decided
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM sessions WHERE campaign_id = $1 AND buyer_id = $2 AND NOT is_test
				AND outcome = 'complete' AND NOT overage AND NOT (tid = ANY($3))`, campaignID, buyerID, tids).Scan(&out.RejectedCount); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE campaigns SET status = 6, status_changed_at = CASE WHEN status <> 6 THEN now() ELSE status_changed_at END,
				completed_at = COALESCE(completed_at, now()), updated_at = now() WHERE id = $1`, campaignID); err != nil {
				return err
			}
			if status != StatusReconciled {
				if err := EnqueueWebhookEvents(ctx, tx, statusEvents(campaignID, status, StatusReconciled, "")); err != nil {
					return err
				}
			}
			if err := NotifyCampaigns(ctx, tx, campaignID); err != nil {
				return err
			}
			return tx.QueryRow(ctx, `INSERT INTO reconciliations (campaign_id, buyer_id, purchase_order, accepted_count, rejected_count)
				VALUES ($1, $2, $3, $4, $5) RETURNING id`, campaignID, buyerID, purchaseOrder, out.AcceptedCount, out.RejectedCount).
				Scan(&out.ID)
		})
	})
	return out, classify(err)
}

// dedupe drops repeated ids, keeping the first occurrence's order.
func dedupe(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
