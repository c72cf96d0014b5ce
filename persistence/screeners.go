package persistence

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/internal/fault"
)

// CampaignQualification is a custom screener question attached to a campaign, with the
// pre_codes that qualify.
type CampaignQualification struct {
	ID         int64 `json:"id"`
	QuestionID int   `json:"question_id"`
	PreCodes   []int `json:"pre_codes"`
}

// CustomQualificationFields is what creating a custom question takes.
type CustomQualificationFields struct {
	Name              string // empty: CUSTOM_<question_id>
	QuestionText      string
	AnswerType        int
	CountryLanguageID int
}

// CreateCustomQualification stores a custom screener question of the buyer in one country
// language, its id taken from custom_question_id_seq.
func (db *CampaignStore) CreateCustomQualification(ctx context.Context, buyerID int64, f CustomQualificationFields) (Qualification, error) {
	var out Qualification
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		if err := checkCountryLanguage(ctx, tx, f.CountryLanguageID); err != nil {
			return err
		}
		var id int
		if err := tx.QueryRow(ctx, `SELECT nextval('custom_question_id_seq')::int`).Scan(&id); err != nil {
			return err
		}
		name := f.Name
		if name == "" {
			name = fmt.Sprintf("CUSTOM_%d", id)
		}
		q, err := scanQualification(tx.QueryRow(ctx, `INSERT INTO qualifications (question_id, country_language_id, name,
			question_text, en_translation, answer_type, required, position, buyer_id)
			VALUES ($1, $2, $3, $4, $4, $5, false, $1, $6) RETURNING `+qualificationColumns,
			id, f.CountryLanguageID, name, f.QuestionText, f.AnswerType, buyerID))
		out = q
		return err
	})
	return out, err
}

// CreateCustomAnswer adds an answer to one of the buyer's custom questions; its pre_code is
// the next of that question (1, 2, …). Campaigns that use the question are notified.
func (db *CampaignStore) CreateCustomAnswer(ctx context.Context, buyerID int64, questionID int, optionText string) (Answer, error) {
	var out Answer
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		var cl int
		err := tx.QueryRow(ctx, `SELECT country_language_id FROM qualifications WHERE question_id = $1 AND buyer_id = $2 FOR UPDATE`,
			questionID, buyerID).Scan(&cl)
		if errors.Is(err, pgx.ErrNoRows) {
			return fault.NotFound("custom qualification not found")
		} else if err != nil {
			return err
		}
		out = Answer{OptionText: optionText, EnTranslation: optionText, CountryLanguageID: &cl}
		err = tx.QueryRow(ctx, `INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position)
			SELECT $1, $2, n, $3, $3, n FROM (SELECT COALESCE(max(pre_code), 0) + 1 AS n FROM qualification_answers
			  WHERE question_id = $1 AND country_language_id = $2) AS next RETURNING pre_code`, questionID, cl, optionText).Scan(&out.PreCode)
		if err != nil {
			return err
		}
		return notifyCampaignsUsing(ctx, tx, buyerID, questionID)
	})
	return out, err
}

func notifyCampaignsUsing(ctx context.Context, tx pgx.Tx, buyerID int64, questionID int) error {
	rows, err := tx.Query(ctx, `SELECT DISTINCT cq.campaign_id FROM campaign_qualifications cq
		JOIN campaigns c ON c.id = cq.campaign_id WHERE cq.question_id = $1 AND c.buyer_id = $2 ORDER BY 1`, questionID, buyerID)
	if err != nil {
		return err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return err
	}
	return NotifyCampaigns(ctx, tx, ids...)
}

