package persistence

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/outcome"
)

// CSVExport is an open CSV export: its header is known and its first row has been read;
// the remaining rows are read from PostgreSQL as WriteCSV writes them, so memory does not
// grow with the number of rows. An export holds a pool connection until WriteCSV returns
// or Close is called.
type CSVExport struct {
	Header []string
	rows   pgx.Rows
	row    func(rows pgx.Rows, rec []string) ([]string, error) // nil: each row is one CSV record (openLineExport)
	ready  bool
}

// openExport runs query and reads its first row, so that a failing query is reported before
// anything is written.
func (db *InsightStore) openExport(ctx context.Context, header []string, query string, args []any,
	row func(rows pgx.Rows, rec []string) ([]string, error)) (*CSVExport, error) {
	rows, err := db.Pool.Query(ctx, query, args...)
	if err != nil {
		return nil, classify(err)
	}
	e := &CSVExport{Header: header, rows: rows, row: row}
	if e.ready = rows.Next(); !e.ready {
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, classify(err)
		}
	}
	return e, nil
}

// openLineExport is openExport for a query whose one column is a whole CSV record (fields
// quoted by csvFieldSQL where they may need it): WriteCSV copies each from the driver's
// buffer to the writer, so that a row allocates nothing and a long export leaves no garbage.
func (db *InsightStore) openLineExport(ctx context.Context, header []string, query string, args []any) (*CSVExport, error) {
	return db.openExport(ctx, header, query, args, nil)
}

// csvFieldSQL is the SQL of text expression expr as a CSV field (RFC 4180): quoted, quotes
// doubled, when it holds a quote, a comma or a line break.
func csvFieldSQL(expr string) string {
	return `CASE WHEN ` + expr + ` ~ '[",\r\n]' THEN '"' || replace(` + expr + `, '"', '""') || '"' ELSE ` + expr + ` END`
}

// WriteCSV writes the header and then every row to w, and releases the export. It returns
// the number of data rows written. A write error (the client went away) stops the query.
func (e *CSVExport) WriteCSV(out io.Writer) (int64, error) {
	defer e.rows.Close()
	w := csv.NewWriter(out)
	if err := w.Write(e.Header); err != nil {
		return 0, err
	}
	if e.row == nil {
		return e.writeLines(w, out)
	}
	var n int64
	rec := make([]string, 0, len(e.Header))
	for ok := e.ready; ok; ok = e.rows.Next() {
		var err error
		if rec, err = e.row(e.rows, rec[:0]); err != nil {
			return n, err
		}
		for i := range rec {
			rec[i] = SpreadsheetText(rec[i])
		}
		if err := w.Write(rec); err != nil {
			return n, err
		}
		n++
	}
	if err := e.rows.Err(); err != nil {
		return n, classify(err)
	}
	w.Flush()
	return n, w.Error()
}

// SpreadsheetText returns a CSV field so that a spreadsheet shows it as text: a field that
// begins with =, +, -, @, a tab or a carriage return and is not a number gets a leading
// apostrophe. Exports carry text from outside (participants' answers, names), which a
// spreadsheet would otherwise run as a formula (CSV injection). Other fields are returned
// unchanged, without allocating.
func SpreadsheetText(field string) string {
	if field == "" {
		return field
	}
	switch field[0] {
	case '=', '+', '-', '@', '\t', '\r':
	default:
		return field
	}
	if _, err := strconv.ParseFloat(field, 64); err == nil {
		return field
	}
	return "'" + field
}

// writeLines writes the rows of a line export after the header w holds.
func (e *CSVExport) writeLines(w *csv.Writer, out io.Writer) (int64, error) {
	w.Flush()
	if err := w.Error(); err != nil {
		return 0, err
	}
	var n int64
	nl := []byte{'\n'}
	for ok := e.ready; ok; ok = e.rows.Next() {
		if _, err := out.Write(e.rows.RawValues()[0]); err != nil {
			return n, err
		}
		if _, err := out.Write(nl); err != nil {
			return n, err
		}
		n++
	}
	return n, classify(e.rows.Err())
}

