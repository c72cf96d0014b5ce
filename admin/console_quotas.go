package admin

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/pagekit"
	"github.com/switchboard/switchboard/persistence"
)

// The console's quota form: a quota's target and its targeting chosen from the
// qualification catalog of the campaign's country language (answers as checkboxes, age as a
// range, ZIP codes and other text answers as a list), saved through POST or PUT
// .../campaign_quotas' own code, and its feasibility estimated through POST
// /campaigns/realtime_feasibility's own code ("Check feasibility").

// consoleFormCSP is the quota form's Content-Security-Policy: the console's, with its one
// script (feasibility.js, the live estimate) from this origin, and that script's posts.
const consoleFormCSP = "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// feasibilityScript is the quota form's live estimate: progressive, the form works without.
//
//go:embed console/feasibility.js
var feasibilityScript []byte

// consoleFeasibilityJS serves feasibility.js.
func (a *workspacePages) consoleFeasibilityJS(ctx *fasthttp.RequestCtx) {
	ctx.Response.Header.Set("Cache-Control", "public, max-age=3600")
	ctx.Response.Header.Set("X-Content-Type-Options", "nosniff")
	ctx.SetContentType("text/javascript; charset=utf-8")
	ctx.SetBody(feasibilityScript)
}

// renderQuotaForm renders the quota form with status, under consoleFormCSP.
func (a *workspacePages) renderQuotaForm(ctx *fasthttp.RequestCtx, status int, f *quotaForm) {
	a.render(ctx, status, "quota_form", f)
	ctx.Response.Header.Set("Content-Security-Policy", consoleFormCSP)
}

// Ages an age range may span: the ages quotas accept (docs/rules.md §3).
const (
	youngestAge = 0
	oldestAge   = 120
)

// targetQuestion is one question of the catalog on the quota form.
type targetQuestion struct {
	ID       int
	Name     string
	Text     string
	Age      bool     // a from–to range
	List     bool     // a list of text answers (ZIP codes)
	Multi    bool     // a multi-select question (its checkboxes mean any of them)
	Answers  []choice // a select question's answers
	From, To string   // age
	Values   string   // the list, one a line
	Error    string
}

// Open reports whether the question's section starts open: it targets something or was
// refused.
func (q targetQuestion) Open() bool {
	if q.Error != "" || q.From != "" || q.To != "" || strings.TrimSpace(q.Values) != "" {
		return true
	}
	for _, a := range q.Answers {
		if a.Checked {
			return true
		}
	}
	return false
}

// FieldID is the input the question's error links to.
func (q targetQuestion) FieldID() string {
	switch {
	case q.Age:
		return fmt.Sprintf("q%d-from", q.ID)
	case q.List:
		return fmt.Sprintf("q%d", q.ID)
	case len(q.Answers) > 0:
		return q.Answers[0].ID
	}
	return fmt.Sprintf("q%d", q.ID)
}

// quotaEstimate is the feasibility the form shows: this quota's and the campaign's with it.
type quotaEstimate struct {
	Quota, Campaign, Days int
	Message               string
}

// quotaForm is the quota form page.
type quotaForm struct {
	consoleBase
	C                      persistence.CampaignDetail
	QuotaID                int64 // 0: a new quota
	Action                 string
	Name, NumRespondents   string
	NameErr, NumErr        string
	IsGlobal, ClickBalance bool
	FlagErr                string
	Questions              []targetQuestion
	Estimate               *quotaEstimate
	EstimateErr            string
}

