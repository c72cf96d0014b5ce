package persistence

import (
	"context"
	_ "embed"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// admitParticipantsSQL takes the transaction advisory lock of each distinct participant of
// the batch, in ascending key order (two ids may share a key: ordering by id could then
// take two keys in opposite orders in two batches). The keys are (730045103, hashint8(id)):
// admission's namespace beside quality's 730045101 and 730045102.
const admitParticipantsSQL = `SELECT pg_advisory_xact_lock(730045103, k)
	FROM (SELECT DISTINCT hashint8(p) AS k FROM unnest($1::bigint[]) AS p ORDER BY k) AS x`

// admitLockSQL locks the batch's matched quota rows in id order and returns their counts.
const admitLockSQL = `SELECT id, campaign_id, is_global, is_click_balanced, num_respondents, entries, completes, in_progress
	FROM campaign_quotas WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE`

// admitSettingsSQL sets the plans of an admission's statements, for its transaction:
// generic ones, since they run with arrays of any length and planning them per batch would
// cost more than running them; and no JIT compilation, which never pays for itself on
// lookups by key and costs a second or more per call once statistics gone stale put a
// plan past jit_above_cost. (Disabling sequential scans here, against plans made while a
// table was empty, made them worse: full scans of the wrong index; the analyzer replaces
// such plans within a second or two instead, router.Config.AnalyzeEvery.)
const admitSettingsSQL = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true), set_config('jit', 'off', true)`

// admitChecksSQL reads, per entry (ordinality i), its campaign (buyer, status, caps,
// today's UTC completes when it has a daily cap, else 0: nothing else reads them) and what
// stored rows say: excluded (listed in campaign_exclusions, or impaneled by a partner in
// excluded_supplier_ids: a probe of participants only when the list is not empty), entered within
// reentry_interval, entered a related campaign, the participant's respondent id for the
// campaign's buyer ("" when none yet), and where the session the entry may resume is (its
// offer's, in progress, entered within OfferSessionAge): 0 nowhere (no nonce, or no entry
// into the campaign within OfferSessionAge), the id of the participant's latest session in
// the campaign when that came from the entry's offer, -1 when the latest came from another
// offer (an earlier one of this offer may still be in progress: a campaign that allows
// reentries). readResumes reads the candidate. An entry whose campaign does not exist
// returns no row.
//
// Every rule about the participant's past entries reads participations (migration 0045),
// the latest session of each (campaign, participant), which a trigger on sessions keeps in
// the transaction of every insert: one probe of one index per rule, however many months of
// sessions are stored. The probes of the partitions of sessions they replace set up a scan
// of every partition for each of four subqueries at every execution (their floors depend
// on the row, so the plan's start prunes nothing): about half a millisecond per batch at 13
// partitions, more with each month (docs/performance.md, "Participations").
//
// The campaign's own participation is looked for only when the participant has a
// respondent id for the campaign's buyer (rs): every session is stored in the statement that
// stores its participant's respondent id for its buyer when there is none (admitWriteSQL),
// and no respondent id is ever deleted, so a participant without one has not entered any of
// that buyer's campaigns. A participant entering a buyer's campaigns for the first time,
// most entries of a marketplace with many buyers, then costs one index probe of
// respondents (the LIMIT keeps that lookup a subquery of its own, so that the planner tests
// rs before it rather than joining participations in and filtering after). A relationship
// is looked up from each side by its own index (an OR of both columns made every entry read
// the whole relationships table), and each related campaign's participation by its key in a
// subquery of its own (OFFSET 0: not flattened into a join, whose order the statistics of
// the moment would choose).
var admitChecksSQL = `SELECT e.i::int, c.buyer_id, c.status, c.max_daily_completes, c.reentry_interval,
	CASE WHEN c.max_daily_completes IS NULL THEN 0
		ELSE COALESCE((SELECT d.completes FROM campaign_daily_counts d WHERE d.campaign_id = c.id AND d.day = (now() AT TIME ZONE 'UTC')::date), 0) END,
	EXISTS (SELECT 1 FROM campaign_exclusions x WHERE x.campaign_id = c.id AND x.participant_id = e.p)
	OR (c.excluded_supplier_ids <> '{}' AND EXISTS (SELECT 1 FROM participants xp WHERE xp.id = e.p AND xp.publisher_id = ANY(c.excluded_supplier_ids))),
	pc.entered_at IS NOT NULL AND c.reentry_interval IS DISTINCT FROM 0
		AND (c.reentry_interval IS NULL OR pc.entered_at > now() - make_interval(mins => c.reentry_interval)),
	EXISTS (SELECT 1 FROM campaign_relationships r WHERE r.campaign_id = c.id
		AND EXISTS (SELECT 1 FROM participations pr WHERE pr.campaign_id = r.related_campaign_id AND pr.participant_id = e.p OFFSET 0))
	OR EXISTS (SELECT 1 FROM campaign_relationships r WHERE r.related_campaign_id = c.id
		AND EXISTS (SELECT 1 FROM participations pr WHERE pr.campaign_id = r.campaign_id AND pr.participant_id = e.p OFFSET 0)),
	COALESCE(rs.respondent_id, ''),
	CASE WHEN e.n = 0 OR pc.entered_at IS NULL OR pc.entered_at <= now() - interval '` + strconv.Itoa(int(OfferSessionAge/time.Second)) + ` seconds' THEN 0
		WHEN pc.offer_nonce = e.n THEN pc.session_id ELSE -1 END
	FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) WITH ORDINALITY AS e(c, p, n, i) JOIN campaigns c ON c.id = e.c
	LEFT JOIN LATERAL (SELECT x.respondent_id FROM respondents x WHERE x.buyer_id = c.buyer_id AND x.participant_id = e.p) rs ON true
	LEFT JOIN LATERAL (SELECT p.entered_at, p.session_id, p.offer_nonce FROM participations p
		WHERE rs.respondent_id IS NOT NULL AND p.campaign_id = c.id AND p.participant_id = e.p LIMIT 1) pc ON true`

// admitRelatedSQL lists the relationships of the batch's campaigns, for entries of one
// participant into related campaigns within the same batch.
const admitRelatedSQL = `SELECT campaign_id, related_campaign_id FROM campaign_relationships
	WHERE campaign_id = ANY($1::bigint[]) OR related_campaign_id = ANY($1::bigint[])`

// admitIDsSQL draws session ids for a batch's entries ($1 of them), so that each admitted
// session's tid can name its id's block (tid.go) before the session is stored.
const admitIDsSQL = `SELECT nextval('sessions_id_seq') FROM generate_series(1, $1::int)`

// admitWriteSQL stores the admitted entries of a batch: first respondent ids ($1–$3), the
// quota counts ($4 quota ids, $5 entries each; the rows are locked already) and the sessions
// ($6–$15; quota_ids as array literals, respondent "" = the one inserted here, offer nonce
// 0 = none, ids drawn by admitIDsSQL).
//
//go:embed admitwrite.sql
var admitWriteSQL string

// admitBatch decides es in order in one transaction (see "The arbiter", admission.go), with s's
// room; the verdicts are s.out.
func (db *SessionStore) admitBatch(ctx context.Context, es []Entry, s *admitScratch) error {
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if err := admitOn(ctx, conn.Conn(), es, true, s); err != nil {
		rollbackOpen(ctx, conn.Conn())
		return err
	}
	return nil
}

// admitOn decides es on conn: in a transaction of its own when own, else inside the
// caller's open transaction (which it neither commits nor rolls back). The verdicts are
// s.out, valid until s is reused.
func admitOn(ctx context.Context, conn *pgx.Conn, es []Entry, own bool, s *admitScratch) error {
	repeat := s.prepare(es)
	b := &pgx.Batch{}
	if own {
		b.Queue("BEGIN")
	}
	queueAdmitReads(b, es, repeat, s)
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	st := &s.st
	if err := readResumes(ctx, conn, es, st.facts); err != nil {
		return err
	}

	out, w := decideBatch(es, st, s)
	now := time.Now()
	if len(w.tid) == 0 {
		// Nothing admitted: nothing to make durable.
		var err error
		if own {
			_, err = conn.Exec(ctx, "ROLLBACK")
		}
		for i := range out {
			if out[i].Refused != "" {
				out[i].EnteredAt = now
			}
		}
		return err
	}
	b = &pgx.Batch{}
	queueAdmitWrite(b, out, w, s)
	queueChains(b, es, out, w)
	if own {
		b.Queue("COMMIT")
	}
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	for i := range out {
		switch {
		case out[i].Refused != "":
			out[i].EnteredAt = now
		case out[i].Resumed && out[i].EnteredAt.IsZero(): // resumes an entry of this batch
			first := out[w.index[out[i].TID]]
			out[i].RespondentID, out[i].EnteredAt = first.RespondentID, first.EnteredAt
		}
	}
	return nil
}

// prepare readies s for the batch es: its entries' campaign, participant and nonce columns,
// its distinct quota and campaign ids, and state and rows emptied, with room for every row
// the reads can return. It reports whether a participant appears twice in es.
func (s *admitScratch) prepare(es []Entry) (repeat bool) {
	s.qids, s.cids, s.camps, s.parts, s.nonces = s.qids[:0], s.cids[:0], s.camps[:0], s.parts[:0], s.nonces[:0]
	clear(s.seen)
	for i := range es {
		s.qids = append(s.qids, es[i].QuotaIDs...)
		s.cids = append(s.cids, es[i].CampaignID)
		s.camps, s.parts, s.nonces = append(s.camps, es[i].CampaignID), append(s.parts, es[i].ParticipantID), append(s.nonces, es[i].OfferNonce)
		repeat = repeat || s.seen[es[i].ParticipantID]
		s.seen[es[i].ParticipantID] = true
	}
	slices.Sort(s.qids)
	s.qids = slices.Compact(s.qids)
	slices.Sort(s.cids)
	s.cids = slices.Compact(s.cids)

	st := &s.st
	clear(st.quotas)
	clear(st.camps)
	clear(st.related)
	st.facts = slices.Grow(st.facts[:0], len(es))[:len(es)]
	clear(st.facts)
	// Rows are kept by address (st.quotas, st.camps): their slices have room for every row
	// the statements can return (one per distinct id), so appending never moves them.
	s.quotaRows = slices.Grow(s.quotaRows[:0], len(s.qids))
	s.campRows = slices.Grow(s.campRows[:0], len(s.cids))
	s.ids = s.ids[:0]
	return repeat
}

// queueAdmitReads queues the first round trip's statements after BEGIN: the plans'
// settings, the participants' locks, the session ids, each entry's checks, the campaigns'
// relationships when repeat (a participant appears twice), and the quota rows' locks. Their
// rows fill s.st.
func queueAdmitReads(b *pgx.Batch, es []Entry, repeat bool, s *admitScratch) {
	st := &s.st
	b.Queue(admitSettingsSQL)
	b.Queue(admitParticipantsSQL, s.parts)
	b.Queue(admitIDsSQL, len(es)).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return err
			}
			s.ids = append(s.ids, id)
		}
		st.ids = s.ids
		return rows.Err()
	})
	b.Queue(admitChecksSQL, s.camps, s.parts, s.nonces).Query(func(rows pgx.Rows) error {
		r := &s.check
		for rows.Next() {
			r.f = admitFacts{}
			if err := rows.Scan(s.checkArgs...); err != nil {
				return err
			}
			i := int(r.i)
			if i < 1 || i > len(es) {
				return fmt.Errorf("admit: unexpected entry %d", i)
			}
			st.facts[i-1] = r.f
			if id := es[i-1].CampaignID; st.camps[id] == nil {
				if len(s.campRows) == cap(s.campRows) {
					return fmt.Errorf("admit: more campaigns than the batch's %d", len(s.cids))
				}
				s.campRows = append(s.campRows, r.camp)
				st.camps[id] = &s.campRows[len(s.campRows)-1]
			}
		}
		return rows.Err()
	})
	if repeat {
		b.Queue(admitRelatedSQL, s.cids).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var a, c int64
				if err := rows.Scan(&a, &c); err != nil {
					return err
				}
				st.related[[2]int64{a, c}], st.related[[2]int64{c, a}] = true, true
			}
			return rows.Err()
		})
	}
	b.Queue(admitLockSQL, s.qids).Query(func(rows pgx.Rows) error {
		r := &s.lock
		for rows.Next() {
			if err := rows.Scan(s.lockArgs...); err != nil {
				return err
			}
			if len(s.quotaRows) == cap(s.quotaRows) {
				return fmt.Errorf("admit: more quotas than the batch's %d", len(s.qids))
			}
			r.q.num, r.q.entries, r.q.completes, r.q.inProgress = int64(r.num), int64(r.entries), int64(r.completes), int64(r.inProgress)
			s.quotaRows = append(s.quotaRows, r.q)
			st.quotas[r.id] = &s.quotaRows[len(s.quotaRows)-1]
		}
		return rows.Err()
	})
}

// queueAdmitWrite queues the statement that stores w, the admitted entries, and sets each
// one's entry time and respondent id in out from the rows it returns.
func queueAdmitWrite(b *pgx.Batch, out []Admission, w *admitWrite, s *admitScratch) {
	b.Queue(admitWriteSQL, w.rBuyer, w.rPart, w.rID, w.qID, w.qN, w.tid, w.camp, w.buyer, w.pub, w.part, w.dev, w.quotas, w.rid, w.nonce, w.id).
		Query(func(rows pgx.Rows) error {
			n := 0
			for rows.Next() {
				// The tid is found in the index by its bytes: no string is made for it.
				raw := rows.RawValues()
				if len(raw) == 0 {
					return fmt.Errorf("admit: a stored session without its tid")
				}
				i, ok := w.index[string(raw[0])]
				if !ok {
					return fmt.Errorf("admit: stored an unknown tid %q", raw[0])
				}
				if err := rows.Scan(s.writtenArgs...); err != nil {
					return err
				}
				out[i].EnteredAt, out[i].RespondentID = s.at, s.rid
				n++
			}
			if err := rows.Err(); err != nil {
				return err
			}
			if n != len(w.tid) {
				return fmt.Errorf("admit: stored %d sessions of %d", n, len(w.tid))
			}
			return nil
		})
}
