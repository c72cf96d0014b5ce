package persistence

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/internal/fault"
)

// Support request session kinds.
const (
	SupportProfile = "profile" // the hosted profiler, before the participant had an id
	SupportSurvey  = "survey"  // offers of a profiled participant
)

// MaxSupportRequestsPerToken bounds how many messages one support token may send.
const MaxSupportRequestsPerToken = 5

// SupportRequest is a message from the support page.
type SupportRequest struct {
	ID            int64
	PublisherID   int64
	ParticipantID int64  // 0: not impaneled yet (a profile session)
	User          string // the partner's user identifier, for profile sessions
	CampaignID    int64  // 0: not about one survey
	Kind          string // SupportProfile or SupportSurvey
	Message       string
	ContactEmail  string // "" when none was left
	TokenNonce    uint64
	CreatedAt     time.Time
}

// CreateSupportRequest stores a support request and returns its id. More than
// MaxSupportRequestsPerToken from one token: fault.RateLimited.
func (db *ParticipantStore) CreateSupportRequest(ctx context.Context, r SupportRequest) (int64, error) {
	var id int64
	err := db.Pool.QueryRow(ctx, `INSERT INTO support_requests (publisher_id, participant_id, user_identifier, campaign_id,
			session_kind, message, contact_email, token_nonce)
		SELECT $1, NULLIF($2, 0::bigint), $3, NULLIF($4, 0::bigint), $5, $6, NULLIF($7, ''), $8
		WHERE (SELECT count(*) FROM support_requests WHERE token_nonce = $8 AND publisher_id = $1) < $9
		RETURNING id`,
		r.PublisherID, r.ParticipantID, r.User, r.CampaignID, r.Kind, r.Message, r.ContactEmail, int64(r.TokenNonce),
		MaxSupportRequestsPerToken).Scan(&id)
	if err != nil && errors.Is(err, pgx.ErrNoRows) {
		return 0, fault.RateLimited()
	}
	return id, classify(err)
}

// SupportRequestOf returns support request id when it was sent with the token of nonce by
// the publisher's participant (the confirmation page shows only its own request).
func (db *ParticipantStore) SupportRequestOf(ctx context.Context, id, publisherID int64, nonce uint64) (SupportRequest, error) {
	r := SupportRequest{ID: id}
	var participant, campaign *int64
	var email *string
	err := db.Pool.QueryRow(ctx, `SELECT publisher_id, participant_id, user_identifier, campaign_id, session_kind, message,
			contact_email, created_at
		FROM support_requests WHERE id = $1 AND publisher_id = $2 AND token_nonce = $3`, id, publisherID, int64(nonce)).
		Scan(&r.PublisherID, &participant, &r.User, &campaign, &r.Kind, &r.Message, &email, &r.CreatedAt)
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return r, fault.NotFound("support request not found")
		}
		return r, classify(err)
	}
	r.TokenNonce = nonce
	if participant != nil {
		r.ParticipantID = *participant
	}
	if campaign != nil {
		r.CampaignID = *campaign
	}
	if email != nil {
		r.ContactEmail = *email
	}
	return r, nil
}

// RecentEntry is a campaign a participant entered recently, for the support page.
type RecentEntry struct {
	CampaignID int64
	EnteredAt  time.Time
}

// RecentEntries lists the campaigns the publisher's participant entered since since, the
// latest first, at most limit.
func (db *ParticipantStore) RecentEntries(ctx context.Context, publisherID, participantID int64, since time.Time, limit int) ([]RecentEntry, error) {
	rows, err := db.Pool.Query(ctx, `SELECT campaign_id, max(entered_at) AS at FROM sessions
		WHERE participant_id = $1 AND publisher_id = $2 AND NOT is_test AND entered_at >= $3
		GROUP BY campaign_id ORDER BY at DESC LIMIT $4`, participantID, publisherID, since, limit)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []RecentEntry
	for rows.Next() {
		var e RecentEntry
		if err := rows.Scan(&e.CampaignID, &e.EnteredAt); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, classify(rows.Err())
}

// CountryLanguageAbbrs maps country language ids to their abbreviations (en-US, …).
func (db *CatalogStore) CountryLanguageAbbrs(ctx context.Context) (map[int32]string, error) {
	rows, err := db.Pool.Query(ctx, `SELECT id, abbr FROM country_languages`)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	out := map[int32]string{}
	for rows.Next() {
		var id int32
		var abbr string
		if err := rows.Scan(&id, &abbr); err != nil {
			return nil, err
		}
		out[id] = abbr
	}
	return out, classify(rows.Err())
}
