package persistence

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/switchboard/switchboard/internal/fault"
)

// Refusal reasons of an entry the database did not admit.
const (
	RefusedStatus   = "status"   // the campaign is not active (or gone)
	RefusedQuota    = "quota"    // no open non-global quota matched, or a global one is full
	RefusedDaily    = "daily"    // max_daily_completes reached today (UTC)
	RefusedExcluded = "excluded" // campaign_exclusions, or the participant's partner is in excluded_supplier_ids
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
	// OfferNonce is the nonce of the offer token the entry came from (0: none). A second
	// entry of the same offer while its session is in progress resumes that session.
	OfferNonce int64
	// Chain, when set, makes the session a hop of a re-routing chain (docs/rules.md §10),
	// stored in the admission's transaction; nil (re-routing off) costs nothing.
	Chain *ChainLink
}

// Admission is the database's verdict on an Entry.
type Admission struct {
	Refused      string  // "" when admitted, else one of the Refused* reasons
	TID          string  // the session's transaction id: the Entry's, or the resumed session's
	Resumed      bool    // the offer's session in progress was found: nothing new was stored
	QuotaIDs     []int64 // the quotas the session counts toward: every matched quota of the campaign
	RespondentID string  // the participant's {RESPONDENT_ID} for the campaign's buyer
	EnteredAt    time.Time
	ChainID      int64 // the chain the admitted session joined or started (Entry.Chain), else 0
}

// The arbiter. A batch of entries (one entry on the naive path) is decided in one
// transaction of two round trips:
//
//  1. BEGIN; lock the batch's participants (admitParticipantsSQL: a transaction advisory
//     lock per participant, so that entries of one participant on any process are decided
//     one transaction after the other); read each entry's campaign (status, caps, today's
//     completes) and exclusion, reentry, relationship and respondent facts (admitChecksSQL)
//     and, when a participant appears twice in the batch, the campaigns' relationships; then
//     lock every quota row the batch matched, in id order (admitLockSQL: FOR UPDATE returns
//     the latest committed counts). Every batch on every process takes its locks in one
//     global order (participant keys ascending, then quota ids ascending), so batches never
//     deadlock. The reads come before the quota lock so that a hot quota's lock is held as
//     briefly as possible; each statement reads its own snapshot, taken after the
//     participant locks, so it sees every committed entry of those participants: reentry
//     and relationship rules hold across processes.
//  2. decideBatch applies the admission rules to the entries in arrival order, each against
//     the counts the entries before it left; then one statement (admitWriteSQL) inserts the
//     sessions and first respondents and moves the quota counts, and COMMIT (one WAL flush)
//     makes the whole batch durable before any respondent is redirected.
//
// The rules, per entry: the campaign is active; at least one matched non-global quota is
// open (completes + in_progress < num, or entries < num when click-balanced) and no matched
// global quota is full; today's completes are under max_daily_completes; no exclusion,
// reentry_interval or related-campaign entry (stored, or admitted earlier in the batch)
// forbids it. Before those rules, an entry whose offer (Entry.OfferNonce) already has a
// session in progress in the campaign, stored or admitted earlier in the batch, resumes it:
// the same session is answered and nothing is counted again (docs/rules.md §6). An admitted
// entry counts (entries and in_progress) on every quota it matched (docs/rules.md §5: a
// complete counts toward every quota that matched the respondent at entry), open or full,
// and its session's quota_ids are exactly those. Because the quota
// rows stay locked from the check to the commit, the quotas an entry was admitted through
// never over-fill; a full quota it also matched counts the respondent as well, so its
// completes can pass num_respondents, by respondents that another quota asked for.

// admitParticipantsSQL takes the transaction advisory lock of each distinct participant of
// the batch, in ascending key order (two ids may share a key: ordering by id could then
// take two keys in opposite orders in two batches). The keys are (730045103, hashint8(id)):
// admission's namespace beside quality's 730045101 and 730045102.
const admitParticipantsSQL = `SELECT pg_advisory_xact_lock(730045103, k)
	FROM (SELECT DISTINCT hashint8(p) AS k FROM unnest($1::bigint[]) AS p ORDER BY k) AS x`

// admitLockSQL locks the batch's matched quota rows in id order and returns their counts.
const admitLockSQL = `SELECT id, campaign_id, is_global, is_click_balanced, num_respondents, entries, completes, in_progress
	FROM campaign_quotas WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE`

