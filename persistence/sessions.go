package persistence

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/switchboard/switchboard/internal/fault"
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
	QuotaIDs     []int64 // the quotas the session counts toward: every matched quota of the campaign
	RespondentID string  // the participant's {RESPONDENT_ID} for the campaign's buyer
	EnteredAt    time.Time
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
// forbids it. An admitted entry counts (entries and in_progress) on every quota it matched
// (CONTRACT §5: a complete counts toward every quota that matched the respondent at
// entry), open or full, and its session's quota_ids are exactly those. Because the quota
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

// admitChecksSQL reads, per entry (ordinality i), its campaign (buyer, status, caps,
// today's UTC completes) and what stored rows say: excluded, entered within
// reentry_interval, entered a related campaign, and the participant's respondent id for the
// campaign's buyer ("" when none yet). An entry whose campaign does not exist returns no row.
// A relationship is looked up from each side by its own index (an OR of both columns made
// every entry read the whole relationships table).
const admitChecksSQL = `SELECT e.i::int, c.buyer_id, c.status, c.max_daily_completes, c.reentry_interval,
	COALESCE((SELECT d.completes FROM campaign_daily_counts d WHERE d.campaign_id = c.id AND d.day = (now() AT TIME ZONE 'UTC')::date), 0),
	EXISTS (SELECT 1 FROM campaign_exclusions x WHERE x.campaign_id = c.id AND x.participant_id = e.p),
	c.reentry_interval IS DISTINCT FROM 0 AND EXISTS (SELECT 1 FROM sessions s
		WHERE s.participant_id = e.p AND s.campaign_id = c.id AND NOT s.is_test
		AND (c.reentry_interval IS NULL OR s.entered_at > now() - make_interval(mins => c.reentry_interval))),
	EXISTS (SELECT 1 FROM campaign_relationships r WHERE r.campaign_id = c.id
		AND EXISTS (SELECT 1 FROM sessions s WHERE s.participant_id = e.p AND NOT s.is_test AND s.campaign_id = r.related_campaign_id))
	OR EXISTS (SELECT 1 FROM campaign_relationships r WHERE r.related_campaign_id = c.id
		AND EXISTS (SELECT 1 FROM sessions s WHERE s.participant_id = e.p AND NOT s.is_test AND s.campaign_id = r.campaign_id)),
	COALESCE((SELECT x.respondent_id FROM respondents x WHERE x.buyer_id = c.buyer_id AND x.participant_id = e.p), '')
	FROM unnest($1::bigint[], $2::bigint[]) WITH ORDINALITY AS e(c, p, i) JOIN campaigns c ON c.id = e.c`

// admitRelatedSQL lists the relationships of the batch's campaigns, for entries of one
// participant into related campaigns within the same batch.
const admitRelatedSQL = `SELECT campaign_id, related_campaign_id FROM campaign_relationships
	WHERE campaign_id = ANY($1::bigint[]) OR related_campaign_id = ANY($1::bigint[])`

// admitWriteSQL stores the admitted entries of a batch: first respondent ids ($1–$3), the
// quota counts ($4 quota ids, $5 entries each; the rows are locked already) and the sessions
// ($6–$13; quota_ids as array literals, respondent "" = the one inserted here).
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
INSERT INTO sessions (tid, campaign_id, buyer_id, publisher_id, participant_id, device_id, quota_ids, respondent_id)
SELECT e.tid, e.c, e.b, e.pub, e.p, e.dev, e.q::bigint[], CASE WHEN e.rid <> '' THEN e.rid
	ELSE COALESCE((SELECT r.respondent_id FROM r WHERE r.buyer_id = e.b AND r.participant_id = e.p), '') END
FROM unnest($6::text[], $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[], $11::text[], $12::text[], $13::text[])
	AS e(tid, c, b, pub, p, dev, q, rid)
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
	maxDaily     *int32
	reentry      *int32 // nil: no reentry ever; 0: no limit; n: not within n minutes
	dayCompletes int64
}

// admitFacts are what stored rows say about one entry.
type admitFacts struct {
	excluded, reentry, related bool
	respondent                 string
}

// admitState is what decideBatch needs: locked quotas, campaigns, per-entry facts and the
// relationships (loaded only when a participant appears twice in the batch).
type admitState struct {
	quotas  map[int64]*admitQuota
	camps   map[int64]*admitCampaign
	facts   []admitFacts
	related map[[2]int64]bool // {a, b}: a and b are related (both orders stored)
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
	index                  map[string]int // tid → entry
}