// quotaForm lays out the form of quota qid (0: a new one) of campaign c.
func (a *workspacePages) quotaForm(ctx *fasthttp.RequestCtx, s *consoleSession, c persistence.CampaignDetail, qid int64) (*quotaForm, error) {
	f := &quotaForm{consoleBase: s.base("New quota · " + c.Name), C: c, QuotaID: qid, NumRespondents: "100",
		Action: fmt.Sprintf("%s/campaigns/%d/quotas/new", ConsolePrefix, c.ID)}
	var stored persistence.Quota
	if qid != 0 {
		found := false
		for _, q := range c.CampaignQuotas {
			if q.ID == qid {
				stored, found = q, true
			}
		}
		if !found {
			return nil, fault.NotFound("quota not found")
		}
		f.Title = "Edit quota · " + c.Name
		f.Action = fmt.Sprintf("%s/campaigns/%d/quotas/%d/edit", ConsolePrefix, c.ID, qid)
		if stored.Name != nil {
			f.Name = *stored.Name
		}
		f.NumRespondents = strconv.Itoa(stored.NumRespondents)
		f.IsGlobal, f.ClickBalance = stored.IsGlobal, stored.IsClickBalanced
	}
	catalog, err := a.catalog.QualificationsWithAnswers(dbContext(ctx), s.Buyer.ID, c.CountryLanguageID)
	if err != nil {
		return nil, err
	}
	targeted := map[int]persistence.QuotaQualification{}
	for _, q := range stored.CampaignQualifications {
		targeted[q.QuestionID] = q
	}
	for _, q := range catalog {
		tq := targetQuestion{ID: q.QuestionID, Name: q.Name, Text: q.QuestionText}
		t := targeted[q.QuestionID]
		switch {
		case q.QuestionID == persistence.QuestionAge:
			tq.Age = true
			if n := len(t.PreCodes); n > 0 {
				lo, hi := t.PreCodes[0], t.PreCodes[0]
				for _, p := range t.PreCodes {
					lo, hi = min(lo, p), max(hi, p)
				}
				tq.From, tq.To = strconv.Itoa(lo), strconv.Itoa(hi)
			}
		case q.AnswerType == persistence.AnswerText:
			tq.List = true
			tq.Values = strings.Join(t.TextValues, "\n")
		default:
			tq.Multi = q.AnswerType == persistence.AnswerMulti
			for _, ans := range *q.Answers {
				ch := choice{ID: fmt.Sprintf("q%d-%d", q.QuestionID, ans.PreCode), Value: strconv.Itoa(ans.PreCode), Text: ans.OptionText}
				for _, p := range t.PreCodes {
					ch.Checked = ch.Checked || p == ans.PreCode
				}
				tq.Answers = append(tq.Answers, ch)
			}
		}
		f.Questions = append(f.Questions, tq)
	}
	return f, nil
}

// fill sets the form's values to what was posted.
func (f *quotaForm) fill(ctx *fasthttp.RequestCtx) {
	args := ctx.PostArgs()
	f.Name, f.NumRespondents = string(args.Peek("name")), string(args.Peek("num_respondents"))
	f.IsGlobal, f.ClickBalance = args.Has("is_global"), args.Has("is_click_balanced")
	for i := range f.Questions {
		q := &f.Questions[i]
		name := "q" + strconv.Itoa(q.ID)
		switch {
		case q.Age:
			q.From, q.To = string(args.Peek(name+"-from")), string(args.Peek(name+"-to"))
		case q.List:
			q.Values = string(args.Peek(name))
		default:
			posted := pagekit.PostValues(ctx, name)
			for j := range q.Answers {
				q.Answers[j].Checked = false
				for _, v := range posted {
					q.Answers[j].Checked = q.Answers[j].Checked || v == q.Answers[j].Value
				}
			}
		}
	}
}

// ageRange is an age range's pre_codes: every age from–to (an empty bound: the youngest or
// the oldest age), at most one more than a quota accepts; a bound that is not a whole
// number goes in as typed, for the API to refuse.
func ageRange(from, to string) []any {
	lo, hi := youngestAge, oldestAge
	if from != "" {
		n, err := strconv.Atoi(from)
		if err != nil {
			return []any{from}
		}
		lo = n
	}
	if to != "" {
		n, err := strconv.Atoi(to)
		if err != nil {
			return []any{to}
		}
		hi = n
	}
	out := []any{}
	for n := lo; n <= hi && len(out) <= maxIDs; n++ {
		out = append(out, n)
	}
	return out
}

