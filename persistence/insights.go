package persistence

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/internal/fault"
)

// InsightsPageSize is the number of projects on one page of the insights project list.
const InsightsPageSize = 30

// InsightsProject is a project as the insights interface reads it.
type InsightsProject struct {
	ID          int64
	Name        string
	ProjectType string // one_time or recurring
	Campaigns   []InsightsCampaign
}

// InsightsCampaign is one campaign (wave) of a project.
type InsightsCampaign struct {
	ID          int64
	Status      int        // the campaign's integer status
	CompletedAt *time.Time // when it last became complete; nil when it is not complete
	WaveNumber  int        // 1-based position among the project's campaigns
	// HasResponses: at least one session reached complete (rejected ones included), so the
	// results CSV has rows.
	HasResponses bool
}

// InsightsStatus is the insights string of an integer campaign status (docs/rules.md §4).
func InsightsStatus(status int) string {
	switch status {
	case StatusActive:
		return "active"
	case StatusComplete, StatusReconciled:
		return "complete"
	case StatusArchived:
		return "archived"
	default: // 5 paused, 7 system paused
		return "paused"
	}
}

// InsightsProjects lists one page (1-based) of the buyer's non-draft projects in id order,
// only those of projectType when it is not empty, with their campaigns in wave order. It
// also returns how many projects match in all.
func (db *InsightStore) InsightsProjects(ctx context.Context, buyerID int64, projectType string, page int) ([]InsightsProject, int, error) {
	var total int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM projects
		WHERE buyer_id = $1 AND NOT is_draft AND ($2 = '' OR project_type = $2)`, buyerID, projectType).Scan(&total); err != nil {
		return nil, 0, classify(err)
	}
	out := []InsightsProject{}
	if page < 1 || page-1 >= (total+InsightsPageSize-1)/InsightsPageSize {
		return out, total, nil // past the last page (no multiplication: page may be huge)
	}
	offset := (page - 1) * InsightsPageSize
	rows, err := db.Pool.Query(ctx, `SELECT id, name, project_type FROM projects
		WHERE buyer_id = $1 AND NOT is_draft AND ($2 = '' OR project_type = $2)
		ORDER BY id LIMIT $3 OFFSET $4`, buyerID, projectType, InsightsPageSize, offset)
	if err != nil {
		return nil, 0, classify(err)
	}
	out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (InsightsProject, error) {
		var p InsightsProject
		err := r.Scan(&p.ID, &p.Name, &p.ProjectType)
		return p, err
	})
	if err != nil {
		return nil, 0, classify(err)
	}
	if err := db.fillInsightsCampaigns(ctx, out); err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// InsightsProject reads one of the buyer's non-draft projects with its campaigns; a draft
// or another buyer's project is not found.
func (db *InsightStore) InsightsProject(ctx context.Context, buyerID, projectID int64) (InsightsProject, error) {
	p := InsightsProject{ID: projectID}
	err := db.Pool.QueryRow(ctx, `SELECT name, project_type FROM projects WHERE id = $1 AND buyer_id = $2 AND NOT is_draft`,
		projectID, buyerID).Scan(&p.Name, &p.ProjectType)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, fault.NotFound("project not found")
	} else if err != nil {
		return p, classify(err)
	}
	ps := []InsightsProject{p}
	if err := db.fillInsightsCampaigns(ctx, ps); err != nil {
		return p, err
	}
	return ps[0], nil
}

// fillInsightsCampaigns reads the campaigns of every project in one statement.
func (db *InsightStore) fillInsightsCampaigns(ctx context.Context, ps []InsightsProject) error {
	if len(ps) == 0 {
		return nil
	}
	ids := make([]int64, len(ps))
	at := make(map[int64]int, len(ps))
	for i := range ps {
		ids[i] = ps[i].ID
		at[ps[i].ID] = i
		ps[i].Campaigns = []InsightsCampaign{}
	}
	rows, err := db.Pool.Query(ctx, `SELECT c.project_id, c.id, c.status::int,
			CASE WHEN c.status IN (3, 4, 6) THEN c.completed_at END,
			EXISTS (SELECT 1 FROM sessions s WHERE s.campaign_id = c.id AND s.outcome = 'complete' AND NOT s.is_test)
		FROM campaigns c WHERE c.project_id = ANY($1) ORDER BY c.project_id, c.wave_number, c.id`, ids)
	if err != nil {
		return classify(err)
	}
	defer rows.Close()
	for rows.Next() {
		var pid int64
		var c InsightsCampaign
		if err := rows.Scan(&pid, &c.ID, &c.Status, &c.CompletedAt, &c.HasResponses); err != nil {
			return classify(err)
		}
		p := &ps[at[pid]]
		c.WaveNumber = len(p.Campaigns) + 1
		p.Campaigns = append(p.Campaigns, c)
	}
	return classify(rows.Err())
}

// ColumnKind says how a results column is filled.
type ColumnKind uint8

// Kinds of results columns.
const (
	ColumnBase     ColumnKind = iota // id, time, panelist_id, status
	ColumnAnswer                     // a standard question's answer: option texts, or the text
	ColumnAgeBand                    // AGE as a band ("25-34")
	ColumnAgeRaw                     // AGE as the number given
	ColumnScreener                   // a custom screener answer: option texts
)

// ResultColumn is one column of a results CSV: its id (the CSV header), its title (the
// columns map) and where its values come from.
type ResultColumn struct {
	ID, Title  string
	Kind       ColumnKind
	QuestionID int32
	AnswerType int
}

// answerTexts maps (question id, pre_code) to the answer's option text and its rank in the
// question's answer order.
type answerTexts map[int64]struct {
	text string
	rank int32
}

func answerKey(q, code int32) int64 { return int64(q)<<32 | int64(uint32(code)) }

// ResultLayout is the column layout of one campaign's results, in column order.
type ResultLayout struct {
	CampaignID int64
	Columns    []ResultColumn
	answers    answerTexts
}

// Base columns of the results CSV (docs/rules.md §8), in order.
var resultBaseColumns = []ResultColumn{
	{ID: "id", Title: "Session ID", Kind: ColumnBase},
	{ID: "time", Title: "Session start (RFC 3339, UTC)", Kind: ColumnBase},
	{ID: "panelist_id", Title: "Panelist ID", Kind: ColumnBase},
	{ID: "status", Title: "Status", Kind: ColumnBase},
}

// CampaignResultLayout reads the column layout of the results of campaignID, which must be a
// campaign of projectID, a non-draft project of the buyer (else not found): the base columns,
// pq_<id> for each standard question of the campaign's country language in catalog order
// (AGE also as pq_42_non_bucketed), then tq_<id> for each custom screener question attached
// to the campaign.
func (db *InsightStore) CampaignResultLayout(ctx context.Context, buyerID, projectID, campaignID int64) (ResultLayout, error) {
	var cl int
	err := db.Pool.QueryRow(ctx, `SELECT c.country_language_id FROM campaigns c JOIN projects p ON p.id = c.project_id
		WHERE c.id = $1 AND c.project_id = $2 AND c.buyer_id = $3 AND p.buyer_id = $3 AND NOT p.is_draft`,
		campaignID, projectID, buyerID).Scan(&cl)
	if errors.Is(err, pgx.ErrNoRows) {
		return ResultLayout{}, fault.NotFound("campaign not found")
	} else if err != nil {
		return ResultLayout{}, classify(err)
	}
	l := ResultLayout{CampaignID: campaignID, Columns: slices.Clone(resultBaseColumns)}
	rows, err := db.Pool.Query(ctx, `SELECT q.question_id, q.question_text, q.answer_type::int, false, q.position, 0::bigint
		FROM qualifications q WHERE q.country_language_id = $1 AND q.buyer_id IS NULL AND q.answer_type IN (0, 1, 5)
		UNION ALL
		SELECT q.question_id, q.question_text, q.answer_type::int, true, 0, min(cq.id)
		FROM campaign_qualifications cq JOIN qualifications q ON q.question_id = cq.question_id AND q.buyer_id = $3
		WHERE cq.campaign_id = $2 GROUP BY 1, 2, 3
		ORDER BY 4, 5, 6, 1`, cl, campaignID, buyerID)
	if err != nil {
		return ResultLayout{}, classify(err)
	}
	var qids []int32
	for rows.Next() {
		var c ResultColumn
		var custom bool
		var pos int
		var seq int64
		if err := rows.Scan(&c.QuestionID, &c.Title, &c.AnswerType, &custom, &pos, &seq); err != nil {
			rows.Close()
			return ResultLayout{}, classify(err)
		}
		id := strconv.Itoa(int(c.QuestionID))
		qids = append(qids, c.QuestionID)
		switch {
		case custom:
			c.ID, c.Kind = "tq_"+id, ColumnScreener
			l.Columns = append(l.Columns, c)
		case c.QuestionID == QuestionAge:
			c.ID, c.Kind = "pq_"+id, ColumnAgeBand
			raw := c
			raw.ID, raw.Title, raw.Kind = "pq_"+id+"_non_bucketed", c.Title+" (exact value)", ColumnAgeRaw
			l.Columns = append(l.Columns, c, raw)
		default:
			c.ID, c.Kind = "pq_"+id, ColumnAnswer
			l.Columns = append(l.Columns, c)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return ResultLayout{}, classify(err)
	}
	l.Columns = append(l.Columns, speederColumn) // last (quality.go)
	if l.answers, err = db.answerTexts(ctx, cl, qids); err != nil {
		return ResultLayout{}, err
	}
	return l, nil
}

// answerTexts loads the option texts of the questions' answers in one country language.
func (db *InsightStore) answerTexts(ctx context.Context, cl int, qids []int32) (answerTexts, error) {
	out := answerTexts{}
	if len(qids) == 0 {
		return out, nil
	}
	rows, err := db.Pool.Query(ctx, `SELECT question_id, pre_code, option_text,
			(row_number() OVER (PARTITION BY question_id ORDER BY position, pre_code))::int
		FROM qualification_answers WHERE country_language_id = $1 AND question_id = ANY($2)`, cl, qids)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	for rows.Next() {
		var q, code, rank int32
		var text string
		if err := rows.Scan(&q, &code, &text, &rank); err != nil {
			return nil, classify(err)
		}
		out[answerKey(q, code)] = struct {
			text string
			rank int32
		}{text, rank}
	}
	return out, classify(rows.Err())
}

// Status values of the CSV exports.
const (
	ResultComplete    = "Complete"
	ResultRejected    = "Rejected"
	ResultOverage     = "Overage"
	ResultOverQuota   = "Over quota"
	ResultQualityTerm = "Quality term"
	ResultDisqualify  = "Disqualified"
	ResultInProgress  = "In progress"
	ResultAbandoned   = "Abandoned"
)

// panelistIDSQL is the buyer-facing {RESPONDENT_ID} of session s: the one stored with the
// session, else the buyer's respondent id of its participant.
const panelistIDSQL = `COALESCE(NULLIF(s.respondent_id, ''), (SELECT r.respondent_id FROM respondents r
	WHERE r.buyer_id = s.buyer_id AND r.participant_id = s.participant_id), '')`

// sessionsInOrder is the sessions matching where, in id order, each with its participant's
// profile, as a subquery named s. The profile is read row by row through the primary key:
// the rows stream from the first one on, where a join would let the planner sort the whole
// campaign (on disk, for a large one) before the first row.
func sessionsInOrder(where string) string {
	return `(SELECT s.id, s.tid, s.entered_at, s.respondent_id, s.buyer_id, s.participant_id, s.outcome, s.rejected, s.overage,
			s.released_at, (SELECT p.profile FROM participants p WHERE p.id = s.participant_id) AS profile
		FROM sessions s WHERE ` + where + ` ORDER BY s.id OFFSET 0) s`
}

// OpenCampaignResults starts reading the results of the campaign laid out by l: one row per
// session that reached complete, in session order. The query runs under ctx until the export
// is written or closed; ctx must outlive the request that asked for it when the export is
// streamed after the handler returns.
func (db *InsightStore) OpenCampaignResults(ctx context.Context, l ResultLayout) (*CSVExport, error) {
	var sel strings.Builder
	sel.WriteString(`SELECT s.tid, s.entered_at, ` + panelistIDSQL + `, s.rejected, s.overage`)
	// One value per question: the profile's JSON array, or a screener answer's pre_codes.
	var qcols []ResultColumn
	for _, c := range l.Columns {
		switch c.Kind {
		case ColumnAnswer, ColumnAgeBand:
			sel.WriteString(`, (s.profile -> '` + strconv.Itoa(int(c.QuestionID)) + `')::text`)
			qcols = append(qcols, c)
		case ColumnSpeeder:
			sel.WriteString(`, ` + speederSQL + `::text`)
			qcols = append(qcols, c)
		case ColumnScreener:
			sel.WriteString(`, (SELECT array_to_json(sa.pre_codes)::text FROM screener_answers sa WHERE sa.session_id = s.id AND sa.question_id = ` +
				strconv.Itoa(int(c.QuestionID)) + `)`)
			qcols = append(qcols, c)
		}
	}
	sel.WriteString(` FROM ` + sessionsInOrder(`s.campaign_id = $1 AND s.outcome = 'complete' AND NOT s.is_test`) + ` ORDER BY s.id`)

	header := make([]string, len(l.Columns))
	for i, c := range l.Columns {
		header[i] = c.ID
	}
	var (
		tid, panelist string
		entered       time.Time
		rejected      bool
		overage       bool
		vals          = make([]*string, len(qcols))
		dest          = append([]any{&tid, &entered, &panelist, &rejected, &overage}, make([]any, len(qcols))...)
		f             answerFormatter
	)
	for i := range vals {
		dest[5+i] = &vals[i]
	}
	row := func(rows pgx.Rows, rec []string) ([]string, error) {
		if err := rows.Scan(dest...); err != nil {
			return rec, err
		}
		rec = append(rec, tid, entered.UTC().Format(time.RFC3339), panelist, completeStatus(rejected, overage))
		for i, c := range qcols {
			var raw string
			if vals[i] != nil {
				raw = *vals[i]
			}
			if c.Kind == ColumnSpeeder {
				rec = append(rec, raw)
				continue
			}
			if c.Kind == ColumnAgeBand {
				band, exact := f.age(raw)
				rec = append(rec, band, exact)
				continue
			}
			rec = append(rec, f.answer(l.answers, c, raw))
		}
		return rec, nil
	}
	return db.openExport(ctx, header, sel.String(), []any{l.CampaignID}, row)
}

// AgeBand is the insights band of an age.
func AgeBand(age int) string {
	switch {
	case age < 18:
		return "Under 18"
	case age <= 24:
		return "18-24"
	case age <= 34:
		return "25-34"
	case age <= 44:
		return "35-44"
	case age <= 54:
		return "45-54"
	case age <= 64:
		return "55-64"
	default:
		return "65+"
	}
}
