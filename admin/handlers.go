package admin

import (
	"context"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
)

// pathID reads an integer path parameter; anything else is an unknown resource (404).
func pathID(ctx *fasthttp.RequestCtx, name string) (int64, error) {
	s, _ := ctx.UserValue(name).(string)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		return 0, fault.NotFound("not found")
	}
	return n, nil
}

// queryInt reads an id query parameter (1 to 2^31 − 1); missing (when required), malformed
// or outside those bounds is a 400 that states them.
func queryInt(ctx *fasthttp.RequestCtx, name string, required bool) (*int, error) {
	raw := ctx.QueryArgs().Peek(name)
	if len(raw) == 0 {
		if required {
			return nil, fault.BadRequest("query parameter %s is required", name)
		}
		return nil, nil
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil && !httpio.IsRangeError(err) {
		return nil, fault.BadRequest("query parameter %s must be an integer", name)
	}
	if err != nil || n < 1 || n > maxInt32 {
		return nil, fault.BadRequest("query parameter %s must be an integer from 1 to %d", name, maxInt32)
	}
	v := int(n)
	return &v, nil
}

// defaultPerPage is per_page of a paged list that gives only page.
const defaultPerPage = 100

// pageQuery reads the optional paging of a list: page (from 1) and per_page
// (1..MaxCampaignsPerPage). paged is false when neither is given; a bad value is a 422
// naming the parameter.
func pageQuery(ctx *fasthttp.RequestCtx) (page, perPage int, paged bool, err error) {
	page, perPage = 1, defaultPerPage
	args := ctx.QueryArgs()
	for _, p := range []struct {
		name string
		max  int64
		v    *int
	}{{"page", maxInt32, &page}, {"per_page", persistence.MaxCampaignsPerPage, &perPage}} {
		if !args.Has(p.name) {
			continue
		}
		paged = true
		n, perr := strconv.ParseInt(string(args.Peek(p.name)), 10, 64)
		if perr != nil || n < 1 || n > p.max {
			return 0, 0, false, fault.Invalid(p.name, "must be an integer from 1 to %d", p.max)
		}
		*p.v = int(n)
	}
	return page, perPage, paged, nil
}

// --- lookups ---

func (a *API) countryLanguages(ctx *fasthttp.RequestCtx, _ persistence.Buyer) error {
	out, err := a.d.DB.CountryLanguages(dbContext(ctx))
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, out)
	return nil
}

// suppliers lists the supply partners of the token's environment, which a campaign's
// excluded_supplier_ids name (docs/rules.md §5.5).
func (a *API) suppliers(ctx *fasthttp.RequestCtx, _ persistence.Buyer) error {
	out, err := a.d.DB.Suppliers(dbContext(ctx), a.d.Environment)
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, out)
	return nil
}

func (a *API) qualifications(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	cl, err := queryInt(ctx, "country_language_id", true)
	if err != nil {
		return err
	}
	out, err := a.d.DB.Qualifications(dbContext(ctx), b.ID, *cl)
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, out)
	return nil
}

func (a *API) qualification(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	qid, err := pathID(ctx, "question_id")
	if err != nil || qid > maxInt32 {
		return fault.NotFound("qualification not found")
	}
	cl, err := queryInt(ctx, "country_language_id", true)
	if err != nil {
		return err
	}
	out, err := a.d.DB.Qualification(dbContext(ctx), b.ID, int(qid), *cl)
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, out)
	return nil
}

// --- campaigns ---

func (a *API) listCampaigns(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	cl, err := queryInt(ctx, "country_language_id", false)
	if err != nil {
		return err
	}
	page, perPage, paged, err := pageQuery(ctx)
	if err != nil {
		return err
	}
	var out []persistence.Campaign
	if paged {
		var total int64
		if out, total, err = a.d.DB.CampaignsPage(dbContext(ctx), b.ID, cl, page, perPage); err != nil {
			return err
		}
		ctx.Response.Header.Set("X-Total-Count", strconv.FormatInt(total, 10))
	} else if out, err = a.d.DB.Campaigns(dbContext(ctx), b.ID, cl); err != nil {
		return err
	}
	for i := range out {
		out[i].RedirectTestURL = a.d.Outcomes.RedirectTestURL(out[i].ID, b.APISecret)
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, out)
	return nil
}

