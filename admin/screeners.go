package admin

import (
	"context"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
)

// screenerStore is a buyer's custom screeners and their attachments to campaigns
// (persistence CampaignStore).
type screenerStore interface {
	CreateCustomQualification(ctx context.Context, buyerID int64, f persistence.CustomQualificationFields) (persistence.Qualification, error)
	CreateCustomAnswer(ctx context.Context, buyerID int64, questionID int, optionText string) (persistence.Answer, error)
	AttachCustomQualification(ctx context.Context, buyerID, campaignID int64, questionID int, codes []int) (persistence.CampaignQualification, error)
	UpdateCustomQualification(ctx context.Context, buyerID, campaignID, id int64, codes []int) (persistence.CampaignQualification, error)
	DetachCustomQualification(ctx context.Context, buyerID, campaignID, id int64) error
}

// screenerAPI serves custom screeners: questions, answers and their campaign attachments.
type screenerAPI struct {
	store screenerStore
}

// customQuestionBody is the body of POST /custom_qualifications.
type customQuestionBody struct {
	Name              *string `json:"name"`
	QuestionText      *string `json:"question_text"`
	AnswerType        *int    `json:"answer_type" range:"0,1" values:"0 (single select) or 1 (multi select)"`
	CountryLanguageID *int    `json:"country_language_id" range:"1"`
}

func (a *screenerAPI) createCustomQualification(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	q, err := a.newScreenerQuestion(dbContext(ctx), b, ctx.PostBody())
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusCreated, q)
	return nil
}

// newScreenerQuestion is POST /custom_qualifications once routed: body validated and stored.
// The console's screener form calls it too.
func (a *screenerAPI) newScreenerQuestion(ctx context.Context, b persistence.Buyer, body []byte) (persistence.Qualification, error) {
	var in customQuestionBody
	if err := httpio.DecodeJSON(body, &in); err != nil {
		return persistence.Qualification{}, err
	}
	text, err := requiredText("question_text", in.QuestionText, maxText)
	if err != nil {
		return persistence.Qualification{}, err
	}
	switch {
	case in.AnswerType == nil:
		return persistence.Qualification{}, fault.Invalid("answer_type", "is required")
	case in.CountryLanguageID == nil:
		return persistence.Qualification{}, fault.Invalid("country_language_id", "is required")
	}
	name, err := optionalText("name", in.Name, maxName)
	if err != nil {
		return persistence.Qualification{}, err
	}
	return a.store.CreateCustomQualification(ctx, b.ID, persistence.CustomQualificationFields{
		Name: name, QuestionText: text, AnswerType: *in.AnswerType, CountryLanguageID: *in.CountryLanguageID})
}

func (a *screenerAPI) createCustomAnswer(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	qid, err := pathID(ctx, "question_id")
	if err != nil {
		return fault.NotFound("custom qualification not found")
	}
	ans, err := a.addScreenerAnswer(dbContext(ctx), b, qid, ctx.PostBody())
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusCreated, ans)
	return nil
}

// addScreenerAnswer is POST /custom_qualifications/{question_id}/custom_qualification_answers
// once routed: body validated and stored. The console's screener form calls it too.
func (a *screenerAPI) addScreenerAnswer(ctx context.Context, b persistence.Buyer, qid int64, body []byte) (persistence.Answer, error) {
	if qid > maxInt32 {
		return persistence.Answer{}, fault.NotFound("custom qualification not found")
	}
	var in struct {
		OptionText *string `json:"option_text"`
	}
	if err := httpio.DecodeJSON(body, &in); err != nil {
		return persistence.Answer{}, err
	}
	text, err := requiredText("option_text", in.OptionText, maxText)
	if err != nil {
		return persistence.Answer{}, err
	}
	return a.store.CreateCustomAnswer(ctx, b.ID, int(qid), text)
}

type customQualificationBody struct {
	QuestionID    *int       `json:"question_id" range:"1"`
	PreCodeValues flexString `json:"pre_code_values"`
}

func (a *screenerAPI) attachCustomQualification(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	cid, err := pathID(ctx, "id")
	if err != nil {
		return err
	}
	q, err := a.attachScreener(dbContext(ctx), b, cid, ctx.PostBody())
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusCreated, q)
	return nil
}

// attachScreener is POST /campaigns/{id}/campaign_qualifications once routed: body
// validated and stored. The console's screener form and its clone call it too.
func (a *screenerAPI) attachScreener(ctx context.Context, b persistence.Buyer, cid int64, body []byte) (persistence.CampaignQualification, error) {
	var in customQualificationBody
	if err := httpio.DecodeJSON(body, &in); err != nil {
		return persistence.CampaignQualification{}, err
	}
	if in.QuestionID == nil {
		return persistence.CampaignQualification{}, fault.Invalid("question_id", "is required")
	}
	if !in.PreCodeValues.set {
		return persistence.CampaignQualification{}, fault.Invalid("pre_code_values", "is required")
	}
	codes, err := parsePreCodeValues(in.PreCodeValues)
	if err != nil {
		return persistence.CampaignQualification{}, err
	}
	return a.store.AttachCustomQualification(ctx, b.ID, cid, *in.QuestionID, codes)
}

func customQualificationPath(ctx *fasthttp.RequestCtx) (cid, id int64, err error) {
	if cid, err = pathID(ctx, "id"); err != nil {
		return 0, 0, err
	}
	id, err = pathID(ctx, "qualification_id")
	return cid, id, err
}

func (a *screenerAPI) updateCustomQualification(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	cid, id, err := customQualificationPath(ctx)
	if err != nil {
		return err
	}
	var in customQualificationBody
	if err := httpio.DecodeJSON(ctx.PostBody(), &in); err != nil {
		return err
	}
	var codes []int
	if in.PreCodeValues.set {
		if codes, err = parsePreCodeValues(in.PreCodeValues); err != nil {
			return err
		}
	}
	q, err := a.store.UpdateCustomQualification(dbContext(ctx), b.ID, cid, id, codes)
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, q)
	return nil
}

func (a *screenerAPI) detachCustomQualification(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	cid, id, err := customQualificationPath(ctx)
	if err != nil {
		return err
	}
	if err := a.store.DetachCustomQualification(dbContext(ctx), b.ID, cid, id); err != nil {
		return err
	}
	httpio.NoContent(ctx)
	return nil
}