// body is the JSON body of the quota routes of what was filled in, and the question of each
// of its campaign_qualifications.
func (f *quotaForm) body(create bool) ([]byte, []int) {
	out := map[string]any{"is_global": f.IsGlobal, "is_click_balanced": f.ClickBalance}
	if name := strings.TrimSpace(f.Name); name != "" {
		out["name"] = name
	} else if !create {
		out["name"] = nil
	}
	if n := strings.TrimSpace(f.NumRespondents); n != "" || !create {
		out["num_respondents"] = numberOrText(n)
	}
	quals := []any{}
	var index []int
	for i, q := range f.Questions {
		var codes []any
		switch {
		case q.Age:
			from, to := strings.TrimSpace(q.From), strings.TrimSpace(q.To)
			if from == "" && to == "" {
				continue
			}
			codes = ageRange(from, to)
		case q.List:
			for _, v := range strings.FieldsFunc(q.Values, func(r rune) bool { return r == '\n' || r == '\r' || r == ',' }) {
				if v = strings.TrimSpace(v); v != "" {
					codes = append(codes, v)
				}
			}
		default:
			for _, a := range q.Answers {
				if a.Checked {
					codes = append(codes, numberOrText(a.Value))
				}
			}
		}
		if len(codes) == 0 && !q.Age {
			continue
		}
		quals = append(quals, map[string]any{"question_id": q.ID, "pre_codes": codes})
		index = append(index, i)
	}
	out["campaign_qualifications"] = quals
	b, _ := json.Marshal(out) // strings, numbers and lists: no error
	return b, index
}

// refuse shows err, the API's refusal, next to the field it names (a targeting error next
// to its question, through index); false for an error that is not a refusal of the input.
func (f *quotaForm) refuse(err error, index []int) bool {
	fe := fault.As(err)
	if fe == nil || fe.Kind != fault.KindInvalid && fe.Kind != fault.KindConflict {
		return false
	}
	target := "num_respondents"
	switch baseField(fe.Field) {
	case "name":
		f.NameErr, target = fe.Message, "name"
	case "is_global", "is_click_balanced":
		f.FlagErr, target = fe.Message, fe.Field
	case "campaign_qualifications":
		var i int
		if _, err := fmt.Sscanf(fe.Field, "campaign_qualifications[%d]", &i); err == nil && i >= 0 && i < len(index) {
			q := &f.Questions[index[i]]
			q.Error, target = fe.Message, q.FieldID()
			break
		}
		f.NumErr = fe.Message
	default:
		f.NumErr = fe.Message
	}
	f.Errors = append(f.Errors, pagekit.FieldError{Field: target, Message: fe.Message})
	return true
}

// quotaFormOf is the form of the path's quota (edit) or of a new quota of the path's
// campaign.
func (a *workspacePages) quotaFormOf(ctx *fasthttp.RequestCtx, s *consoleSession, edit bool) (*quotaForm, error) {
	c, err := campaignOf(ctx, a.store, s)
	if err != nil {
		return nil, err
	}
	var qid int64
	if edit {
		if qid, err = pathID(ctx, "quota_id"); err != nil {
			return nil, err
		}
	}
	return a.quotaForm(ctx, s, c, qid)
}

func (a *workspacePages) consoleNewQuota(ctx *fasthttp.RequestCtx, s *consoleSession) error {
	return a.showQuotaForm(ctx, s, false)
}

func (a *workspacePages) consoleEditQuota(ctx *fasthttp.RequestCtx, s *consoleSession) error {
	return a.showQuotaForm(ctx, s, true)
}

func (a *workspacePages) showQuotaForm(ctx *fasthttp.RequestCtx, s *consoleSession, edit bool) error {
	f, err := a.quotaFormOf(ctx, s, edit)
	if err != nil {
		return err
	}
	a.renderQuotaForm(ctx, fasthttp.StatusOK, f)
	return nil
}

