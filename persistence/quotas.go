package persistence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/internal/fault"
)

// Standard question ids with a fixed meaning (docs/rules.md §3).
const (
	QuestionAge = 42
	QuestionZip = 45
)

// Answer types.
const (
	AnswerSingle = 0
	AnswerMulti  = 1
	AnswerText   = 5
)

// Quota is a campaign quota with its qualifications.
type Quota struct {
	ID                     int64                `json:"id"`
	Name                   *string              `json:"name"`
	NumRespondents         int                  `json:"num_respondents"`
	IsClickBalanced        bool                 `json:"is_click_balanced"`
	IsGlobal               bool                 `json:"is_global"`
	CampaignQualifications []QuotaQualification `json:"campaign_qualifications"`
	// Completes, InProgress and Entries are the quota's live counters (read only): accepted
	// completes counted toward it, sessions entered that still hold a place awaiting their
	// callback, and every session admitted into it.
	Completes  int `json:"completes"`
	InProgress int `json:"in_progress"`
	Entries    int `json:"entries"`
}

// QuotaQualification is one targeting criterion of a quota: integer pre_codes for select
// questions and AGE, normalized strings for the other text questions (ZIP).
type QuotaQualification struct {
	QuestionID int      `json:"question_id"`
	PreCodes   []int    `json:"pre_codes"`
	TextValues []string `json:"text_values"`
}

// MarshalJSON writes {"question_id", "pre_codes"}, pre_codes holding the integers or, for
// text questions, the strings.
func (q QuotaQualification) MarshalJSON() ([]byte, error) {
	var codes any = q.PreCodes
	if len(q.TextValues) > 0 {
		codes = q.TextValues
	} else if q.PreCodes == nil {
		codes = []int{}
	}
	return json.Marshal(struct {
		QuestionID int `json:"question_id"`
		PreCodes   any `json:"pre_codes"`
	}{q.QuestionID, codes})
}

// PreCode is one value of a request's pre_codes array: a JSON number (Number true, Text the
// literal) or a JSON string.
type PreCode struct {
	Text   string
	Number bool
}

// QualificationInput is one requested quota qualification.
type QualificationInput struct {
	QuestionID int
	PreCodes   []PreCode
}

// QuotaFields are the writable quota fields; nil means not supplied. A nil Qualifications
// (or an empty one on update) leaves the quota's qualifications as they are.
type QuotaFields struct {
	Name            Nullable[string]
	NumRespondents  *int
	IsClickBalanced *bool
	IsGlobal        *bool
	Qualifications  []QualificationInput
}

const quotaColumns = `q.id, q.name, q.num_respondents, q.is_click_balanced, q.is_global,
	COALESCE((SELECT json_agg(json_build_object('question_id', qq.question_id, 'pre_codes', qq.pre_codes, 'text_values', qq.text_values) ORDER BY qq.id)
	  FROM quota_qualifications qq WHERE qq.quota_id = q.id), '[]'::json),
	q.completes, q.in_progress, q.entries`

