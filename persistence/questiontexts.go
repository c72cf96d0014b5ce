package persistence

import "context"

// QuestionText is what a targeting question reads as, for showing a condition in words:
// its name, its text, its answer type and its answers' texts by pre_code.
type QuestionText struct {
	Name       string
	Text       string
	AnswerType int
	Answers    map[int]string
}

// QuestionTexts reads the questions qids of a country language that the buyer can target
// (the standard catalog and the buyer's own custom questions) with their answers' texts, by
// question id; an id that is neither is left out.
func (db *CatalogStore) QuestionTexts(ctx context.Context, buyerID int64, countryLanguageID int, qids []int) (map[int]QuestionText, error) {
	out := map[int]QuestionText{}
	if len(qids) == 0 {
		return out, nil
	}
	rows, err := db.Pool.Query(ctx, `SELECT q.question_id, q.name, q.question_text, q.answer_type::int,
			COALESCE((SELECT json_object_agg(a.pre_code, a.option_text) FROM qualification_answers a
				WHERE a.question_id = q.question_id AND a.country_language_id = q.country_language_id), '{}'::json)
		FROM qualifications q WHERE q.country_language_id = $1 AND (q.buyer_id IS NULL OR q.buyer_id = $2)
			AND q.question_id = ANY($3::int[])`, countryLanguageID, buyerID, qids)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int
		var t QuestionText
		if err := rows.Scan(&id, &t.Name, &t.Text, &t.AnswerType, &t.Answers); err != nil {
			return nil, classify(err)
		}
		out[id] = t
	}
	return out, classify(rows.Err())
}