// OfferSessionAge is how long ago an offer's session may have been admitted and still be
// resumed by following the offer's link again: longer than any offer token lives.
const OfferSessionAge = 2 * time.Hour

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

// resumeSQL reads the session in progress that an entry may resume, by id (admitChecksSQL's
// candidate): none when it has an outcome. Its id as a parameter prunes the partitions to
// the one that holds it when the plan starts.
const resumeSQL = `SELECT tid, respondent_id, entered_at, quota_ids FROM sessions WHERE id = $1 AND outcome IS NULL`

// offerSessionSQL finds the session in progress of an offer (participant, campaign, nonce)
// among the sessions of its campaign entered within OfferSessionAge: for an offer whose
// session is not the participant's latest in the campaign (admitChecksSQL's -1).
var offerSessionSQL = `SELECT s.tid, s.respondent_id, s.entered_at, s.quota_ids FROM sessions s
	WHERE s.participant_id = $1 AND s.campaign_id = $2 AND s.offer_nonce = $3 AND s.outcome IS NULL
	AND s.id >= ` + SessionFloorSQL(`now() - interval '`+strconv.Itoa(int(OfferSessionAge/time.Second))+` seconds'`) + ` LIMIT 1`

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
const admitWriteSQL = `WITH r AS (
	INSERT INTO respondents (buyer_id, participant_id, respondent_id)
	SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[])
	ON CONFLICT (buyer_id, participant_id) DO NOTHING
	RETURNING buyer_id, participant_id, respondent_id
), u AS (
	UPDATE campaign_quotas cq SET entries = cq.entries + d.n, in_progress = cq.in_progress + d.n
	FROM unnest($4::bigint[], $5::int[]) AS d(id, n) WHERE cq.id = d.id
	RETURNING cq.id
)
INSERT INTO sessions (id, tid, campaign_id, buyer_id, publisher_id, participant_id, device_id, quota_ids, respondent_id, offer_nonce)
SELECT e.id, e.tid, e.c, e.b, e.pub, e.p, e.dev, e.q::bigint[], CASE WHEN e.rid <> '' THEN e.rid
	ELSE COALESCE((SELECT r.respondent_id FROM r WHERE r.buyer_id = e.b AND r.participant_id = e.p), '') END, NULLIF(e.n, 0)
FROM unnest($6::text[], $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[], $11::text[], $12::text[], $13::text[], $14::bigint[], $15::bigint[])
	AS e(tid, c, b, pub, p, dev, q, rid, n, id)
RETURNING tid, entered_at, respondent_id`

// admitQuota is a locked quota row as the batch's decisions move it.
type admitQuota struct {
	campaignID                          int64
	global, clickBalanced               bool
	num, entries, completes, inProgress int64
}

func (q *admitQuota) full() bool {
	if q.clickBalanced {
		return q.entries >= q.num
	}
	return q.completes+max(q.inProgress, 0) >= q.num
}

type admitCampaign struct {
	buyerID      int64
	status       int16
	maxDaily     pgtype.Int4 // not Valid: no daily cap
	reentry      pgtype.Int4 // not Valid: no reentry ever; 0: no limit; n: not within n minutes
	dayCompletes int64
}

// admitFacts are what stored rows say about one entry.
type admitFacts struct {
	excluded, reentry, related bool
	respondent                 string
	resumeID                   int64     // the session the entry may resume (admitChecksSQL), 0: none
	resume                     Admission // the offer's session in progress (TID "" when none)
}

// admitState is what decideBatch needs: locked quotas, campaigns, per-entry facts and the
// relationships (loaded only when a participant appears twice in the batch).
type admitState struct {
	quotas  map[int64]*admitQuota
	camps   map[int64]*admitCampaign
	facts   []admitFacts
	related map[[2]int64]bool // {a, b}: a and b are related (both orders stored)
	ids     []int64           // session ids drawn for the batch, taken in order by admitted entries
}

// admitWrite is what a batch stores.
type admitWrite struct {
	rBuyer, rPart          []int64
	rID                    []string
	qID                    []int64
	qN                     []int32
	tid                    []string
	camp, buyer, pub, part []int64
	dev, quotas, rid       []string
	nonce, id              []int64
	index                  map[string]int // tid → entry
}

