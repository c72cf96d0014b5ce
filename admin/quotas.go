package admin

import (
	"context"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
)

// quotaStore is the quotas of a buyer's campaigns (persistence CampaignStore).
type quotaStore interface {
	Quota(ctx context.Context, buyerID, campaignID, quotaID int64) (persistence.Quota, error)
	CreateQuota(ctx context.Context, buyerID, campaignID int64, f persistence.QuotaFields) (persistence.Quota, error)
	UpdateQuota(ctx context.Context, buyerID, campaignID, quotaID int64, f persistence.QuotaFields) (persistence.Quota, error)
	DeleteQuota(ctx context.Context, buyerID, campaignID, quotaID int64) error
}

// quotaAPI serves the quotas of a buyer's campaigns.
type quotaAPI struct {
	store quotaStore
}

func (a *quotaAPI) createQuota(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
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
func (a *quotaAPI) addQuota(ctx context.Context, b persistence.Buyer, cid int64, body []byte) (persistence.Quota, error) {
	f, err := DecodeQuota(body, true)
	if err != nil {
		return persistence.Quota{}, err
	}
	return a.store.CreateQuota(ctx, b.ID, cid, f)
}

func quotaPath(ctx *fasthttp.RequestCtx) (cid, qid int64, err error) {
	if cid, err = pathID(ctx, "id"); err != nil {
		return 0, 0, err
	}
	qid, err = pathID(ctx, "quota_id")
	return cid, qid, err
}

func (a *quotaAPI) showQuota(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	cid, qid, err := quotaPath(ctx)
	if err != nil {
		return err
	}
	q, err := a.store.Quota(dbContext(ctx), b.ID, cid, qid)
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, q)
	return nil
}

func (a *quotaAPI) updateQuota(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
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
func (a *quotaAPI) changeQuota(ctx context.Context, b persistence.Buyer, cid, qid int64, body []byte) (persistence.Quota, error) {
	f, err := DecodeQuota(body, false)
	if err != nil {
		return persistence.Quota{}, err
	}
	return a.store.UpdateQuota(ctx, b.ID, cid, qid, f)
}

func (a *quotaAPI) deleteQuota(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	cid, qid, err := quotaPath(ctx)
	if err != nil {
		return err
	}
	if err := a.store.DeleteQuota(dbContext(ctx), b.ID, cid, qid); err != nil {
		return err
	}
	httpio.NoContent(ctx)
	return nil
}
