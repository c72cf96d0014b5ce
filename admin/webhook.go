package admin

import (
	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
)

// webhookView is a buyer's webhook registration as the API shows it: the URL campaign
// events are POSTed to (null: none). Deliveries are signed with the buyer's api_secret
// (docs/buyer-integration.md, "Webhooks").
type webhookView struct {
	URL *string `json:"url"`
}

func viewWebhook(u string) webhookView {
	if u == "" {
		return webhookView{}
	}
	return webhookView{URL: &u}
}

// showWebhook answers the buyer's webhook URL.
func (a *API) showWebhook(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	u, err := a.d.DB.BuyerWebhook(dbContext(ctx), b.ID)
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, viewWebhook(u))
	return nil
}

// setWebhook registers the buyer's webhook URL ({"url": "https://..."}) or removes it
// ({"url": ""}). Events stored from then on go to the new URL.
func (a *API) setWebhook(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	var in struct {
		URL *string `json:"url"`
	}
	if err := httpio.DecodeJSON(ctx.PostBody(), &in); err != nil {
		return err
	}
	if in.URL == nil {
		return fault.Invalid("url", `is required ("" removes the webhook)`)
	}
	if err := a.d.DB.SetBuyerWebhook(dbContext(ctx), b.ID, *in.URL); err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, viewWebhook(*in.URL))
	return nil
}