// reset empties w for a batch, keeping what its slices and index have grown to.
func (w *admitWrite) reset() {
	w.rBuyer, w.rPart, w.rID, w.qID, w.qN = w.rBuyer[:0], w.rPart[:0], w.rID[:0], w.qID[:0], w.qN[:0]
	w.tid, w.camp, w.buyer, w.pub, w.part = w.tid[:0], w.camp[:0], w.buyer[:0], w.pub[:0], w.part[:0]
	w.dev, w.quotas, w.rid, w.nonce, w.id = w.dev[:0], w.quotas[:0], w.rid[:0], w.nonce[:0], w.id[:0]
	if w.index == nil {
		w.index = map[string]int{}
	}
	clear(w.index)
}

// admitScratch is one batch's working set: the state its reads fill, the maps and slices
// its decisions use, the rows it scans into and what it writes. A batch takes one from
// admitScratches and gives it back when its verdicts are copied out, so that the entries'
// batches, thousands a second, leave the collector little to do (the maps and slices keep
// what they grew to; only what outlives the batch is allocated).
type admitScratch struct {
	es  []Entry     // the batch's entries, for callers that gather them (EntryWriter)
	out []Admission // the verdicts: valid until the scratch is given back
	st  admitState
	w   admitWrite

	// admitOn's reads.
	qids, cids, camps, parts, nonces []int64
	seen                             map[int64]bool
	quotaRows                        []admitQuota
	campRows                         []admitCampaign
	ids                              []int64
	check                            admitCheckRow
	checkArgs                        []any
	lock                             admitLockRow
	lockArgs                         []any
	at                               time.Time
	rid                              string
	writtenArgs                      []any

	// decideBatch's.
	deltas     map[int64]int32
	entered    []admitted // participant and campaign of each entry admitted so far
	pending    map[[2]int64]bool
	known      map[[2]int64]string
	matched    []*admitQuota
	matchedIDs []int64
}

// admitted is an entry admitted earlier in the batch: its participant, campaign, offer
// nonce and index.
type admitted struct {
	p, c, nonce int64
	i           int
}

// admitCheckRow is a row of admitChecksSQL.
type admitCheckRow struct {
	i    int32
	camp admitCampaign
	f    admitFacts
}

// admitLockRow is a row of admitLockSQL.
type admitLockRow struct {
	id                                  int64
	q                                   admitQuota
	num, entries, completes, inProgress int32
}

// admitScratches keeps batches' scratch for the next batches.
var admitScratches = sync.Pool{New: func() any { return newAdmitScratch() }}

func newAdmitScratch() *admitScratch {
	s := &admitScratch{seen: map[int64]bool{}, deltas: map[int64]int32{}, pending: map[[2]int64]bool{}, known: map[[2]int64]string{},
		st: admitState{quotas: map[int64]*admitQuota{}, camps: map[int64]*admitCampaign{}, related: map[[2]int64]bool{}}}
	s.w.reset()
	c, l := &s.check, &s.lock
	s.checkArgs = []any{&c.i, &c.camp.buyerID, &c.camp.status, &c.camp.maxDaily, &c.camp.reentry, &c.camp.dayCompletes,
		&c.f.excluded, &c.f.reentry, &c.f.related, &c.f.respondent, &c.f.resumeID}
	s.lockArgs = []any{&l.id, &l.q.campaignID, &l.q.global, &l.q.clickBalanced, &l.num, &l.entries, &l.completes, &l.inProgress}
	s.writtenArgs = []any{nil, &s.at, &s.rid} // tid is looked up from the row's raw value
	return s
}

// release gives s back for another batch; its verdicts are no longer valid.
func (s *admitScratch) release() {
	clear(s.es) // the entries' strings and quota ids are the requests'
	s.es = s.es[:0]
	admitScratches.Put(s)
}