// decideBatch decides es in order against st (which it moves) and returns the verdicts
// and what to store.
func decideBatch(es []Entry, st *admitState) ([]Admission, *admitWrite) {
	out := make([]Admission, len(es))
	w := &admitWrite{index: map[string]int{}}
	deltas := map[int64]int32{}
	type pc struct{ p, c int64 }
	entered := map[pc]bool{}
	enteredBy := map[int64][]int64{}
	pending := map[[2]int64]bool{} // {buyer, participant}: respondent inserted by this batch
	known := map[[2]int64]string{}
	var matched []*admitQuota
	var matchedIDs []int64
	for i := range es {
		e := &es[i]
		c := st.camps[e.CampaignID]
		if c == nil || c.status != 2 {
			out[i].Refused = RefusedStatus
			continue
		}
		matched, matchedIDs = matched[:0], matchedIDs[:0]
		for _, id := range e.QuotaIDs {
			if q := st.quotas[id]; q != nil && q.campaignID == e.CampaignID && !slices.Contains(matchedIDs, id) {
				matched, matchedIDs = append(matched, q), append(matchedIDs, id)
			}
		}
		open, globalFull := false, false
		for _, q := range matched {
			full := q.full()
			open = open || (!q.global && !full)
			globalFull = globalFull || (q.global && full)
		}
		f := st.facts[i]
		switch {
		case !open || globalFull:
			out[i].Refused = RefusedQuota
		case c.maxDaily != nil && c.dayCompletes >= int64(*c.maxDaily):
			out[i].Refused = RefusedDaily
		case f.excluded:
			out[i].Refused = RefusedExcluded
		case f.reentry || (entered[pc{e.ParticipantID, e.CampaignID}] && (c.reentry == nil || *c.reentry > 0)):
			out[i].Refused = RefusedReentry
		case f.related || slices.ContainsFunc(enteredBy[e.ParticipantID], func(other int64) bool { return st.related[[2]int64{e.CampaignID, other}] }):
			out[i].Refused = RefusedRelated
		}
		if out[i].Refused != "" {
			continue
		}
		// Admitted: count it on every quota it matched, against the entries after it.
		counted := slices.Clone(matchedIDs)
		for _, id := range counted {
			q := st.quotas[id]
			q.entries++
			q.inProgress++
			deltas[id]++
		}
		slices.Sort(counted)
		out[i].QuotaIDs = counted
		entered[pc{e.ParticipantID, e.CampaignID}] = true
		enteredBy[e.ParticipantID] = append(enteredBy[e.ParticipantID], e.CampaignID)
		key := [2]int64{c.buyerID, e.ParticipantID}
		rid := f.respondent
		if rid == "" {
			rid = known[key]
		}
		if rid == "" && !pending[key] {
			pending[key] = true
			w.rBuyer, w.rPart, w.rID = append(w.rBuyer, c.buyerID), append(w.rPart, e.ParticipantID), append(w.rID, e.RespondentID)
		}
		if rid != "" {
			known[key] = rid
		}
		w.index[e.TID] = i
		w.tid, w.camp, w.buyer, w.pub, w.part = append(w.tid, e.TID), append(w.camp, e.CampaignID), append(w.buyer, c.buyerID),
			append(w.pub, e.PublisherID), append(w.part, e.ParticipantID)
		w.dev, w.quotas, w.rid = append(w.dev, e.DeviceID), append(w.quotas, int64sLiteral(counted)), append(w.rid, rid)
	}
	for id, n := range deltas {
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

// admitBatch decides es in order in one transaction (see "The arbiter" above).
func (db *DB) admitBatch(ctx context.Context, es []Entry) ([]Admission, error) {
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	out, err := admitOn(ctx, conn.Conn(), es)
	if err != nil {
		rollbackOpen(ctx, conn.Conn())
	}
	return out, err
}

func admitOn(ctx context.Context, conn *pgx.Conn, es []Entry) ([]Admission, error) {
	var qids, cids, camps, parts []int64
	seen := make(map[int64]bool, len(es))
	repeat := false
	for i := range es {
		qids = append(qids, es[i].QuotaIDs...)
		cids = append(cids, es[i].CampaignID)
		camps, parts = append(camps, es[i].CampaignID), append(parts, es[i].ParticipantID)
		repeat = repeat || seen[es[i].ParticipantID]
		seen[es[i].ParticipantID] = true
	}
	slices.Sort(qids)
	qids = slices.Compact(qids)
	slices.Sort(cids)
	cids = slices.Compact(cids)

	st := &admitState{quotas: make(map[int64]*admitQuota, len(qids)), camps: make(map[int64]*admitCampaign, len(cids)),
		facts: make([]admitFacts, len(es))}
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	// Generic plans: these statements run with arrays of any length, and re-planning them
	// for every batch would cost more than running them.
	b.Queue("SET LOCAL plan_cache_mode = force_generic_plan")
	b.Queue(admitParticipantsSQL, parts)
	b.Queue(admitChecksSQL, camps, parts).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var i int32
			var c admitCampaign
			var f admitFacts
			if err := rows.Scan(&i, &c.buyerID, &c.status, &c.maxDaily, &c.reentry, &c.dayCompletes,
				&f.excluded, &f.reentry, &f.related, &f.respondent); err != nil {
				return err
			}
			if i < 1 || int(i) > len(es) {
				return fmt.Errorf("admit: unexpected entry %d", i)
			}
			st.facts[i-1] = f
			if st.camps[es[i-1].CampaignID] == nil {
				st.camps[es[i-1].CampaignID] = &c
			}
		}
		return rows.Err()
	})
	if repeat {
		st.related = map[[2]int64]bool{}
		b.Queue(admitRelatedSQL, cids).Query(func(rows pgx.Rows) error {
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
	b.Queue(admitLockSQL, qids).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id int64
			var q admitQuota
			var num, entries, completes, inProgress int32
			if err := rows.Scan(&id, &q.campaignID, &q.global, &q.clickBalanced, &num, &entries, &completes, &inProgress); err != nil {
				return err
			}
			q.num, q.entries, q.completes, q.inProgress = int64(num), int64(entries), int64(completes), int64(inProgress)
			st.quotas[id] = &q
		}
		return rows.Err()
	})
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}

	out, w := decideBatch(es, st)
	now := time.Now()
	if len(w.tid) == 0 {
		// Nothing admitted: nothing to make durable.
		_, err := conn.Exec(ctx, "ROLLBACK")
		for i := range out {
			out[i].EnteredAt = now
		}
		return out, err
	}
	b = &pgx.Batch{}
	b.Queue(admitWriteSQL, w.rBuyer, w.rPart, w.rID, w.qID, w.qN, w.tid, w.camp, w.buyer, w.pub, w.part, w.dev, w.quotas, w.rid).
		Query(func(rows pgx.Rows) error {
			n := 0
			for rows.Next() {
				var tid, rid string
				var at time.Time
				if err := rows.Scan(&tid, &at, &rid); err != nil {
					return err
				}
				i, ok := w.index[tid]
				if !ok {
					return fmt.Errorf("admit: stored an unknown tid %q", tid)
				}
				out[i].EnteredAt, out[i].RespondentID = at, rid
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
	b.Queue("COMMIT")
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}
	for i := range out {
		if out[i].Refused != "" {
			out[i].EnteredAt = now
		}
	}
	return out, nil
}

// Admit decides one entry in its own transaction: the naive path, one commit per entry.
// Deadlocks and serialization failures are retried.
func (db *DB) Admit(ctx context.Context, e Entry) (Admission, error) {
	var a Admission
	err := retry(ctx, func() error {
		out, err := db.admitBatch(ctx, []Entry{e})
		if err == nil {
			a = out[0]
		}
		return err
	})
	if err != nil {
		return Admission{}, classify(err)
	}
	return db.fillRespondent(ctx, &e, a)
}

// fillRespondent covers the one race of admitBatch: a concurrent first entry of the same
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
// batch that admitBatch decides in one transaction with one COMMIT (one WAL flush). Each
// entry is still decided by the same rules against the counts left by the entries before
// it, so batching changes durability cost, never the verdicts.
type EntryWriter struct {
	db *DB
	gc groupCommit[*entryJob]
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
	// Workers is how many batches are in flight at once (default 1). On a small machine
	// one worker's larger batches cost PostgreSQL less per entry than several smaller ones
	// in parallel (docs/performance.md); more cores may want more. Entries of one campaign
	// always go to the same worker (see groupCommit).
	Workers  int
	MaxBatch int           // entries per batch at most (default 128)
	MaxWait  time.Duration // how long a batch waits for company (default 0: none, batches form while others commit)
}

// NewEntryWriter starts the writer's workers; Close stops them.
func (db *DB) NewEntryWriter(cfg EntryWriterConfig) *EntryWriter {
	w := &EntryWriter{db: db}
	w.gc.start(cfg, w.run)
	return w
}

// Close stops the workers once the queued entries are written.
func (w *EntryWriter) Close() { w.gc.close() }

// Admit queues e and waits for its verdict, durably committed when admitted.
func (w *EntryWriter) Admit(ctx context.Context, e Entry) (Admission, error) {
	j := &entryJob{ctx: ctx, e: e, done: make(chan struct{})}
	if err := w.gc.offer(uint64(e.CampaignID), j, ctx.Done(), ctx.Err); err != nil {
		return Admission{}, err
	}
	// The job is in the queue: its fate is decided by a batch; wait for it even if ctx ends,
	// so that a committed admission is never reported as a failure.
	<-j.done
	if j.err != nil {
		return Admission{}, j.err
	}
	return w.db.fillRespondent(context.WithoutCancel(ctx), &j.e, j.a)
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
	es := make([]Entry, len(batch))
	for i, j := range batch {
		es[i] = j.e
	}
	// One transaction: all admitted or none.
	out, err := w.db.admitBatch(ctx, es)
	if err != nil {
		return err
	}
	for i, j := range batch {
		j.a = out[i]
	}
	return nil
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
	CampaignStatus int // the campaign's status when the session was read
}

// Closed reports whether the session's campaign takes no more outcomes: once reconciled
// (6) its accepted completes are final (CONTRACT §8), and archived (4) campaigns are done.
func (s Session) Closed() bool {
	return s.CampaignStatus == StatusReconciled || s.CampaignStatus == StatusArchived
}

const sessionColumns = `s.id, s.tid, s.campaign_id, s.buyer_id, COALESCE(s.publisher_id, 0), COALESCE(s.participant_id, 0),
	COALESCE((SELECT p.user_identifier FROM participants p WHERE p.id = s.participant_id), ''),
	s.quota_ids, s.is_test, s.entered_at, COALESCE(s.outcome, ''), COALESCE(s.outcome_at, 'epoch'::timestamptz),
	s.released_at IS NOT NULL, s.rejected, COALESCE((s.payout_usd * 10000)::bigint, 0), COALESCE(s.reward, 0),
	c.cpi_cents, c.length_of_interview, c.status`

// The participant is a scalar subquery rather than a join so that every plan (generic ones
// for arrays of tids included) looks it up by key instead of hashing the whole table.
const sessionFrom = ` FROM sessions s JOIN campaigns c ON c.id = s.campaign_id`

func scanSession(row pgx.Row) (Session, error) {
	var s Session
	var cpi int32
	var status int16
	err := row.Scan(&s.ID, &s.TID, &s.CampaignID, &s.BuyerID, &s.PublisherID, &s.ParticipantID, &s.UserIdentifier,
		&s.QuotaIDs, &s.IsTest, &s.EnteredAt, &s.Outcome, &s.OutcomeAt, &s.Released, &s.Rejected, &s.PayoutUSD, &s.Reward,
		&cpi, &s.LOI, &status)
	s.CPICents, s.CampaignStatus = int64(cpi), int(status)
	return s, err
}

// SessionByTID loads a session; an unknown tid is fault.NotFound.
func (db *DB) SessionByTID(ctx context.Context, tid string) (Session, error) {
	s, err := scanSession(db.Pool.QueryRow(ctx, `SELECT `+sessionColumns+sessionFrom+` WHERE s.tid = $1`, tid))
	return s, classify(err)
}

// SessionReader looks sessions up by transaction id for callbacks, coalescing concurrent
// lookups into one query (one round trip and one statement for a whole batch instead of one
// each): at thousands of callbacks a second, the per-statement cost is what PostgreSQL
// spends most on.
type SessionReader struct {
	db *DB
	gc groupCommit[*readJob]
}

type readJob struct {
	tid  string
	s    Session
	err  error
	done chan struct{}
}

// NewSessionReader starts the reader's workers (lookups in flight at once); Close stops them.
func (db *DB) NewSessionReader(workers int) *SessionReader {
	r := &SessionReader{db: db}
	r.gc.start(EntryWriterConfig{Workers: workers, MaxBatch: 256}, r.run)
	return r
}

// Close stops the workers once the queued lookups are answered.
func (r *SessionReader) Close() { r.gc.close() }

// ByTID is SessionByTID through the coalescing reader.
func (r *SessionReader) ByTID(ctx context.Context, tid string) (Session, error) {
	j := &readJob{tid: tid, done: make(chan struct{})}
	if err := r.gc.offer(0, j, ctx.Done(), ctx.Err); err != nil {
		return Session{}, err
	}
	<-j.done
	return j.s, j.err
}

func (r *SessionReader) run(batch []*readJob) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tids := make([]string, len(batch))
	for i, j := range batch {
		tids[i] = j.tid
	}
	found := make(map[string]Session, len(batch))
	err := func() error {
		rows, err := r.db.Pool.Query(ctx, `SELECT `+sessionColumns+sessionFrom+` WHERE s.tid = ANY($1)`, tids)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			s, err := scanSession(rows)
			if err != nil {
				return err
			}
			found[s.TID] = s
		}
		return rows.Err()
	}()
	for _, j := range batch {
		if s, ok := found[j.tid]; ok {
			j.s = s
		} else if err != nil {
			j.err = classify(err)
		} else {
			j.err = fault.NotFound("transaction not found")
		}
		close(j.done)
	}
}

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
	// its in_progress places (the sweeper had not released it).
	Decided, Held bool
	// Stored is the session as stored, when an earlier callback had decided it.
	Stored Session
	// Postback is the outbox row stored with a decided outcome and leased to the caller
	// (OutcomeRecord.PostbackLease); ID 0: none.
	Postback ClaimedPostback
}

