package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/internal/pagekit"
	"github.com/switchboard/switchboard/persistence"
)

// transactor runs fn in one database transaction (persistence DB).
type transactor interface {
	InOneTx(ctx context.Context, fn func(ctx context.Context) error) error
}

// workspacePages are the console's campaign workspace: the campaign, quota and screener
// forms, which store through the buyer interface's families.
type workspacePages struct {
	*console
	store         campaignStore
	screenerStore screenerStore
	catalog       questionCatalog
	suppliers     supplierList
	tx            transactor
	env           string
	campaigns     *campaignAPI
	quotas        *quotaAPI
	screeners     *screenerAPI
	feasibility   *feasibilityAPI
}

// The console's campaign workspace: the campaign form (create, edit, clone) with its supplier
// exclusions, and on the edit page the campaign's quotas (console_quotas.go), custom
// screeners and exclusions. Each form builds the JSON body of its API route from what was
// posted and calls that route's own code (newCampaign, changeCampaign, addQuota,
// changeQuota, attachScreener, exclude, realtime; the screener form, console_screeners.go):
// the same validation and the same store.
// A refusal shows the API's message, which names its field, next to that field, and stores
// nothing (a clone's campaign, quotas and screeners are one transaction, persistence.InOneTx).

// registerConsoleForms mounts the campaign workspace; buyer wraps a handler for a buyer
// session (its posts CSRF-checked and refused to read-only sessions).
func (a *workspacePages) registerConsoleForms(mux *httpio.Mux, buyer func(consoleHandler) fasthttp.RequestHandler) {
	mux.Handle("GET", ConsolePrefix+"/feasibility.js", a.consoleFeasibilityJS)
	p := ConsolePrefix + "/campaigns"
	mux.Handle("GET", p+"/new", buyer(a.writable(a.consoleNewCampaign)))
	mux.Handle("POST", p+"/new", buyer(a.consoleCreateCampaign))
	mux.Handle("GET", p+"/{id}/edit", buyer(a.writable(a.consoleEditCampaign)))
	mux.Handle("POST", p+"/{id}/edit", buyer(a.consoleSaveCampaign))
	mux.Handle("GET", p+"/{id}/clone", buyer(a.writable(a.consoleCloneForm)))
	mux.Handle("POST", p+"/{id}/clone", buyer(a.consoleClone))
	mux.Handle("POST", p+"/{id}/screeners", buyer(a.consoleAttachScreener))
	mux.Handle("GET", p+"/{id}/screeners/new", buyer(a.writable(a.consoleNewScreener)))
	mux.Handle("POST", p+"/{id}/screeners/new", buyer(a.consoleCreateScreener))
	mux.Handle("POST", p+"/{id}/screeners/{screener_id}/detach", buyer(a.consoleDetachScreener))
	mux.Handle("POST", p+"/{id}/exclusions", buyer(a.consoleExclude))
	mux.Handle("GET", p+"/{id}/quotas/new", buyer(a.writable(a.consoleNewQuota)))
	mux.Handle("POST", p+"/{id}/quotas/new", buyer(a.consoleCreateQuota))
	mux.Handle("GET", p+"/{id}/quotas/{quota_id}/edit", buyer(a.writable(a.consoleEditQuota)))
	mux.Handle("POST", p+"/{id}/quotas/{quota_id}/edit", buyer(a.consoleSaveQuota))
}

// writable refuses a form page to a read-only session (a read token): it could post nothing
// from it (page refuses its posts).
func (a *workspacePages) writable(h consoleHandler) consoleHandler {
	return func(ctx *fasthttp.RequestCtx, s *consoleSession) error {
		if s.readOnly() {
			a.refuseReadOnly(ctx)
			return nil
		}
		return h(ctx, s)
	}
}

// screenerRow is a custom screener question: attached (ID set, Answers the qualifying ones
// checked) or attachable.
type screenerRow struct {
	ID         int64
	QuestionID int
	Text       string
	Answers    []choice
}

// exclusionForm is the edit page's exclusion form and the answer of its last post.
type exclusionForm struct {
	PlayerIDs, TransactionIDs string
	PlayerErr, TransactionErr string
	Result                    *persistence.ExclusionResult
}

// workspace adds the edit page's other sections: quotas, screeners, exclusions.
func (a *workspacePages) workspace(ctx *fasthttp.RequestCtx, s *consoleSession, f *campaignForm) error {
	c := f.C
	f.Quotas = f.Quotas[:0]
	for i, q := range c.CampaignQuotas {
		label := fmt.Sprintf("Quota %d", i+1)
		if q.Name != nil && *q.Name != "" {
			label = *q.Name
		}
		f.Quotas = append(f.Quotas, quotaRow{Quota: q, Label: label})
	}
	buyerID := s.Buyer.ID
	catalog, err := a.catalog.QualificationsWithAnswers(dbContext(ctx), buyerID, c.CountryLanguageID)
	if err != nil {
		return err
	}
	attached := map[int]persistence.CampaignQualification{}
	for _, sc := range c.CustomCampaignQualifications {
		attached[sc.QuestionID] = sc
	}
	f.Screeners, f.Attachable = nil, nil
	for _, q := range catalog {
		if q.CountryLanguageID == nil { // a standard question: quotas target it
			continue
		}
		sc, on := attached[q.QuestionID]
		row := screenerRow{ID: sc.ID, QuestionID: q.QuestionID, Text: q.QuestionText}
		for _, ans := range *q.Answers {
			ch := choice{ID: fmt.Sprintf("screener-%d-%d", q.QuestionID, ans.PreCode), Value: strconv.Itoa(ans.PreCode), Text: ans.OptionText}
			for _, p := range sc.PreCodes {
				ch.Checked = ch.Checked || p == ans.PreCode
			}
			row.Answers = append(row.Answers, ch)
		}
		if on {
			f.Screeners = append(f.Screeners, row)
		} else {
			f.Attachable = append(f.Attachable, row)
		}
	}
	return nil
}