func (a *API) writeCampaign(ctx *fasthttp.RequestCtx, b persistence.Buyer, status int, c persistence.CampaignDetail) {
	c.RedirectTestURL = a.d.Outcomes.RedirectTestURL(c.ID, b.APISecret)
	httpio.WriteJSON(ctx, status, c)
}

func (a *API) createCampaign(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	c, err := a.newCampaign(dbContext(ctx), b, ctx.PostBody())
	if err != nil {
		return err
	}
	a.writeCampaign(ctx, b, fasthttp.StatusCreated, c)
	return nil
}

// newCampaign is POST /campaigns once routed: body validated and stored. The console's
// campaign form and its clone call it too.
func (a *API) newCampaign(ctx context.Context, b persistence.Buyer, body []byte) (persistence.CampaignDetail, error) {
	f, err := DecodeCampaign(body, true)
	if err != nil {
		return persistence.CampaignDetail{}, err
	}
	f.SupplierEnvironment = a.d.Environment
	return a.d.DB.CreateCampaign(ctx, b.ID, f)
}

func (a *API) showCampaign(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	id, err := pathID(ctx, "id")
	if err != nil {
		return err
	}
	c, err := a.d.DB.Campaign(dbContext(ctx), b.ID, id)
	if err != nil {
		return err
	}
	a.writeCampaign(ctx, b, fasthttp.StatusOK, c)
	return nil
}

func (a *API) updateCampaign(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	id, err := pathID(ctx, "id")
	if err != nil {
		return err
	}
	c, err := a.changeCampaign(dbContext(ctx), b, id, ctx.PostBody())
	if err != nil {
		return err
	}
	a.writeCampaign(ctx, b, fasthttp.StatusOK, c)
	return nil
}

// changeCampaign is PUT /campaigns/{id} once routed: body validated and stored. The console's
// pause, activate and complete actions call it too.
func (a *API) changeCampaign(ctx context.Context, b persistence.Buyer, id int64, body []byte) (persistence.CampaignDetail, error) {
	f, err := DecodeCampaign(body, false)
	if err != nil {
		return persistence.CampaignDetail{}, err
	}
	f.SupplierEnvironment = a.d.Environment
	return a.d.DB.UpdateCampaign(ctx, b.ID, id, f)
}

// --- quotas ---

func (a *API) createQuota(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	cid, err := pathID(ctx, "id")
	if err != nil {
		return err
	}
	q, err := a.addQuota(dbContext(ctx), b, cid, ctx.PostBody())
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusCreated, q)
	return nil
}

// addQuota is POST /campaigns/{id}/campaign_quotas once routed: body validated and stored.
// The console's quota form and its clone call it too.
func (a *API) addQuota(ctx context.Context, b persistence.Buyer, cid int64, body []byte) (persistence.Quota, error) {
	f, err := DecodeQuota(body, true)
	if err != nil {
		return persistence.Quota{}, err
	}
	return a.d.DB.CreateQuota(ctx, b.ID, cid, f)
}

func quotaPath(ctx *fasthttp.RequestCtx) (cid, qid int64, err error) {
	if cid, err = pathID(ctx, "id"); err != nil {
		return 0, 0, err
	}
	qid, err = pathID(ctx, "quota_id")
	return cid, qid, err
}

func (a *API) showQuota(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	cid, qid, err := quotaPath(ctx)
	if err != nil {
		return err
	}
	q, err := a.d.DB.Quota(dbContext(ctx), b.ID, cid, qid)
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, q)
	return nil
}

func (a *API) updateQuota(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	cid, qid, err := quotaPath(ctx)
	if err != nil {
		return err
	}
	q, err := a.changeQuota(dbContext(ctx), b, cid, qid, ctx.PostBody())
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, q)
	return nil
}

// changeQuota is PUT /campaigns/{id}/campaign_quotas/{quota_id} once routed: body validated
// and stored. The console's quota target form calls it too.
func (a *API) changeQuota(ctx context.Context, b persistence.Buyer, cid, qid int64, body []byte) (persistence.Quota, error) {
	f, err := DecodeQuota(body, false)
	if err != nil {
		return persistence.Quota{}, err
	}
	return a.d.DB.UpdateQuota(ctx, b.ID, cid, qid, f)
}