// recordOutcomesSQL records the first outcome of each listed session ($1 session ids,
// distinct, in id order, with $2–$5 the outcome, time, payout and reward and $6–$9 the
// postback's tid, publisher, URL and lease in microseconds) in one statement, and moves the
// counts: a session that had no outcome leaves in_progress (unless the sweeper released it
// already), a complete counts toward every quota of its quota_ids, the day's counts move and
// the postback is enqueued, leased to the caller when its lease is positive (its first
// attempt), else due at once with the workers woken at commit. Quota rows are locked in id
// order so that concurrent batches and entries never deadlock. It returns one row per session
// it decided: id, whether it still held its places, and its postback's outbox id (0: none)
// and creation time; a session that had an outcome already, or whose campaign is closed
// (reconciled or archived, Session.Closed: a reconcile that committed after the caller read
// the session), returns no row.
const recordOutcomesSQL = `WITH j AS (
	SELECT * FROM unnest($1::bigint[], $2::text[], $3::timestamptz[], $4::bigint[], $5::bigint[], $6::text[], $7::bigint[], $8::text[], $9::bigint[])
		AS j(id, outcome, at, payout, reward, pb_tid, pb_pub, pb_url, pb_lease)
), s AS (
	UPDATE sessions s SET outcome = j.outcome, outcome_at = j.at, payout_usd = j.payout::numeric / 10000, reward = j.reward
	FROM j WHERE s.id = j.id AND s.outcome IS NULL
	AND NOT EXISTS (SELECT 1 FROM campaigns c WHERE c.id = s.campaign_id AND c.status IN (4, 6))
	RETURNING s.id, s.campaign_id, s.quota_ids, s.released_at IS NULL AS held, s.is_test, j.outcome, j.at, j.pb_tid, j.pb_pub, j.pb_url, j.pb_lease
), x AS (
	SELECT qid, count(*) FILTER (WHERE s.held) AS held, count(*) FILTER (WHERE s.outcome = 'complete') AS completes
	FROM s, unnest(s.quota_ids) AS qid WHERE NOT s.is_test GROUP BY qid
), l AS (
	SELECT cq.id FROM campaign_quotas cq WHERE cq.id IN (SELECT qid FROM x) ORDER BY cq.id FOR UPDATE
), q AS (
	UPDATE campaign_quotas cq SET in_progress = cq.in_progress - x.held, completes = cq.completes + x.completes
	FROM x, l WHERE cq.id = x.qid AND l.id = x.qid
	RETURNING cq.id
), d AS (
	INSERT INTO campaign_daily_counts AS d (campaign_id, day, outcomes, completes)
	SELECT s.campaign_id, (s.at AT TIME ZONE 'UTC')::date, count(*), count(*) FILTER (WHERE s.outcome = 'complete')
	FROM s WHERE NOT s.is_test GROUP BY 1, 2 ORDER BY 1, 2
	ON CONFLICT (campaign_id, day) DO UPDATE SET outcomes = d.outcomes + EXCLUDED.outcomes, completes = d.completes + EXCLUDED.completes
	RETURNING 1
), p AS (
	INSERT INTO postback_outbox (tid, kind, publisher_id, url, attempts, next_attempt_at)
	SELECT s.pb_tid, 'outcome', s.pb_pub, s.pb_url, CASE WHEN s.pb_lease > 0 THEN 1 ELSE 0 END,
		now() + GREATEST(s.pb_lease, 0) * interval '1 microsecond'
	FROM s WHERE s.pb_url <> '' ORDER BY s.id
	ON CONFLICT (tid, kind) DO NOTHING
	RETURNING id, tid, created_at, attempts
)
SELECT s.id, s.held, COALESCE(p.id, 0), COALESCE(p.created_at, now()), (SELECT count(*) FROM q) + (SELECT count(*) FROM d),
	(SELECT count(pg_notify($10, '')) FROM (SELECT 1 FROM p WHERE p.attempts = 0 LIMIT 1) n)
FROM s LEFT JOIN p ON p.tid = s.pb_tid`

