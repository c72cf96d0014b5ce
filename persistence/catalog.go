package persistence

import (
	"context"
)

// Country is one supply country with its country languages, primary (lowest id) first.
type Country struct {
	ID                 int32
	Name               string
	ISOCode            string
	CountryLanguageIDs []int32
}

// CatalogQuestion is one standard qualification in one country language.
type CatalogQuestion struct {
	QuestionID        int32
	CountryLanguageID int32
	Name              string
	QuestionText      string
	AnswerType        int16 // 0 single select, 1 multi select, 5 text
	Required          bool
	Answers           []CatalogAnswer // in display order; empty for text questions
}

// CatalogAnswer is one answer option of a select question.
type CatalogAnswer struct {
	PreCode    int32
	OptionText string
}

// Catalog is the reference data the supply interface serves and validates against.
type Catalog struct {
	Countries []Country // by id
	// Questions holds the standard questions of every country language, keyed by
	// country_language_id, in display order.
	Questions map[int32][]CatalogQuestion
}

// LoadCatalog reads countries, country languages and the standard qualification catalog
// (custom screener questions, which carry a buyer, are left out).
func (db *CatalogStore) LoadCatalog(ctx context.Context) (*Catalog, error) {
	cat := &Catalog{Questions: map[int32][]CatalogQuestion{}}
	rows, err := db.Pool.Query(ctx, `SELECT c.id, c.name, c.iso_code,
		COALESCE(array_agg(cl.id ORDER BY cl.id) FILTER (WHERE cl.id IS NOT NULL), '{}')
		FROM countries c LEFT JOIN country_languages cl ON cl.country_id = c.id
		GROUP BY c.id ORDER BY c.id`)
	if err != nil {
		return nil, classify(err)
	}
	for rows.Next() {
		var c Country
		if err := rows.Scan(&c.ID, &c.Name, &c.ISOCode, &c.CountryLanguageIDs); err != nil {
			rows.Close()
			return nil, err
		}
		cat.Countries = append(cat.Countries, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, classify(err)
	}

	rows, err = db.Pool.Query(ctx, `SELECT question_id, country_language_id, name, question_text, answer_type, required
		FROM qualifications WHERE buyer_id IS NULL ORDER BY country_language_id, position, question_id`)
	if err != nil {
		return nil, classify(err)
	}
	type qkey struct{ q, cl int32 }
	index := map[qkey]int{}
	for rows.Next() {
		var q CatalogQuestion
		if err := rows.Scan(&q.QuestionID, &q.CountryLanguageID, &q.Name, &q.QuestionText, &q.AnswerType, &q.Required); err != nil {
			rows.Close()
			return nil, err
		}
		index[qkey{q.QuestionID, q.CountryLanguageID}] = len(cat.Questions[q.CountryLanguageID])
		cat.Questions[q.CountryLanguageID] = append(cat.Questions[q.CountryLanguageID], q)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, classify(err)
	}

	rows, err = db.Pool.Query(ctx, `SELECT a.question_id, a.country_language_id, a.pre_code, a.option_text
		FROM qualification_answers a JOIN qualifications q USING (question_id, country_language_id)
		WHERE q.buyer_id IS NULL ORDER BY a.country_language_id, a.question_id, a.position, a.pre_code`)
	if err != nil {
		return nil, classify(err)
	}
	for rows.Next() {
		var qid, cl int32
		var a CatalogAnswer
		if err := rows.Scan(&qid, &cl, &a.PreCode, &a.OptionText); err != nil {
			rows.Close()
			return nil, err
		}
		if i, ok := index[qkey{qid, cl}]; ok {
			q := &cat.Questions[cl][i]
			q.Answers = append(q.Answers, a)
		}
	}
	rows.Close()
	return cat, classify(rows.Err())
}

// PublishersWithTokenHash lists every publisher with the SHA-256 of its API token (the
// stored form), for the supply interface's in-memory authentication.
func (db *AccountStore) PublishersWithTokenHash(ctx context.Context) ([]Publisher, [][32]byte, error) {
	rows, err := db.Pool.Query(ctx, `SELECT `+publisherColumns+`, token_hash FROM publishers ORDER BY id`)
	if err != nil {
		return nil, nil, classify(err)
	}
	defer rows.Close()
	var out []Publisher
	var hashes [][32]byte
	for rows.Next() {
		var p Publisher
		var h []byte
		var reroute int16
		if err := rows.Scan(&p.ID, &p.Name, &p.CurrencyName, &p.ExchangeRate, &p.RevenueShare, &p.RedirectURL,
			&p.PostbackURL, &p.APISecret, &p.Environment, &reroute, &h); err != nil {
			return nil, nil, err
		}
		p.RerouteAttempts = int(reroute)
		var hh [32]byte
		copy(hh[:], h)
		out = append(out, p)
		hashes = append(hashes, hh)
	}
	return out, hashes, classify(rows.Err())
}
