package persistence

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// OfferSessionAge is how long ago an offer's session may have been admitted and still be
// resumed by following the offer's link again: longer than any offer token lives.
const OfferSessionAge = 2 * time.Hour

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