// Close releases an export that will not be written.
func (e *CSVExport) Close() { e.rows.Close() }

// DemographicsFilter selects the sessions of a demographics export: those with one of the
// transaction ids or whose respondent has one of the player ids (the buyer's
// {RESPONDENT_ID} values). Both empty: every session.
type DemographicsFilter struct {
	TransactionIDs []string
	PlayerIDs      []string
}

// OpenDemographicsExport starts the demographics export of one of the buyer's campaigns
// (another buyer's is not found): one row per session of the campaign, any outcome, test
// sessions aside, in session order. Columns: transaction_id, respondent_id, status, then
// one per standard question of the campaign's country language that at least one of the
// exported respondents answered, in catalog order, titled by the qualification name.
func (db *InsightStore) OpenDemographicsExport(ctx context.Context, buyerID, campaignID int64, f DemographicsFilter) (*CSVExport, error) {
	var cl int
	err := db.Pool.QueryRow(ctx, `SELECT country_language_id FROM campaigns WHERE id = $1 AND buyer_id = $2`,
		campaignID, buyerID).Scan(&cl)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fault.NotFound("campaign not found")
	} else if err != nil {
		return nil, classify(err)
	}
	where, args := demographicsWhere(buyerID, campaignID, f)
	cols, err := answeredQuestions(ctx, db.Pool, cl, where, args)
	if err != nil {
		return nil, err
	}
	qids := make([]int32, len(cols))
	for i, c := range cols {
		qids[i] = c.QuestionID
	}
	answers, err := db.answerTexts(ctx, cl, qids)
	if err != nil {
		return nil, err
	}
	header, sel := demographicsSelect(cols, where)
	return db.openExport(ctx, header, sel, args, demographicsRow(cols, answers))
}

// demographicsWhere is the condition on sessions s that selects those of a demographics
// export of the buyer's campaign by f, and its arguments.
func demographicsWhere(buyerID, campaignID int64, f DemographicsFilter) (string, []any) {
	where := `s.campaign_id = $1 AND NOT s.is_test`
	args := []any{campaignID}
	var or []string
	if len(f.TransactionIDs) > 0 {
		args = append(args, f.TransactionIDs)
		or = append(or, `s.tid = ANY($`+strconv.Itoa(len(args))+`)`)
	}
	if len(f.PlayerIDs) > 0 {
		args = append(args, buyerID, f.PlayerIDs)
		or = append(or, `s.participant_id = ANY(ARRAY(SELECT r.participant_id FROM respondents r WHERE r.buyer_id = $`+
			strconv.Itoa(len(args)-1)+` AND r.respondent_id = ANY($`+strconv.Itoa(len(args))+`)))`)
	}
	if len(or) > 0 {
		where += ` AND (` + strings.Join(or, ` OR `) + `)`
	}
	return where, args
}

// answeredQuestions lists the standard questions of country language cl that at least one
// respondent of the sessions where selects (with args) answered, in catalog order: the
// questions, then which of them were answered (one pass over the sessions).
func answeredQuestions(ctx context.Context, q querier, cl int, where string, args []any) ([]ResultColumn, error) {
	rows, err := q.Query(ctx, `SELECT question_id, name, answer_type::int FROM qualifications
		WHERE country_language_id = $1 AND buyer_id IS NULL AND answer_type IN (0, 1, 5) ORDER BY position, question_id`, cl)
	if err != nil {
		return nil, classify(err)
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ResultColumn, error) {
		var c ResultColumn
		err := r.Scan(&c.QuestionID, &c.Title, &c.AnswerType)
		c.ID, c.Kind = c.Title, ColumnAnswer
		return c, err
	})
	if err != nil {
		return nil, classify(err)
	}
	var cols []ResultColumn
	if len(all) > 0 {
		var probe strings.Builder
		probe.WriteString(`SELECT ARRAY[`)
		for i, c := range all {
			if i > 0 {
				probe.WriteString(`, `)
			}
			probe.WriteString(`COALESCE(bool_or(p.profile ? '` + strconv.Itoa(int(c.QuestionID)) + `'), false)`)
		}
		probe.WriteString(`] FROM sessions s JOIN participants p ON p.id = s.participant_id WHERE ` + where)
		var answered []bool
		if err := q.QueryRow(ctx, probe.String(), args...).Scan(&answered); err != nil {
			return nil, classify(err)
		}
		for i, c := range all {
			if answered[i] {
				cols = append(cols, c)
			}
		}
	}
	return cols, nil
}