// decideBatch decides es in order against st (which it moves) and returns the verdicts
// and what to store, both in s (valid until s is reused). An admitted entry takes the next
// of st.ids as its session's id, and its TID becomes the tid naming that id (SessionTID).
func decideBatch(es []Entry, st *admitState, s *admitScratch) ([]Admission, *admitWrite) {
	s.out = slices.Grow(s.out[:0], len(es))[:len(es)]
	out := s.out
	clear(out)
	w := &s.w
	w.reset()
	clear(s.deltas)
	clear(s.pending)
	clear(s.known)
	s.entered = s.entered[:0]
	// The quota ids each admitted entry counts toward outlive the batch (Admission.QuotaIDs):
	// one array holds the batch's.
	total := 0
	for i := range es {
		total += len(es[i].QuotaIDs)
	}
	quotaIDs := make([]int64, 0, total)
	for i := range es {
		e := &es[i]
		c := st.camps[e.CampaignID]
		if c == nil || c.status != 2 {
			out[i].Refused = RefusedStatus
			continue
		}
		s.matched, s.matchedIDs = s.matched[:0], s.matchedIDs[:0]
		for _, id := range e.QuotaIDs {
			if q := st.quotas[id]; q != nil && q.campaignID == e.CampaignID && !slices.Contains(s.matchedIDs, id) {
				s.matched, s.matchedIDs = append(s.matched, q), append(s.matchedIDs, id)
			}
		}
		open, globalFull := false, false
		for _, q := range s.matched {
			full := q.full()
			open = open || (!q.global && !full)
			globalFull = globalFull || (q.global && full)
		}
		f := st.facts[i]
		if f.resume.TID != "" {
			out[i] = f.resume
			out[i].Resumed = true
			continue
		}
		if e.OfferNonce != 0 {
			if k := slices.IndexFunc(s.entered, func(a admitted) bool {
				return a.p == e.ParticipantID && a.c == e.CampaignID && a.nonce == e.OfferNonce
			}); k >= 0 {
				first := s.entered[k].i
				out[i] = Admission{TID: es[first].TID, Resumed: true, QuotaIDs: out[first].QuotaIDs}
				continue // its respondent and time are the first's, once stored
			}
		}
		switch {
		case !open || globalFull:
			out[i].Refused = RefusedQuota
		case c.maxDaily.Valid && c.dayCompletes >= int64(c.maxDaily.Int32):
			out[i].Refused = RefusedDaily
		case f.excluded:
			out[i].Refused = RefusedExcluded
		case f.reentry || ((!c.reentry.Valid || c.reentry.Int32 > 0) && slices.ContainsFunc(s.entered, func(a admitted) bool {
			return a.p == e.ParticipantID && a.c == e.CampaignID
		})):
			out[i].Refused = RefusedReentry
		case f.related || slices.ContainsFunc(s.entered, func(a admitted) bool {
			return a.p == e.ParticipantID && st.related[[2]int64{e.CampaignID, a.c}]
		}):
			out[i].Refused = RefusedRelated
		}
		if out[i].Refused != "" {
			continue
		}
		// Admitted: count it on every quota it matched, against the entries after it.
		n := len(quotaIDs)
		quotaIDs = append(quotaIDs, s.matchedIDs...)
		counted := quotaIDs[n:len(quotaIDs):len(quotaIDs)]
		for _, id := range counted {
			q := st.quotas[id]
			q.entries++
			q.inProgress++
			s.deltas[id]++
		}
		slices.Sort(counted)
		var id int64
		if len(st.ids) > 0 {
			id, st.ids = st.ids[0], st.ids[1:]
			e.TID = SessionTID(e.TID, id)
		}
		out[i].QuotaIDs, out[i].TID = counted, e.TID
		s.entered = append(s.entered, admitted{p: e.ParticipantID, c: e.CampaignID, nonce: e.OfferNonce, i: i})
		key := [2]int64{c.buyerID, e.ParticipantID}
		rid := f.respondent
		if rid == "" {
			rid = s.known[key]
		}
		if rid == "" && !s.pending[key] {
			s.pending[key] = true
			w.rBuyer, w.rPart, w.rID = append(w.rBuyer, c.buyerID), append(w.rPart, e.ParticipantID), append(w.rID, e.RespondentID)
		}
		if rid != "" {
			s.known[key] = rid
		}
		w.index[e.TID] = i
		w.tid, w.camp, w.buyer, w.pub, w.part = append(w.tid, e.TID), append(w.camp, e.CampaignID), append(w.buyer, c.buyerID),
			append(w.pub, e.PublisherID), append(w.part, e.ParticipantID)
		w.dev, w.quotas, w.rid = append(w.dev, e.DeviceID), append(w.quotas, int64sLiteral(counted)), append(w.rid, rid)
		w.nonce, w.id = append(w.nonce, e.OfferNonce), append(w.id, id)
	}
	for id, n := range s.deltas {
		w.qID, w.qN = append(w.qID, id), append(w.qN, n)
	}
	return out, w
}

// int64sLiteral is ids as a PostgreSQL array literal.
func int64sLiteral(ids []int64) string {
	b := make([]byte, 0, 2+len(ids)*8)
	b = append(b, '{')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(append(b, '}'))
}

// admitBatch decides es in order in one transaction (see "The arbiter" above), with s's
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
	s.qids, s.cids, s.camps, s.parts, s.nonces = s.qids[:0], s.cids[:0], s.camps[:0], s.parts[:0], s.nonces[:0]
	clear(s.seen)
	repeat := false
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
	b := &pgx.Batch{}
	if own {
		b.Queue("BEGIN")
	}
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
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
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