// checkCustomPreCodes verifies that questionID is one of the buyer's custom questions of
// country language cl and that every pre_code is one of its answers.
func checkCustomPreCodes(ctx context.Context, tx pgx.Tx, buyerID int64, cl, questionID int, codes []int) error {
	var answers []int32
	err := tx.QueryRow(ctx, `SELECT COALESCE(array_agg(a.pre_code) FILTER (WHERE a.pre_code IS NOT NULL), '{}')
		FROM qualifications q LEFT JOIN qualification_answers a
		  ON a.question_id = q.question_id AND a.country_language_id = q.country_language_id
		WHERE q.question_id = $1 AND q.country_language_id = $2 AND q.buyer_id = $3
		GROUP BY q.question_id`, questionID, cl, buyerID).Scan(&answers)
	if errors.Is(err, pgx.ErrNoRows) {
		return fault.Invalid("question_id", "%d is not a custom qualification of this buyer in country_language_id %d", questionID, cl)
	} else if err != nil {
		return err
	}
	known := make(map[int]bool, len(answers))
	for _, a := range answers {
		known[int(a)] = true
	}
	for _, c := range codes {
		if !known[c] {
			return fault.Invalid("pre_code_values", "contains %d, which is not an answer of question %d", c, questionID)
		}
	}
	return nil
}

// AttachCustomQualification attaches one of the buyer's custom questions, with the
// qualifying pre_codes, to one of the buyer's campaigns.
func (db *CampaignStore) AttachCustomQualification(ctx context.Context, buyerID, campaignID int64, questionID int, codes []int) (CampaignQualification, error) {
	codes = dedup(codes)
	out := CampaignQualification{QuestionID: questionID, PreCodes: codes}
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		cl, err := lockCampaign(ctx, tx, buyerID, campaignID)
		if err != nil {
			return err
		}
		if err := checkCustomPreCodes(ctx, tx, buyerID, cl, questionID, codes); err != nil {
			return err
		}
		var dup bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM campaign_qualifications WHERE campaign_id = $1 AND question_id = $2)`,
			campaignID, questionID).Scan(&dup); err != nil {
			return err
		}
		if dup {
			return fault.Invalid("question_id", "%d is already attached to this campaign", questionID)
		}
		if err := tx.QueryRow(ctx, `INSERT INTO campaign_qualifications (campaign_id, question_id, pre_codes) VALUES ($1, $2, $3)
			RETURNING id, pre_codes`, campaignID, questionID, codes).Scan(&out.ID, &out.PreCodes); err != nil {
			return err
		}
		return NotifyCampaigns(ctx, tx, campaignID)
	})
	return out, err
}

// UpdateCustomQualification changes the qualifying pre_codes of an attached custom question
// (nil codes: no change).
func (db *CampaignStore) UpdateCustomQualification(ctx context.Context, buyerID, campaignID, id int64, codes []int) (CampaignQualification, error) {
	var out CampaignQualification
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		cl, err := lockCampaign(ctx, tx, buyerID, campaignID)
		if err != nil {
			return err
		}
		err = tx.QueryRow(ctx, `SELECT id, question_id, pre_codes FROM campaign_qualifications WHERE id = $1 AND campaign_id = $2`,
			id, campaignID).Scan(&out.ID, &out.QuestionID, &out.PreCodes)
		if errors.Is(err, pgx.ErrNoRows) {
			return fault.NotFound("campaign qualification not found")
		} else if err != nil {
			return err
		}
		if codes == nil {
			return nil
		}
		codes = dedup(codes)
		if err := checkCustomPreCodes(ctx, tx, buyerID, cl, out.QuestionID, codes); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `UPDATE campaign_qualifications SET pre_codes = $2 WHERE id = $1 RETURNING pre_codes`,
			id, codes).Scan(&out.PreCodes); err != nil {
			return err
		}
		return NotifyCampaigns(ctx, tx, campaignID)
	})
	return out, err
}

// DetachCustomQualification removes a custom question from one of the buyer's campaigns.
func (db *CampaignStore) DetachCustomQualification(ctx context.Context, buyerID, campaignID, id int64) error {
	return db.Tx(ctx, func(tx pgx.Tx) error {
		if _, err := lockCampaign(ctx, tx, buyerID, campaignID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM campaign_qualifications WHERE id = $1 AND campaign_id = $2`, id, campaignID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fault.NotFound("campaign qualification not found")
		}
		return NotifyCampaigns(ctx, tx, campaignID)
	})
}