// quotasOf reads the quotas of a campaign (all of them when quotaID is 0).
func quotasOf(ctx context.Context, q querier, campaignID, quotaID int64) ([]Quota, error) {
	rows, err := q.Query(ctx, `SELECT `+quotaColumns+` FROM campaign_quotas q
		WHERE q.campaign_id = $1 AND ($2 = 0 OR q.id = $2) ORDER BY q.id`, campaignID, quotaID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Quota{}
	for rows.Next() {
		var qt Quota
		if err := rows.Scan(&qt.ID, &qt.Name, &qt.NumRespondents, &qt.IsClickBalanced, &qt.IsGlobal, &qt.CampaignQualifications,
			&qt.Completes, &qt.InProgress, &qt.Entries); err != nil {
			return nil, err
		}
		if qt.CampaignQualifications == nil {
			qt.CampaignQualifications = []QuotaQualification{}
		}
		out = append(out, qt)
	}
	return out, rows.Err()
}

func quotaOf(ctx context.Context, q querier, campaignID, quotaID int64) (Quota, error) {
	qs, err := quotasOf(ctx, q, campaignID, quotaID)
	if err != nil {
		return Quota{}, err
	}
	if len(qs) == 0 {
		return Quota{}, fault.NotFound("campaign quota not found")
	}
	return qs[0], nil
}

// Quota reads one quota of one of the buyer's campaigns.
func (db *CampaignStore) Quota(ctx context.Context, buyerID, campaignID, quotaID int64) (Quota, error) {
	var owned bool
	if err := db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM campaigns WHERE id = $1 AND buyer_id = $2)`,
		campaignID, buyerID).Scan(&owned); err != nil {
		return Quota{}, classify(err)
	}
	if !owned {
		return Quota{}, fault.NotFound("campaign not found")
	}
	q, err := quotaOf(ctx, db.Pool, campaignID, quotaID)
	return q, classify(err)
}

// CreateQuota adds a quota to one of the buyer's campaigns. NumRespondents must be set.
func (db *CampaignStore) CreateQuota(ctx context.Context, buyerID, campaignID int64, f QuotaFields) (Quota, error) {
	if f.NumRespondents == nil {
		return Quota{}, fault.Internal(errors.New("CreateQuota: num_respondents missing"))
	}
	var out Quota
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		cl, err := lockCampaign(ctx, tx, buyerID, campaignID)
		if err != nil {
			return err
		}
		quals, err := resolveQualifications(ctx, tx, buyerID, cl, f.Qualifications)
		if err != nil {
			return err
		}
		var id int64
		err = tx.QueryRow(ctx, `INSERT INTO campaign_quotas (campaign_id, name, num_respondents, is_click_balanced, is_global)
			VALUES ($1, $2, $3, $4, $5) RETURNING id`, campaignID, f.Name.Ptr(), *f.NumRespondents,
			f.IsClickBalanced != nil && *f.IsClickBalanced, f.IsGlobal != nil && *f.IsGlobal).Scan(&id)
		if err != nil {
			return err
		}
		if err := insertQualifications(ctx, tx, id, quals); err != nil {
			return err
		}
		if err := NotifyCampaigns(ctx, tx, campaignID); err != nil {
			return err
		}
		out, err = quotaOf(ctx, tx, campaignID, id)
		return err
	})
	return out, err
}

// UpdateQuota changes the supplied fields of a quota; a non-empty Qualifications replaces
// all of the quota's qualifications (docs/rules.md §4).
func (db *CampaignStore) UpdateQuota(ctx context.Context, buyerID, campaignID, quotaID int64, f QuotaFields) (Quota, error) {
	var out Quota
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		cl, err := lockCampaign(ctx, tx, buyerID, campaignID)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE campaign_quotas SET
			name = CASE WHEN $3 THEN $4 ELSE name END,
			num_respondents = COALESCE($5, num_respondents),
			is_click_balanced = COALESCE($6, is_click_balanced),
			is_global = COALESCE($7, is_global)
			WHERE id = $1 AND campaign_id = $2`, quotaID, campaignID, f.Name.Set, f.Name.Ptr(),
			f.NumRespondents, f.IsClickBalanced, f.IsGlobal)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fault.NotFound("campaign quota not found")
		}
		if len(f.Qualifications) > 0 {
			quals, err := resolveQualifications(ctx, tx, buyerID, cl, f.Qualifications)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM quota_qualifications WHERE quota_id = $1`, quotaID); err != nil {
				return err
			}
			if err := insertQualifications(ctx, tx, quotaID, quals); err != nil {
				return err
			}
		}
		if err := NotifyCampaigns(ctx, tx, campaignID); err != nil {
			return err
		}
		out, err = quotaOf(ctx, tx, campaignID, quotaID)
		return err
	})
	return out, err
}

// DeleteQuota removes a quota of one of the buyer's campaigns.
func (db *CampaignStore) DeleteQuota(ctx context.Context, buyerID, campaignID, quotaID int64) error {
	return db.Tx(ctx, func(tx pgx.Tx) error {
		if _, err := lockCampaign(ctx, tx, buyerID, campaignID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM campaign_quotas WHERE id = $1 AND campaign_id = $2`, quotaID, campaignID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fault.NotFound("campaign quota not found")
		}
		return NotifyCampaigns(ctx, tx, campaignID)
	})
}

// resolveQualifications checks requested qualifications against the catalog of the
// campaign's country language (standard questions and the buyer's custom ones) and converts
// their values to what is stored.
func resolveQualifications(ctx context.Context, tx pgx.Tx, buyerID int64, cl int, in []QualificationInput) ([]QuotaQualification, error) {
	if len(in) == 0 {
		return nil, nil
	}
	ids := make([]int32, len(in))
	for i, q := range in {
		ids[i] = int32(q.QuestionID)
	}
	metas, err := qualificationMetas(ctx, tx, buyerID, cl, ids)
	if err != nil {
		return nil, err
	}
	out := make([]QuotaQualification, 0, len(in))
	for i, q := range in {
		field := fmt.Sprintf("campaign_qualifications[%d]", i)
		m, ok := metas[q.QuestionID]
		if !ok {
			return nil, fault.Invalid(field+".question_id", "%d is not a qualification of country_language_id %d", q.QuestionID, cl)
		}
		qq, err := resolveValues(field, q, m)
		if err != nil {
			return nil, err
		}
		out = append(out, qq)
	}
	return out, nil
}

