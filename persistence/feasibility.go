package persistence

import (
	"context"
	"strconv"

	"github.com/switchboard/switchboard/engine"
)

// FeasibilityInput loads what the engine needs to estimate one of the buyer's campaigns:
// country, incidence, length, days in field and every quota with its conditions. Another
// buyer's campaign is not found.
func (db *CatalogStore) FeasibilityInput(ctx context.Context, buyerID, campaignID int64) (engine.FeasibilityRequest, error) {
	var req engine.FeasibilityRequest
	err := db.Pool.QueryRow(ctx, `SELECT cl.country_id, c.incidence, c.length_of_interview, c.days_in_field
		FROM campaigns c JOIN country_languages cl ON cl.id = c.country_language_id
		WHERE c.id = $1 AND c.buyer_id = $2`, campaignID, buyerID).
		Scan(&req.CountryID, &req.Incidence, &req.LOI, &req.DaysInField)
	if err != nil {
		return req, classify(err)
	}
	rows, err := db.Pool.Query(ctx, `SELECT q.id, q.num_respondents, q.is_click_balanced, q.is_global,
		qq.question_id, qq.pre_codes, qq.text_values
		FROM campaign_quotas q LEFT JOIN quota_qualifications qq ON qq.quota_id = q.id
		WHERE q.campaign_id = $1 ORDER BY q.id, qq.id`, campaignID)
	if err != nil {
		return req, classify(err)
	}
	defer rows.Close()
	for rows.Next() {
		var q engine.Quota
		var qid *int32
		var codes []int32
		var texts []string
		if err := rows.Scan(&q.ID, &q.NumRespondents, &q.ClickBalanced, &q.Global, &qid, &codes, &texts); err != nil {
			return req, err
		}
		if n := len(req.Quotas); n == 0 || req.Quotas[n-1].ID != q.ID {
			req.Quotas = append(req.Quotas, q)
		}
		if qid != nil {
			last := &req.Quotas[len(req.Quotas)-1]
			last.Conditions = append(last.Conditions, engine.Condition{QuestionID: *qid, Codes: codes, Texts: texts})
		}
	}
	return req, classify(rows.Err())
}

// CountryQuestions maps each question id known in a country (standard, or custom of this
// buyer) to its answer type.
func (db *CatalogStore) CountryQuestions(ctx context.Context, buyerID int64, countryID int32) (map[int32]int16, error) {
	rows, err := db.Pool.Query(ctx, `SELECT DISTINCT q.question_id, q.answer_type
		FROM qualifications q JOIN country_languages cl ON cl.id = q.country_language_id
		WHERE cl.country_id = $1 AND (q.buyer_id IS NULL OR q.buyer_id = $2)`, countryID, buyerID)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	out := map[int32]int16{}
	for rows.Next() {
		var id int32
		var t int16
		if err := rows.Scan(&id, &t); err != nil {
			return nil, err
		}
		out[id] = t
	}
	return out, classify(rows.Err())
}

// CountryOfLanguage returns the country a country language belongs to.
func (db *CatalogStore) CountryOfLanguage(ctx context.Context, countryLanguageID int) (int32, error) {
	var c int32
	err := db.Pool.QueryRow(ctx, `SELECT country_id FROM country_languages WHERE id = $1`, countryLanguageID).Scan(&c)
	return c, classify(err)
}

// Condition turns a quota qualification as a buyer sent it into the engine's form: text
// questions (answer type 5 other than AGE) keep normalized strings, the rest integer codes.
// Values that fit neither are dropped: they can match nobody.
func Condition(questionID int32, answerType int16, values []PreCode) engine.Condition {
	c := engine.Condition{QuestionID: questionID}
	text := answerType == 5 && questionID != engine.QuestionAge
	for _, v := range values {
		if text {
			c.Texts = append(c.Texts, engine.NormalizeText(v.Text))
			continue
		}
		if n, err := strconv.ParseInt(v.Text, 10, 32); err == nil {
			c.Codes = append(c.Codes, int32(n))
		}
	}
	return c
}
