package persistence

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/internal/fault"
)

// CountryLanguage is one entry of the country-language lookup.
type CountryLanguage struct {
	ID   int    `json:"id"`
	Abbr string `json:"abbr"`
}

// Qualification is a targeting question. CountryLanguageID is set on custom questions
// only; Answers only on the single-qualification read.
type Qualification struct {
	Name              string    `json:"name"`
	QuestionID        int       `json:"question_id"`
	QuestionText      string    `json:"question_text"`
	AnswerType        int       `json:"answer_type"`
	EnTranslation     string    `json:"en_translation"`
	CountryLanguageID *int      `json:"country_language_id,omitempty"`
	Answers           *[]Answer `json:"qualification_answers,omitempty"`
}

// Answer is one answer of a select question. CountryLanguageID is set on custom answers.
type Answer struct {
	OptionText        string `json:"option_text"`
	PreCode           int    `json:"pre_code"`
	EnTranslation     string `json:"en_translation"`
	CountryLanguageID *int   `json:"country_language_id,omitempty"`
}

// CountryLanguages lists every country language in id order.
func (db *CatalogStore) CountryLanguages(ctx context.Context) ([]CountryLanguage, error) {
	rows, err := db.Pool.Query(ctx, `SELECT id, abbr FROM country_languages ORDER BY id`)
	if err != nil {
		return nil, classify(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[CountryLanguage])
	if out == nil {
		out = []CountryLanguage{}
	}
	return out, classify(err)
}

func (db *CatalogStore) countryLanguageExists(ctx context.Context, id int) error {
	var ok bool
	if err := db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM country_languages WHERE id = $1)`, id).Scan(&ok); err != nil {
		return classify(err)
	}
	if !ok {
		return fault.NotFound("country language not found")
	}
	return nil
}

const qualificationColumns = `name, question_id, question_text, answer_type::int, en_translation,
	CASE WHEN buyer_id IS NULL THEN NULL ELSE country_language_id END`

func scanQualification(row pgx.Row) (Qualification, error) {
	var q Qualification
	err := row.Scan(&q.Name, &q.QuestionID, &q.QuestionText, &q.AnswerType, &q.EnTranslation, &q.CountryLanguageID)
	return q, err
}

// Qualifications lists the questions of a country language that the buyer can target: the
// standard catalog and the buyer's own custom questions (answer types 0, 1 and 5 only).
func (db *CatalogStore) Qualifications(ctx context.Context, buyerID int64, countryLanguageID int) ([]Qualification, error) {
	if err := db.countryLanguageExists(ctx, countryLanguageID); err != nil {
		return nil, err
	}
	rows, err := db.Pool.Query(ctx, `SELECT `+qualificationColumns+` FROM qualifications
		WHERE country_language_id = $1 AND (buyer_id IS NULL OR buyer_id = $2) AND answer_type IN (0, 1, 5)
		ORDER BY buyer_id NULLS FIRST, position, question_id`, countryLanguageID, buyerID)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	out := []Qualification{}
	for rows.Next() {
		q, err := scanQualification(rows)
		if err != nil {
			return nil, classify(err)
		}
		out = append(out, q)
	}
	return out, classify(rows.Err())
}

// QualificationsWithAnswers lists what Qualifications lists, each question with its answers
// (empty for text questions), in three statements whatever the catalog's size: the console's
// quota and screener forms show every answer of every question.
func (db *CatalogStore) QualificationsWithAnswers(ctx context.Context, buyerID int64, countryLanguageID int) ([]Qualification, error) {
	qs, err := db.Qualifications(ctx, buyerID, countryLanguageID)
	if err != nil {
		return nil, err
	}
	index := make(map[int]int, len(qs))
	ids := make([]int, len(qs))
	for i := range qs {
		index[qs[i].QuestionID], ids[i] = i, qs[i].QuestionID
		qs[i].Answers = &[]Answer{}
	}
	rows, err := db.Pool.Query(ctx, `SELECT question_id, option_text, pre_code, en_translation FROM qualification_answers
		WHERE country_language_id = $1 AND question_id = ANY($2) ORDER BY question_id, position, pre_code`, countryLanguageID, ids)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	for rows.Next() {
		var qid int
		var a Answer
		if err := rows.Scan(&qid, &a.OptionText, &a.PreCode, &a.EnTranslation); err != nil {
			return nil, classify(err)
		}
		q := &qs[index[qid]]
		a.CountryLanguageID = q.CountryLanguageID
		*q.Answers = append(*q.Answers, a)
	}
	return qs, classify(rows.Err())
}

// Qualification reads one question of a country language with its answers.
func (db *CatalogStore) Qualification(ctx context.Context, buyerID int64, questionID, countryLanguageID int) (Qualification, error) {
	if err := db.countryLanguageExists(ctx, countryLanguageID); err != nil {
		return Qualification{}, err
	}
	q, err := scanQualification(db.Pool.QueryRow(ctx, `SELECT `+qualificationColumns+` FROM qualifications
		WHERE question_id = $1 AND country_language_id = $2 AND (buyer_id IS NULL OR buyer_id = $3) AND answer_type IN (0, 1, 5)`,
		questionID, countryLanguageID, buyerID))
	if errors.Is(err, pgx.ErrNoRows) {
		return Qualification{}, fault.NotFound("qualification not found")
	} else if err != nil {
		return Qualification{}, classify(err)
	}
	rows, err := db.Pool.Query(ctx, `SELECT option_text, pre_code, en_translation FROM qualification_answers
		WHERE question_id = $1 AND country_language_id = $2 ORDER BY position, pre_code`, questionID, countryLanguageID)
	if err != nil {
		return Qualification{}, classify(err)
	}
	defer rows.Close()
	answers := []Answer{}
	for rows.Next() {
		var a Answer
		if err := rows.Scan(&a.OptionText, &a.PreCode, &a.EnTranslation); err != nil {
			return Qualification{}, classify(err)
		}
		a.CountryLanguageID = q.CountryLanguageID
		answers = append(answers, a)
	}
	if err := rows.Err(); err != nil {
		return Qualification{}, classify(err)
	}
	q.Answers = &answers
	return q, nil
}