func (a *API) deleteQuota(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	cid, qid, err := quotaPath(ctx)
	if err != nil {
		return err
	}
	if err := a.d.DB.DeleteQuota(dbContext(ctx), b.ID, cid, qid); err != nil {
		return err
	}
	httpio.NoContent(ctx)
	return nil
}

// --- retargeting ---

// campaignSummary is the campaign_retargets answer.
type campaignSummary struct {
	ID                int64             `json:"id"`
	Name              string            `json:"name"`
	CPI               persistence.Cents `json:"cpi"`
	DaysInField       int               `json:"days_in_field"`
	Incidence         int               `json:"incidence"`
	IsRetarget        bool              `json:"is_retarget"`
	Status            int               `json:"status"`
	LengthOfInterview int               `json:"length_of_interview"`
	TotalRemaining    int64             `json:"total_remaining"`
	SupplierLink      string            `json:"supplier_link"`
	RetargetCount     int64             `json:"retarget_count"`
	IsMaidTargeted    bool              `json:"is_maid_targeted"`
}

func summarize(c persistence.Campaign) campaignSummary {
	return campaignSummary{ID: c.ID, Name: c.Name, CPI: c.CPI, DaysInField: c.DaysInField, Incidence: c.Incidence,
		IsRetarget: c.IsRetarget, Status: c.Status, LengthOfInterview: c.LengthOfInterview,
		TotalRemaining: c.TotalRemaining, SupplierLink: c.SupplierLink, RetargetCount: c.RetargetCount,
		IsMaidTargeted: c.IsMaidTargeted}
}

func (a *API) addRetargets(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	cid, err := pathID(ctx, "id")
	if err != nil {
		return err
	}
	r, err := decodeRetargets(ctx.PostBody(), true, time.Now())
	if err != nil {
		return err
	}
	c, err := a.d.DB.AddRetargets(dbContext(ctx), b.ID, cid, r.typ, r.entries, r.expires)
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, summarize(c))
	return nil
}

func (a *API) removeRetargets(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	cid, err := pathID(ctx, "id")
	if err != nil {
		return err
	}
	r, err := decodeRetargets(ctx.PostBody(), false, time.Now())
	if err != nil {
		return err
	}
	ids := make([]string, len(r.entries))
	for i, e := range r.entries {
		ids[i] = e.ID
	}
	c, err := a.d.DB.RemoveRetargets(dbContext(ctx), b.ID, cid, r.typ, ids)
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, summarize(c))
	return nil
}

// --- exclusions ---

func (a *API) excludeFromCampaign(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	cid, err := pathID(ctx, "id")
	if err != nil {
		return err
	}
	res, err := a.exclude(dbContext(ctx), b, cid, ctx.PostBody())
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, res)
	return nil
}

// exclude is POST /campaigns/{id}/campaign_exclusions once routed: body validated and
// stored. The console's exclusion form calls it too.
func (a *API) exclude(ctx context.Context, b persistence.Buyer, cid int64, body []byte) (persistence.ExclusionResult, error) {
	var in struct {
		PlayerIDs      []string `json:"player_ids"`
		TransactionIDs []string `json:"transaction_ids"`
	}
	if err := httpio.DecodeJSON(body, &in); err != nil {
		return persistence.ExclusionResult{}, err
	}
	if len(in.PlayerIDs) > maxIDs {
		return persistence.ExclusionResult{}, fault.Invalid("player_ids", "must have at most %d ids", maxIDs)
	}
	if len(in.TransactionIDs) > maxIDs {
		return persistence.ExclusionResult{}, fault.Invalid("transaction_ids", "must have at most %d ids", maxIDs)
	}
	return a.d.DB.ExcludeFromCampaign(ctx, b.ID, cid, in.PlayerIDs, in.TransactionIDs)
}

// --- relationships ---

// relationshipBody is the body of POST /campaign_relationships.
type relationshipBody struct {
	CampaignID        *int64 `json:"campaign_id" range:"1"`
	RelatedCampaignID *int64 `json:"related_campaign_id" range:"1"`
}