// outcomeItem is one callback of a batch; res is the verdict.
type outcomeItem struct {
	s   *Session
	o   *OutcomeRecord
	res OutcomeResult
}

// recordOutcomes runs recordOutcomesSQL for items (distinct sessions) in one transaction:
// one statement, one COMMIT, one round trip.
func (db *DB) recordOutcomes(ctx context.Context, items []*outcomeItem) error {
	slices.SortFunc(items, func(a, b *outcomeItem) int { return cmp.Compare(a.s.ID, b.s.ID) })
	n := len(items)
	ids, outcomes, ats, payouts, rewards := make([]int64, n), make([]string, n), make([]time.Time, n), make([]int64, n), make([]int64, n)
	pbTIDs, pbPubs, pbURLs, pbLeases := make([]string, n), make([]int64, n), make([]string, n), make([]int64, n)
	byID := make(map[int64]*outcomeItem, n)
	for i, it := range items {
		it.res = OutcomeResult{}
		ids[i], outcomes[i], ats[i], payouts[i], rewards[i] = it.s.ID, it.o.Outcome, it.o.At, it.o.PayoutUSD, it.o.Reward
		pbTIDs[i], pbPubs[i], pbURLs[i] = it.o.Postback.TID, it.o.Postback.PublisherID, it.o.Postback.URL
		pbLeases[i] = it.o.PostbackLease.Microseconds()
		byID[it.s.ID] = it
	}
	// One round trip: BEGIN, a generic plan (custom plans of this statement cost more to
	// plan than to run, and small batches would always get one), the statement, COMMIT.
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue("SET LOCAL plan_cache_mode = force_generic_plan")
	b.Queue(recordOutcomesSQL, ids, outcomes, ats, payouts, rewards, pbTIDs, pbPubs, pbURLs, pbLeases, PostbackChannel).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id, pbID, moved, notified int64
			var held bool
			var created time.Time
			if err := rows.Scan(&id, &held, &pbID, &created, &moved, &notified); err != nil {
				return err
			}
			it := byID[id]
			if it == nil {
				continue
			}
			it.res.Decided, it.res.Held = true, held
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
func (db *DB) storedSessions(ctx context.Context, ids []int64) (map[int64]Session, error) {
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
func (db *DB) RecordOutcome(ctx context.Context, s Session, o OutcomeRecord) (OutcomeResult, error) {
	it := &outcomeItem{s: &s, o: &o}
	if err := retry(ctx, func() error { return db.recordOutcomes(ctx, []*outcomeItem{it}) }); err != nil {
		return OutcomeResult{}, classify(err)
	}
	if it.res.Decided {
		return it.res, nil
	}
	stored, err := scanSession(db.Pool.QueryRow(ctx, `SELECT `+sessionColumns+sessionFrom+` WHERE s.id = $1`, s.ID))
	return OutcomeResult{Stored: stored}, classify(err)
}

// OutcomeWriter records callbacks by group commit: concurrent callbacks are recorded by one
// statement (recordOutcomesSQL) with one COMMIT. Each is still decided on its own (first
// outcome wins; two callbacks of one session in a batch: the earlier one decides) and its
// postback is enqueued in that same transaction.
type OutcomeWriter struct {
	db *DB
	gc groupCommit[*outcomeJob]
}

type outcomeJob struct {
	item outcomeItem

	err  error
	done chan struct{}
}

// NewOutcomeWriter starts the writer's workers (cfg as for EntryWriter; MaxWait unused).
func (db *DB) NewOutcomeWriter(cfg EntryWriterConfig) *OutcomeWriter {
	cfg.MaxWait = 0
	w := &OutcomeWriter{db: db}
	w.gc.start(cfg, w.run)
	return w
}

// Close stops the workers once the queued callbacks are written.
func (w *OutcomeWriter) Close() { w.gc.close() }

// Record is RecordOutcome through the group commit.
func (w *OutcomeWriter) Record(ctx context.Context, s Session, o OutcomeRecord) (OutcomeResult, error) {
	j := &outcomeJob{item: outcomeItem{s: &s, o: &o}, done: make(chan struct{})}
	if err := w.gc.offer(uint64(s.CampaignID), j, ctx.Done(), ctx.Err); err != nil {
		return OutcomeResult{}, err
	}
	// Queued: wait for the batch even if ctx ends, so that a recorded outcome is never
	// reported as a failure.
	<-j.done
	return j.item.res, j.err
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
	err := retry(ctx, func() error { return w.db.recordOutcomes(ctx, items) })
	if err != nil && len(batch) > 1 && !isUnavailable(err) {
		for _, j := range batch {
			w.run([]*outcomeJob{j})
		}
		return
	}
	if err != nil {
		for _, j := range batch {
			j.item.res, j.err = OutcomeResult{}, classify(err)
			close(j.done)
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
		close(j.done)
	}
}

// CompleteFullCampaigns moves those of ids that are active and whose non-global quotas are
// all full (completes, or entries when click-balanced, reach num_respondents; at least one
// such quota) to 3 Complete, and announces them. It returns the ids it moved.
func (db *DB) CompleteFullCampaigns(ctx context.Context, ids []int64) ([]int64, error) {
	return db.moveCampaigns(ctx, `UPDATE campaigns c SET status = 3, status_changed_at = now(), completed_at = now(), updated_at = now()
		WHERE c.status = 2 AND ($1::bigint[] IS NULL OR c.id = ANY($1))
		AND EXISTS (SELECT 1 FROM campaign_quotas q WHERE q.campaign_id = c.id AND NOT q.is_global)
		AND NOT EXISTS (SELECT 1 FROM campaign_quotas q WHERE q.campaign_id = c.id AND NOT q.is_global
			AND CASE WHEN q.is_click_balanced THEN q.entries < q.num_respondents ELSE q.completes < q.num_respondents END)
		RETURNING c.id`, ids)
}

// moveCampaigns runs update, a status change of campaigns that returns the ids it moved,
// and announces those campaigns in the same transaction (so every process's engine hears
// of a change exactly when it commits). The status changes the service makes on its own
// (complete, system paused, archived) are conditional on the current status, so they are
// safe to run again and in several processes at once.
func (db *DB) moveCampaigns(ctx context.Context, update string, args ...any) ([]int64, error) {
	var out []int64
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, update, args...)
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
// The campaign-independent bound (older than 10 minutes) lets the scan of sessions_waiting
// skip the young sessions, which are most of those waiting.
func (db *DB) ReleaseStaleSessions(ctx context.Context, limit int) ([]int64, error) {
	var out []int64
	err := retry(ctx, func() error {
		rows, err := db.Pool.Query(ctx, `WITH s AS (
				UPDATE sessions s SET released_at = now()
				WHERE s.id IN (SELECT s2.id FROM sessions s2 JOIN campaigns c ON c.id = s2.campaign_id
					WHERE s2.outcome IS NULL AND s2.released_at IS NULL AND NOT s2.is_test
					AND s2.entered_at < now() - interval '10 minutes'
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
	return db.moveCampaigns(ctx, `UPDATE campaigns c SET status = 7, status_changed_at = now(), updated_at = now()
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