// demographicsSelect is the header of a demographics export with the columns cols, and
// the statement that reads its rows from the sessions where selects.
func demographicsSelect(cols []ResultColumn, where string) ([]string, string) {
	header := []string{"transaction_id", "respondent_id", "status"}
	var sel strings.Builder
	sel.WriteString(`SELECT s.tid, ` + panelistIDSQL + `, COALESCE(s.outcome, ''), s.rejected, s.overage, s.released_at IS NOT NULL`)
	for _, c := range cols {
		header = append(header, c.Title)
		sel.WriteString(`, (s.profile -> '` + strconv.Itoa(int(c.QuestionID)) + `')::text`)
	}
	header = append(header, "speeder") // last: quality.go
	sel.WriteString(`, ` + speederSQL)
	sel.WriteString(` FROM ` + sessionsInOrder(where) + ` ORDER BY s.id`)
	return header, sel.String()
}

// demographicsRow turns a row of demographicsSelect's statement into a CSV record, its
// answers to cols in words (answers).
func demographicsRow(cols []ResultColumn, answers answerTexts) func(rows pgx.Rows, rec []string) ([]string, error) {
	var (
		tid, respondent, outcome    string
		rejected, overage, released bool
		speeder                     bool
		vals                        = make([]*string, len(cols))
		dest                        = append([]any{&tid, &respondent, &outcome, &rejected, &overage, &released}, make([]any, len(cols))...)
		fm                          answerFormatter
	)
	for i := range vals {
		dest[6+i] = &vals[i]
	}
	dest = append(dest, &speeder)
	return func(rows pgx.Rows, rec []string) ([]string, error) {
		if err := rows.Scan(dest...); err != nil {
			return rec, err
		}
		rec = append(rec, tid, respondent, sessionStatus(outcome, rejected, overage, released))
		for i, c := range cols {
			var raw string
			if vals[i] != nil {
				raw = *vals[i]
			}
			if c.QuestionID == QuestionAge {
				_, exact := fm.age(raw)
				rec = append(rec, exact)
				continue
			}
			rec = append(rec, fm.answer(answers, c, raw))
		}
		return append(rec, speederText(speeder)), nil
	}
}

// sessionStatus is the export status of a session.
func sessionStatus(decided string, rejected, overage, released bool) string {
	switch decided {
	case outcome.Complete:
		return completeStatus(rejected, overage)
	case outcome.OverQuota:
		return ResultOverQuota
	case outcome.QualityTerm:
		return ResultQualityTerm
	case outcome.Disqualified:
		return ResultDisqualify
	}
	if released {
		return ResultAbandoned
	}
	return ResultInProgress
}

// completeStatus is the export status of a session whose outcome is complete: rejected,
// an overage (a late complete its quotas or daily cap had no room for, docs/rules.md §5: not charged),
// or an accepted complete.
func completeStatus(rejected, overage bool) string {
	switch {
	case rejected:
		return ResultRejected
	case overage:
		return ResultOverage
	}
	return ResultComplete
}

// answerFormatter turns stored answers (a JSON array of pre_codes, numbers or strings) into
// CSV values, reusing its buffers from row to row.
type answerFormatter struct {
	items []jsonItem
	codes []int32
	texts []string
}