func (a *API) createRelationship(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	var in relationshipBody
	if err := httpio.DecodeJSON(ctx.PostBody(), &in); err != nil {
		return err
	}
	switch {
	case in.CampaignID == nil:
		return fault.Invalid("campaign_id", "is required")
	case in.RelatedCampaignID == nil:
		return fault.Invalid("related_campaign_id", "is required")
	case *in.CampaignID == *in.RelatedCampaignID:
		return fault.Invalid("related_campaign_id", "must differ from campaign_id")
	}
	r, err := a.d.DB.CreateRelationship(dbContext(ctx), b.ID, *in.CampaignID, *in.RelatedCampaignID)
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusCreated, r)
	return nil
}

func (a *API) deleteRelationship(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	id, err := pathID(ctx, "id")
	if err != nil {
		return err
	}
	if err := a.d.DB.DeleteRelationship(dbContext(ctx), b.ID, id); err != nil {
		return err
	}
	httpio.NoContent(ctx)
	return nil
}

// --- custom screeners ---

// customQuestionBody is the body of POST /custom_qualifications.
type customQuestionBody struct {
	Name              *string `json:"name"`
	QuestionText      *string `json:"question_text"`
	AnswerType        *int    `json:"answer_type" range:"0,1" values:"0 (single select) or 1 (multi select)"`
	CountryLanguageID *int    `json:"country_language_id" range:"1"`
}

func (a *API) createCustomQualification(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	q, err := a.newScreenerQuestion(dbContext(ctx), b, ctx.PostBody())
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusCreated, q)
	return nil
}

// newScreenerQuestion is POST /custom_qualifications once routed: body validated and stored.
// The console's screener form calls it too.
func (a *API) newScreenerQuestion(ctx context.Context, b persistence.Buyer, body []byte) (persistence.Qualification, error) {
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
	return a.d.DB.CreateCustomQualification(ctx, b.ID, persistence.CustomQualificationFields{
		Name: name, QuestionText: text, AnswerType: *in.AnswerType, CountryLanguageID: *in.CountryLanguageID})
}

func (a *API) createCustomAnswer(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
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
func (a *API) addScreenerAnswer(ctx context.Context, b persistence.Buyer, qid int64, body []byte) (persistence.Answer, error) {
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
	return a.d.DB.CreateCustomAnswer(ctx, b.ID, int(qid), text)
}

type customQualificationBody struct {
	QuestionID    *int       `json:"question_id" range:"1"`
	PreCodeValues flexString `json:"pre_code_values"`
}

func (a *API) attachCustomQualification(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
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
func (a *API) attachScreener(ctx context.Context, b persistence.Buyer, cid int64, body []byte) (persistence.CampaignQualification, error) {
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
	return a.d.DB.AttachCustomQualification(ctx, b.ID, cid, *in.QuestionID, codes)
}

func customQualificationPath(ctx *fasthttp.RequestCtx) (cid, id int64, err error) {
	if cid, err = pathID(ctx, "id"); err != nil {
		return 0, 0, err
	}
	id, err = pathID(ctx, "qualification_id")
	return cid, id, err
}

func (a *API) updateCustomQualification(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
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
	q, err := a.d.DB.UpdateCustomQualification(dbContext(ctx), b.ID, cid, id, codes)
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, q)
	return nil
}

func (a *API) detachCustomQualification(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	cid, id, err := customQualificationPath(ctx)
	if err != nil {
		return err
	}
	if err := a.d.DB.DetachCustomQualification(dbContext(ctx), b.ID, cid, id); err != nil {
		return err
	}
	httpio.NoContent(ctx)
	return nil
}

// --- adhoc accounts ---

func (a *API) createAdhocAccount(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	var in struct {
		BuyerName       *string `json:"buyer_name"`
		BuyerIdentifier *string `json:"buyer_identifier"`
	}
	if err := httpio.DecodeJSON(ctx.PostBody(), &in); err != nil {
		return err
	}
	// Each is optional, but an account needs something to tell it by: at least one.
	name, err := optionalText("buyer_name", in.BuyerName, maxName)
	if err != nil {
		return err
	}
	ident, err := optionalText("buyer_identifier", in.BuyerIdentifier, maxName)
	if err != nil {
		return err
	}
	if name == "" && ident == "" {
		return fault.Invalid("buyer_name", "or buyer_identifier is required (1–%d characters)", maxName)
	}
	acct, err := a.d.DB.CreateAdhocAccount(dbContext(ctx), b.ID, name, ident)
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusCreated, acct)
	return nil
}