// consoleAttachScreener attaches a custom screener through POST
// /campaigns/{id}/campaign_qualifications' own code.
func (a *workspacePages) consoleAttachScreener(ctx *fasthttp.RequestCtx, s *consoleSession) error {
	f, err := a.editForm(ctx, s)
	if err != nil {
		return err
	}
	qid := string(ctx.PostArgs().Peek("question_id"))
	in := map[string]any{"question_id": numberOrText(qid)}
	if codes := pagekit.PostValues(ctx, "pre_code_values"); len(codes) > 0 { // none checked: left out, as the API names it
		in["pre_code_values"] = strings.Join(codes, ",")
	}
	body, _ := json.Marshal(in)
	if _, err := a.screeners.attachScreener(dbContext(ctx), s.Buyer, f.C.ID, body); err != nil {
		fe := fault.As(err)
		if fe == nil || fe.Kind != fault.KindInvalid {
			return err
		}
		n, _ := strconv.Atoi(qid)
		f.ScreenerErr = map[int]string{n: fe.Message}
		f.Errors = append(f.Errors, pagekit.FieldError{Field: "screener-" + qid, Message: fe.Message})
		a.render(ctx, fasthttp.StatusUnprocessableEntity, "campaign_form", f)
		return nil
	}
	a.seeOther(ctx, fmt.Sprintf("%s/campaigns/%d/edit?done=screener", ConsolePrefix, f.C.ID))
	return nil
}

// consoleDetachScreener removes a custom screener as DELETE
// /campaigns/{id}/campaign_qualifications/{qualification_id} does.
func (a *workspacePages) consoleDetachScreener(ctx *fasthttp.RequestCtx, s *consoleSession) error {
	cid, err := pathID(ctx, "id")
	if err != nil {
		return err
	}
	id, err := pathID(ctx, "screener_id")
	if err != nil {
		return err
	}
	if err := a.screenerStore.DetachCustomQualification(dbContext(ctx), s.Buyer.ID, cid, id); err != nil {
		return err
	}
	a.seeOther(ctx, fmt.Sprintf("%s/campaigns/%d/edit?done=detached", ConsolePrefix, cid))
	return nil
}

// idLines splits a textarea of ids, one a line (or separated by commas or spaces).
func idLines(v string) []string {
	out := strings.FieldsFunc(v, func(r rune) bool { return r == '\n' || r == '\r' || r == ',' || r == ' ' || r == '\t' })
	if out == nil {
		out = []string{}
	}
	return out
}

// consoleExclude excludes participants through POST /campaigns/{id}/campaign_exclusions'
// own code and shows its answer.
func (a *workspacePages) consoleExclude(ctx *fasthttp.RequestCtx, s *consoleSession) error {
	f, err := a.editForm(ctx, s)
	if err != nil {
		return err
	}
	ex := &f.Exclusion
	ex.PlayerIDs, ex.TransactionIDs = string(ctx.PostArgs().Peek("player_ids")), string(ctx.PostArgs().Peek("transaction_ids"))
	body, _ := json.Marshal(map[string]any{"player_ids": idLines(ex.PlayerIDs), "transaction_ids": idLines(ex.TransactionIDs)})
	res, err := a.campaigns.exclude(dbContext(ctx), s.Buyer, f.C.ID, body)
	if err != nil {
		fe := fault.As(err)
		if fe == nil || fe.Kind != fault.KindInvalid {
			return err
		}
		target := "player_ids"
		if baseField(fe.Field) == "transaction_ids" {
			ex.TransactionErr, target = fe.Message, "transaction_ids"
		} else {
			ex.PlayerErr = fe.Message
		}
		f.Errors = append(f.Errors, pagekit.FieldError{Field: target, Message: fe.Message})
		a.render(ctx, fasthttp.StatusUnprocessableEntity, "campaign_form", f)
		return nil
	}
	ex.Result = &res
	ex.PlayerIDs, ex.TransactionIDs = "", ""
	f.Notice = fmt.Sprintf("Excluded %d participants and %d sessions.", len(res.PlayerIDsExcluded), len(res.TransactionIDsExcluded))
	a.render(ctx, fasthttp.StatusOK, "campaign_form", f)
	return nil
}