type jsonItem struct {
	num   int64
	str   string
	isNum bool
}

// answer formats one answer: select questions (and custom screeners) as the option texts of
// the pre_codes in answer order joined by "; " (an unknown pre_code as its number), other
// questions as their values joined by "; ".
func (f *answerFormatter) answer(answers answerTexts, c ResultColumn, raw string) string {
	if raw == "" {
		return ""
	}
	f.items = parseJSONArray(f.items[:0], raw)
	if len(f.items) == 0 {
		return ""
	}
	if c.Kind == ColumnScreener || c.AnswerType == AnswerSingle || c.AnswerType == AnswerMulti {
		f.codes = f.codes[:0]
		for _, it := range f.items {
			if it.isNum {
				f.codes = append(f.codes, int32(it.num))
			} else if n, err := strconv.ParseInt(it.str, 10, 32); err == nil {
				f.codes = append(f.codes, int32(n))
			}
		}
		slices.SortFunc(f.codes, func(a, b int32) int {
			ra, rb := answers[answerKey(c.QuestionID, a)].rank, answers[answerKey(c.QuestionID, b)].rank
			if ra != rb {
				return int(ra - rb)
			}
			return int(a - b)
		})
		f.texts = f.texts[:0]
		for _, code := range f.codes {
			if a, ok := answers[answerKey(c.QuestionID, code)]; ok {
				f.texts = append(f.texts, a.text)
			} else {
				f.texts = append(f.texts, strconv.Itoa(int(code)))
			}
		}
	} else {
		f.texts = f.texts[:0]
		for _, it := range f.items {
			if it.isNum {
				f.texts = append(f.texts, strconv.FormatInt(it.num, 10))
			} else {
				f.texts = append(f.texts, it.str)
			}
		}
	}
	if len(f.texts) == 1 {
		return f.texts[0]
	}
	return strings.Join(f.texts, "; ")
}

// age formats an AGE answer as its band and its exact value.
func (f *answerFormatter) age(raw string) (band, exact string) {
	if raw == "" {
		return "", ""
	}
	f.items = parseJSONArray(f.items[:0], raw)
	if len(f.items) == 0 {
		return "", ""
	}
	n := f.items[0].num
	if !f.items[0].isNum {
		v, err := strconv.ParseInt(strings.TrimSpace(f.items[0].str), 10, 32)
		if err != nil {
			return "", f.items[0].str
		}
		n = v
	}
	return AgeBand(int(n)), strconv.FormatInt(n, 10)
}

// parseJSONArray appends the elements of a JSON array of integers and strings (the stored
// profile form) to out. Other values (floats, nested values) are kept as their text; a
// value that is not an array yields nothing.
func parseJSONArray(out []jsonItem, s string) []jsonItem {
	i := skipSpace(s, 0)
	if i >= len(s) || s[i] != '[' {
		return out
	}
	i++
	for {
		i = skipSpace(s, i)
		if i >= len(s) || s[i] == ']' {
			return out
		}
		if s[i] == ',' {
			i++
			continue
		}
		if s[i] == '"' {
			j, esc := i+1, false
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					esc = true
					j++
				}
				j++
			}
			if j >= len(s) {
				return out
			}
			str := s[i+1 : j]
			if esc {
				var u string
				if json.Unmarshal([]byte(s[i:j+1]), &u) == nil {
					str = u
				}
			}
			out = append(out, jsonItem{str: str})
			i = j + 1
			continue
		}
		j := i
		for j < len(s) && s[j] != ',' && s[j] != ']' && s[j] != ' ' && s[j] != '\n' && s[j] != '\t' && s[j] != '\r' {
			j++
		}
		tok := s[i:j]
		if n, err := strconv.ParseInt(tok, 10, 64); err == nil {
			out = append(out, jsonItem{num: n, isNum: true})
		} else if tok != "null" {
			out = append(out, jsonItem{str: tok})
		}
		i = j
	}
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r') {
		i++
	}
	return i
}