func (a *workspacePages) consoleCreateQuota(ctx *fasthttp.RequestCtx, s *consoleSession) error {
	return a.postQuota(ctx, s, false)
}

func (a *workspacePages) consoleSaveQuota(ctx *fasthttp.RequestCtx, s *consoleSession) error {
	return a.postQuota(ctx, s, true)
}

// postQuota saves the quota form through the API's create or update code, or with
// do=feasibility estimates it instead and shows the form again with the estimate.
func (a *workspacePages) postQuota(ctx *fasthttp.RequestCtx, s *consoleSession, edit bool) error {
	f, err := a.quotaFormOf(ctx, s, edit)
	if err != nil {
		return err
	}
	f.fill(ctx)
	if string(ctx.PostArgs().Peek("do")) == "feasibility" {
		return a.quotaFeasibilityForm(ctx, s, f)
	}
	body, index := f.body(!edit)
	done := "quota-added"
	if edit {
		_, err = a.quotas.changeQuota(dbContext(ctx), s.Buyer, f.C.ID, f.QuotaID, body)
		done = "quota-saved"
	} else {
		_, err = a.quotas.addQuota(dbContext(ctx), s.Buyer, f.C.ID, body)
	}
	if err != nil {
		if !f.refuse(err, index) {
			return err
		}
		a.renderQuotaForm(ctx, fasthttp.StatusUnprocessableEntity, f)
		return nil
	}
	a.seeOther(ctx, fmt.Sprintf("%s/campaigns/%d/edit?done=%s", ConsolePrefix, f.C.ID, done))
	return nil
}

// quotaFeasibilityForm estimates the campaign with the quota as filled in (in place of the
// stored one when editing) through the realtime feasibility route's code, and shows the form
// with this quota's estimate and the campaign's.
func (a *workspacePages) quotaFeasibilityForm(ctx *fasthttp.RequestCtx, s *consoleSession, f *quotaForm) error {
	c := f.C
	var quotas []json.RawMessage
	for _, q := range c.CampaignQuotas {
		if q.ID == f.QuotaID {
			continue
		}
		b, _ := json.Marshal(map[string]any{"num_respondents": q.NumRespondents, "is_global": q.IsGlobal,
			"campaign_qualifications": q.CampaignQualifications})
		quotas = append(quotas, b)
	}
	own, index := f.body(true)
	quotas = append(quotas, own)
	body, _ := json.Marshal(map[string]any{"incidence": c.Incidence, "length_of_interview": c.LengthOfInterview,
		"days_in_field": c.DaysInField, "country_language_id": c.CountryLanguageID, "campaign_quotas": quotas})
	ans, err := a.feasibility.realtime(ctx, s.Buyer, body)
	if err != nil {
		// The quota's own refusals name it campaign_quotas[n].…: shown as saving would.
		prefix := fmt.Sprintf("campaign_quotas[%d].", len(quotas)-1)
		if fe := fault.As(err); fe != nil && strings.HasPrefix(fe.Field, prefix) {
			field := strings.TrimPrefix(fe.Field, prefix)
			err = &fault.Error{Kind: fe.Kind, Field: field, Message: field + fe.Message[len(fe.Field):]}
		}
		if !f.refuse(err, index) {
			return err
		}
		a.renderQuotaForm(ctx, fasthttp.StatusUnprocessableEntity, f)
		return nil
	}
	est := &quotaEstimate{Campaign: ans.EstimatedCompletes, Days: ans.OverNumDays}
	if last := ans.CampaignQuotas[len(ans.CampaignQuotas)-1]; last.EstimatedCompletes != nil {
		est.Quota = *last.EstimatedCompletes
	} else {
		est.Message = last.Message
	}
	f.Estimate = est
	a.renderQuotaForm(ctx, fasthttp.StatusOK, f)
	return nil
}