// qualificationMeta is what the catalog says of a requested qualification: its answer type
// and its answers' pre_codes.
type qualificationMeta struct {
	answerType int
	codes      map[int]bool
}

// qualificationMetas reads, by question id, the catalog's word on the questions ids of
// country language cl that are standard or the buyer's own.
func qualificationMetas(ctx context.Context, tx pgx.Tx, buyerID int64, cl int, ids []int32) (map[int]qualificationMeta, error) {
	rows, err := tx.Query(ctx, `SELECT q.question_id, q.answer_type::int,
		COALESCE(array_agg(a.pre_code) FILTER (WHERE a.pre_code IS NOT NULL), '{}')
		FROM qualifications q LEFT JOIN qualification_answers a
		  ON a.question_id = q.question_id AND a.country_language_id = q.country_language_id
		WHERE q.country_language_id = $1 AND q.question_id = ANY($2) AND (q.buyer_id IS NULL OR q.buyer_id = $3)
		GROUP BY q.question_id, q.answer_type`, cl, ids, buyerID)
	if err != nil {
		return nil, err
	}
	metas := map[int]qualificationMeta{}
	for rows.Next() {
		var id, at int
		var codes []int32
		if err := rows.Scan(&id, &at, &codes); err != nil {
			rows.Close()
			return nil, err
		}
		m := qualificationMeta{answerType: at, codes: make(map[int]bool, len(codes))}
		for _, c := range codes {
			m.codes[int(c)] = true
		}
		metas[id] = m
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return metas, nil
}

// resolveValues converts the values of q, the qualification field names, to what is
// stored: normalized texts of a text question, else integers (an age, or pre_codes that m
// lists), each de-duplicated; a value that is not is a 422 naming it.
func resolveValues(field string, q QualificationInput, m qualificationMeta) (QuotaQualification, error) {
	qq := QuotaQualification{QuestionID: q.QuestionID}
	for j, v := range q.PreCodes {
		vf := fmt.Sprintf("%s.pre_codes[%d]", field, j)
		switch {
		case m.answerType == AnswerText && q.QuestionID != QuestionAge:
			s := engine.NormalizeText(v.Text)
			if s == "" {
				return QuotaQualification{}, fault.Invalid(vf, "must not be empty")
			}
			if len(s) > 64 {
				return QuotaQualification{}, fault.Invalid(vf, "must be at most 64 characters")
			}
			qq.TextValues = append(qq.TextValues, s)
		default:
			n, err := strconv.Atoi(strings.TrimSpace(v.Text))
			if err != nil {
				return QuotaQualification{}, fault.Invalid(vf, "must be an integer")
			}
			if q.QuestionID == QuestionAge {
				if n < 0 || n > 120 {
					return QuotaQualification{}, fault.Invalid(vf, "must be an age between 0 and 120")
				}
			} else if m.answerType == AnswerText {
				// other numeric text questions are handled above; unreachable
			} else if !m.codes[n] {
				return QuotaQualification{}, fault.Invalid(field+".pre_codes", "contains %d, which is not an answer of question %d", n, q.QuestionID)
			}
			qq.PreCodes = append(qq.PreCodes, n)
		}
	}
	qq.PreCodes = dedup(qq.PreCodes)
	qq.TextValues = dedup(qq.TextValues)
	return qq, nil
}

func insertQualifications(ctx context.Context, tx pgx.Tx, quotaID int64, quals []QuotaQualification) error {
	if len(quals) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, q := range quals {
		codes, texts := q.PreCodes, q.TextValues
		if codes == nil {
			codes = []int{}
		}
		if texts == nil {
			texts = []string{}
		}
		b.Queue(`INSERT INTO quota_qualifications (quota_id, question_id, pre_codes, text_values) VALUES ($1, $2, $3, $4)`,
			quotaID, q.QuestionID, codes, texts)
	}
	return tx.SendBatch(ctx, b).Close()
}

// dedup drops repeated values, keeping the first of each in order.
func dedup[T comparable](in []T) []T {
	if len(in) < 2 {
		return in
	}
	seen := make(map[T]bool, len(in))
	out := in[:0]
	for _, v := range in {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
