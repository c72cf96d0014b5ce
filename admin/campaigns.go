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

// campaignStore is a buyer's campaigns, their retargets, exclusions and relationships
// (persistence CampaignStore).
type campaignStore interface {
	Campaigns(ctx context.Context, buyerID int64, countryLanguageID *int) ([]persistence.Campaign, error)
	CampaignsPage(ctx context.Context, buyerID int64, countryLanguageID *int, page, perPage int) ([]persistence.Campaign, int64, error)
	Campaign(ctx context.Context, buyerID, id int64) (persistence.CampaignDetail, error)
	CreateCampaign(ctx context.Context, buyerID int64, f persistence.CampaignFields) (persistence.CampaignDetail, error)
	UpdateCampaign(ctx context.Context, buyerID, id int64, f persistence.CampaignFields) (persistence.CampaignDetail, error)
	CampaignList(ctx context.Context, buyerID int64, q persistence.CampaignListQuery) ([]persistence.CampaignListRow, int64, error)
	CampaignDates(ctx context.Context, buyerID, id int64) (persistence.CampaignDates, error)
	ExcludeFromCampaign(ctx context.Context, buyerID, campaignID int64, playerIDs, transactionIDs []string) (persistence.ExclusionResult, error)
	AddRetargets(ctx context.Context, buyerID, campaignID int64, typ int, entries []persistence.RetargetEntry, expires time.Time) (persistence.Campaign, error)
	RemoveRetargets(ctx context.Context, buyerID, campaignID int64, typ int, ids []string) (persistence.Campaign, error)
	CreateRelationship(ctx context.Context, buyerID, campaignID, relatedID int64) (persistence.Relationship, error)
	DeleteRelationship(ctx context.Context, buyerID, id int64) error
}

// campaignAPI serves a buyer's campaigns, their retargets, exclusions and relationships.
type campaignAPI struct {
	store    campaignStore
	env      string   // the supplier environment campaigns are stored in
	outcomes Outcomes // RedirectTestURL of each campaign answered
}

func (a *campaignAPI) listCampaigns(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
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
		if out, total, err = a.store.CampaignsPage(dbContext(ctx), b.ID, cl, page, perPage); err != nil {
			return err
		}
		ctx.Response.Header.Set("X-Total-Count", strconv.FormatInt(total, 10))
	} else if out, err = a.store.Campaigns(dbContext(ctx), b.ID, cl); err != nil {
		return err
	}
	for i := range out {
		out[i].RedirectTestURL = a.outcomes.RedirectTestURL(out[i].ID, b.APISecret)
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, out)
	return nil
}

func (a *campaignAPI) writeCampaign(ctx *fasthttp.RequestCtx, b persistence.Buyer, status int, c persistence.CampaignDetail) {
	c.RedirectTestURL = a.outcomes.RedirectTestURL(c.ID, b.APISecret)
	httpio.WriteJSON(ctx, status, c)
}

func (a *campaignAPI) createCampaign(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	c, err := a.newCampaign(dbContext(ctx), b, ctx.PostBody())
	if err != nil {
		return err
	}
	a.writeCampaign(ctx, b, fasthttp.StatusCreated, c)
	return nil
}

// newCampaign is POST /campaigns once routed: body validated and stored. The console's
// campaign form and its clone call it too.
func (a *campaignAPI) newCampaign(ctx context.Context, b persistence.Buyer, body []byte) (persistence.CampaignDetail, error) {
	f, err := DecodeCampaign(body, true)
	if err != nil {
		return persistence.CampaignDetail{}, err
	}
	f.SupplierEnvironment = a.env
	return a.store.CreateCampaign(ctx, b.ID, f)
}

func (a *campaignAPI) showCampaign(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	id, err := pathID(ctx, "id")
	if err != nil {
		return err
	}
	c, err := a.store.Campaign(dbContext(ctx), b.ID, id)
	if err != nil {
		return err
	}
	a.writeCampaign(ctx, b, fasthttp.StatusOK, c)
	return nil
}

func (a *campaignAPI) updateCampaign(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
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
func (a *campaignAPI) changeCampaign(ctx context.Context, b persistence.Buyer, id int64, body []byte) (persistence.CampaignDetail, error) {
	f, err := DecodeCampaign(body, false)
	if err != nil {
		return persistence.CampaignDetail{}, err
	}
	f.SupplierEnvironment = a.env
	return a.store.UpdateCampaign(ctx, b.ID, id, f)
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

func (a *campaignAPI) addRetargets(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	cid, err := pathID(ctx, "id")
	if err != nil {
		return err
	}
	r, err := decodeRetargets(ctx.PostBody(), true, time.Now())
	if err != nil {
		return err
	}
	c, err := a.store.AddRetargets(dbContext(ctx), b.ID, cid, r.typ, r.entries, r.expires)
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, summarize(c))
	return nil
}

func (a *campaignAPI) removeRetargets(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
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
	c, err := a.store.RemoveRetargets(dbContext(ctx), b.ID, cid, r.typ, ids)
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, summarize(c))
	return nil
}

// --- exclusions ---

func (a *campaignAPI) excludeFromCampaign(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
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
func (a *campaignAPI) exclude(ctx context.Context, b persistence.Buyer, cid int64, body []byte) (persistence.ExclusionResult, error) {
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
	return a.store.ExcludeFromCampaign(ctx, b.ID, cid, in.PlayerIDs, in.TransactionIDs)
}

// --- relationships ---

// relationshipBody is the body of POST /campaign_relationships.
type relationshipBody struct {
	CampaignID        *int64 `json:"campaign_id" range:"1"`
	RelatedCampaignID *int64 `json:"related_campaign_id" range:"1"`
}

func (a *campaignAPI) createRelationship(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
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
	r, err := a.store.CreateRelationship(dbContext(ctx), b.ID, *in.CampaignID, *in.RelatedCampaignID)
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusCreated, r)
	return nil
}

func (a *campaignAPI) deleteRelationship(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	id, err := pathID(ctx, "id")
	if err != nil {
		return err
	}
	if err := a.store.DeleteRelationship(dbContext(ctx), b.ID, id); err != nil {
		return err
	}
	httpio.NoContent(ctx)
	return nil
}
