package persistence

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// Screener is the hosted pre-screener of a campaign: its custom screener questions
// (campaign_qualifications), in the campaign's country language, in the order attached.
type Screener struct {
	CampaignID        int64
	CountryLanguageID int32
	Lang              string // the country language's abbreviation, e.g. en-US
	Questions         []ScreenerQuestion
}

// ScreenerQuestion is one custom question with its answers and the pre_codes that qualify.
type ScreenerQuestion struct {
	QuestionID int32
	Text       string
	AnswerType int16 // 0 single select, 1 multi select
	Answers    []CatalogAnswer
	Qualifying []int32
}

// CampaignScreener returns the pre-screener of a campaign, or nil when no custom screener
// question is attached (or the campaign does not exist).
func (db *CampaignStore) CampaignScreener(ctx context.Context, campaignID int64) (*Screener, error) {
	rows, err := db.Pool.Query(ctx, `SELECT c.country_language_id, cl.abbr, cq.question_id, q.question_text, q.answer_type,
			cq.pre_codes,
			ARRAY(SELECT a.pre_code FROM qualification_answers a
			  WHERE a.question_id = q.question_id AND a.country_language_id = q.country_language_id ORDER BY a.position, a.pre_code),
			ARRAY(SELECT a.option_text FROM qualification_answers a
			  WHERE a.question_id = q.question_id AND a.country_language_id = q.country_language_id ORDER BY a.position, a.pre_code)
		FROM campaign_qualifications cq
		JOIN campaigns c ON c.id = cq.campaign_id
		JOIN country_languages cl ON cl.id = c.country_language_id
		JOIN qualifications q ON q.question_id = cq.question_id AND q.country_language_id = c.country_language_id
		WHERE cq.campaign_id = $1 ORDER BY cq.id`, campaignID)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var s *Screener
	for rows.Next() {
		var cl int32
		var abbr string
		var q ScreenerQuestion
		var codes []int32
		var texts []string
		if err := rows.Scan(&cl, &abbr, &q.QuestionID, &q.Text, &q.AnswerType, &q.Qualifying, &codes, &texts); err != nil {
			return nil, err
		}
		for i := range codes {
			if i < len(texts) {
				q.Answers = append(q.Answers, CatalogAnswer{PreCode: codes[i], OptionText: texts[i]})
			}
		}
		if s == nil {
			s = &Screener{CampaignID: campaignID, CountryLanguageID: cl, Lang: abbr}
		}
		s.Questions = append(s.Questions, q)
	}
	return s, classify(rows.Err())
}

// ScreenerAnswer is one answer of a pre-screener sheet.
type ScreenerAnswer struct {
	QuestionID int32
	PreCodes   []int32
}

// PrescreenResponse is one submitted pre-screener sheet.
type PrescreenResponse struct {
	TokenNonce    uint64
	PublisherID   int64
	ParticipantID int64
	CampaignID    int64
	Answers       []ScreenerAnswer
	Qualified     bool
}

// RecordPrescreen stores a pre-screener sheet and returns its id.
func (db *SessionStore) RecordPrescreen(ctx context.Context, r PrescreenResponse) (int64, error) {
	m := make(map[string][]int32, len(r.Answers))
	for _, a := range r.Answers {
		codes := a.PreCodes
		if codes == nil {
			codes = []int32{}
		}
		m[strconv.FormatInt(int64(a.QuestionID), 10)] = codes
	}
	answers, err := json.Marshal(m)
	if err != nil {
		return 0, err
	}
	var id int64
	err = db.Pool.QueryRow(ctx, `INSERT INTO prescreen_responses (token_nonce, publisher_id, participant_id, campaign_id, answers, qualified)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
		int64(r.TokenNonce), r.PublisherID, r.ParticipantID, r.CampaignID, answers, r.Qualified).Scan(&id)
	return id, classify(err)
}

// AttachPrescreen attaches a qualified sheet to the session its entry just created: the
// participant's latest live session of the campaign from the last 10 minutes. The answers
// become the session's screener_answers. It returns the session id, or 0 when there is no
// such session.
func (db *CampaignStore) AttachPrescreen(ctx context.Context, responseID, participantID, campaignID int64) (int64, error) {
	var sessionID int64
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT id FROM sessions WHERE participant_id = $1 AND campaign_id = $2 AND NOT is_test
			AND entered_at > now() - interval '10 minutes' ORDER BY id DESC LIMIT 1`, participantID, campaignID).Scan(&sessionID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		} else if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE prescreen_responses SET session_id = $2 WHERE id = $1`, responseID, sessionID); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO screener_answers (session_id, question_id, pre_codes)
			SELECT $2, e.key::int, ARRAY(SELECT jsonb_array_elements_text(e.value)::int)
			FROM prescreen_responses r, jsonb_each(r.answers) e WHERE r.id = $1
			ON CONFLICT (session_id, question_id) DO UPDATE SET pre_codes = EXCLUDED.pre_codes, answered_at = now()`,
			responseID, sessionID)
		return err
	})
	return sessionID, err
}