// readResumes reads, for each entry whose checks found a session it may resume, that
// session if it is still in progress: an offer's link followed again, rare, so one lookup
// each rather than a probe of every partition of sessions in every batch.
func readResumes(ctx context.Context, conn *pgx.Conn, es []Entry, facts []admitFacts) error {
	for i := range facts {
		f := &facts[i]
		if f.resumeID == 0 {
			continue
		}
		a, ok, err := offerSession(ctx, conn, es[i].ParticipantID, es[i].CampaignID, es[i].OfferNonce, f.resumeID)
		if err != nil {
			return err
		}
		if ok {
			f.resume = a
		}
	}
	return nil
}

// offerSession reads the session in progress of the offer (participant, campaign, nonce)
// where candidate says it is: the session of that id, or (-1) among the campaign's recent
// sessions.
func offerSession(ctx context.Context, q queryRower, participantID, campaignID, nonce, candidate int64) (Admission, bool, error) {
	var row pgx.Row
	if candidate > 0 {
		row = q.QueryRow(ctx, resumeSQL, candidate)
	} else {
		row = q.QueryRow(ctx, offerSessionSQL, participantID, campaignID, nonce)
	}
	a := Admission{Resumed: true}
	var at pgtype.Timestamptz
	err := row.Scan(&a.TID, &a.RespondentID, &at, &a.QuotaIDs)
	if errors.Is(err, pgx.ErrNoRows) {
		return Admission{}, false, nil
	}
	if err != nil {
		return Admission{}, false, err
	}
	a.EnteredAt = at.Time
	return a, true, nil
}

// offerCandidateSQL says where the session an offer may resume is, as admitChecksSQL does
// for an entry: no row or 0 nowhere, a session id, or -1 among the campaign's recent
// sessions.
var offerCandidateSQL = `SELECT CASE WHEN offer_nonce = $3 THEN session_id ELSE -1 END FROM participations
	WHERE campaign_id = $2 AND participant_id = $1
	AND entered_at > now() - interval '` + strconv.Itoa(int(OfferSessionAge/time.Second)) + ` seconds'`

// OfferSession returns the session in progress that an entry of the offer with nonce
// admitted for participant into campaign, if any: following an offer link again resumes it
// (docs/rules.md §6). Nonce 0 finds none.
func (db *SessionStore) OfferSession(ctx context.Context, participantID, campaignID, nonce int64) (Admission, bool, error) {
	if nonce == 0 {
		return Admission{}, false, nil
	}
	var candidate int64
	err := db.Pool.QueryRow(ctx, offerCandidateSQL, participantID, campaignID, nonce).Scan(&candidate)
	if errors.Is(err, pgx.ErrNoRows) {
		return Admission{}, false, nil
	}
	if err != nil {
		return Admission{}, false, classify(err)
	}
	a, ok, err := offerSession(ctx, db.Pool, participantID, campaignID, nonce, candidate)
	return a, ok, classify(err)
}

// Admit decides one entry in its own transaction: the naive path, one commit per entry.
// Deadlocks and serialization failures are retried.
func (db *SessionStore) Admit(ctx context.Context, e Entry) (Admission, error) {
	var a Admission
	err := retry(ctx, func() error {
		s := admitScratches.Get().(*admitScratch)
		defer s.release()
		err := db.admitBatch(ctx, []Entry{e}, s)
		if err == nil {
			a = s.out[0]
		}
		return err
	})
	if err != nil {
		return Admission{}, classify(err)
	}
	return db.fillRespondent(ctx, a)
}

// fillRespondent covers the one race of admitBatch: a concurrent first entry of the same
// participant for the same buyer inserted the respondent after this statement's snapshot.
func (db *SessionStore) fillRespondent(ctx context.Context, a Admission) (Admission, error) {
	if a.Refused != "" || a.RespondentID != "" {
		return a, nil
	}
	rid, err := db.storedRespondent(ctx, a.TID)
	a.RespondentID = rid
	return a, err
}

