package persistence

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
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