// storedRespondent sets the respondent id of the session tid from the respondents table
// and returns it. (Apart from fillRespondent so that an admission that needs none, nearly
// every one, does not put its Admission on the heap for this scan.)
func (db *SessionStore) storedRespondent(ctx context.Context, tid string) (string, error) {
	lo, hi := tidRange(tid)
	var rid string
	err := db.Pool.QueryRow(ctx, `WITH r AS (SELECT r.respondent_id FROM respondents r JOIN sessions s
			ON s.buyer_id = r.buyer_id AND s.participant_id = r.participant_id WHERE s.tid = $1 AND s.id >= $2 AND s.id < $3)
		UPDATE sessions SET respondent_id = (SELECT respondent_id FROM r) WHERE tid = $1 AND id >= $2 AND id < $3
		RETURNING respondent_id`, tid, lo, hi).Scan(&rid)
	return rid, classify(err)
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
// batch that admitBatch decides in one transaction with one COMMIT (one WAL flush). Each
// entry is still decided by the same rules against the counts left by the entries before
// it, so batching changes durability cost, never the verdicts.
type EntryWriter struct {
	db *SessionStore
	gc groupCommit[*entryJob]
}

type entryJob struct {
	e    Entry
	a    Admission
	err  error
	done jobDone
}

// entryJobs keeps entry jobs for the next entries.
var entryJobs = sync.Pool{New: func() any { return &entryJob{done: newJobDone()} }}

// release gives j back to entryJobs, holding nothing of its entry.
func (j *entryJob) release() {
	j.e, j.a, j.err = Entry{}, Admission{}, nil
	entryJobs.Put(j)
}

// EntryWriterConfig tunes an EntryWriter.
type EntryWriterConfig struct {
	// Workers is how many batches are in flight at once (default 1). On a small machine
	// one worker's larger batches cost PostgreSQL less per entry than several smaller ones
	// in parallel (docs/performance.md); more cores may want more. Entries of one campaign
	// always go to the same worker (see groupCommit).
	Workers  int
	MaxBatch int // entries per batch at most (default 128)
	// Cycle is the least time between the starts of a worker's batches of fewer than eight
	// jobs (default 0: a batch starts as soon as the one before it commits). Each
	// transaction costs PostgreSQL about as much as several entries, whatever its size: at
	// moderate rates, when a commit takes less than the cycle, waiting out the rest of it
	// for company costs the entries a few milliseconds and PostgreSQL much less per entry
	// (docs/performance.md, "A commit cycle"); at high rates commits take longer than the
	// cycle, or batches of eight queue within it, and nothing waits.
	Cycle time.Duration
}

// NewEntryWriter starts the writer's workers; Close stops them.
func (db *SessionStore) NewEntryWriter(cfg EntryWriterConfig) *EntryWriter {
	w := &EntryWriter{db: db}
	w.gc.start(cfg, w.run)
	return w
}

// Close stops the workers once the queued entries are written.
func (w *EntryWriter) Close() { w.gc.close() }

// Admit queues e and waits for its verdict, durably committed when admitted.
func (w *EntryWriter) Admit(ctx context.Context, e Entry) (Admission, error) {
	j := entryJobs.Get().(*entryJob)
	j.e = e
	if err := w.gc.offer(uint64(e.CampaignID), j, ctx.Done(), ctx.Err); err != nil {
		j.release()
		return Admission{}, err
	}
	// The job is in the queue: its fate is decided by a batch; wait for it even if ctx ends,
	// so that a committed admission is never reported as a failure.
	j.done.wait()
	a, err := j.a, j.err
	j.release()
	if err != nil {
		return Admission{}, err
	}
	return w.db.fillRespondent(context.WithoutCancel(ctx), a)
}

// run commits one batch, retrying it whole after a deadlock or serialization failure; any
// other failure is retried entry by entry so that one bad entry cannot fail its neighbours.
func (w *EntryWriter) run(batch []*entryJob) {
	// Entries are decided in arrival order; admitBatch locks quota rows in id order, so
	// concurrent batches (on any process) do not deadlock each other.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := retry(ctx, func() error { return w.runOnce(ctx, batch) })
	if err == nil {
		for _, j := range batch {
			j.done.signal()
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
		j.done.signal()
	}
}

func (w *EntryWriter) runOnce(ctx context.Context, batch []*entryJob) error {
	s := admitScratches.Get().(*admitScratch)
	defer s.release()
	for _, j := range batch {
		s.es = append(s.es, j.e)
	}
	// One transaction: all admitted or none.
	if err := w.db.admitBatch(ctx, s.es, s); err != nil {
		return err
	}
	for i, j := range batch {
		j.a = s.out[i]
	}
	return nil
}

func isUnavailable(err error) bool {
	return fault.KindOf(classify(err)) == fault.KindUnavailable
}
