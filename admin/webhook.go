package admin

import (
	"context"
	"errors"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router/payout"
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
func (a *accountAPI) showWebhook(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	u, err := a.store.BuyerWebhook(dbContext(ctx), b.ID)
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, viewWebhook(u))
	return nil
}

// setWebhook registers the buyer's webhook URL ({"url": "https://..."}) or removes it
// ({"url": ""}). Events stored from then on go to the new URL. A URL delivery would refuse
// (the outbound policy: a host that is or resolves only to non-public addresses) is a 422
// naming url, like a malformed one.
func (a *accountAPI) setWebhook(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	var in struct {
		URL *string `json:"url"`
	}
	if err := httpio.DecodeJSON(ctx.PostBody(), &in); err != nil {
		return err
	}
	if in.URL == nil {
		return fault.Invalid("url", `is required ("" removes the webhook)`)
	}
	if *in.URL != "" && a.webhooks != nil {
		if err := persistence.ValidateWebhookURL(*in.URL); err != nil {
			return err
		}
		if err := a.webhooks.CheckWebhookURL(dbContext(ctx), *in.URL); err != nil {
			return err
		}
	}
	if err := a.store.SetBuyerWebhook(dbContext(ctx), b.ID, *in.URL); err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, viewWebhook(*in.URL))
	return nil
}

// webhookDeliveryLimit is the default page size of GET /webhook/deliveries; 1,000 at most.
const webhookDeliveryLimit = 100

// webhookDeliveries is the answer of GET /webhook/deliveries.
type webhookDeliveries struct {
	Deliveries []persistence.WebhookDelivery `json:"deliveries"`
	// NextBeforeID is the before_id of the next page; 0 when this page is the last.
	NextBeforeID int64 `json:"next_before_id"`
}

// webhookDeliveries answers GET /webhook/deliveries?status=all|pending|failed|dead|delivered
// [&limit=][&before_id=]: the buyer's webhook events, newest first, with where each went,
// its state, attempts and last error (docs/buyer-integration.md, "Webhooks").
func (a *accountAPI) webhookDeliveries(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	f, _, err := deliveryFilter(ctx.QueryArgs())
	if err != nil {
		return err
	}
	f.BuyerID = b.ID
	list, err := a.deliveries.ListWebhookDeliveries(dbContext(ctx), f)
	if err != nil {
		return err
	}
	out := webhookDeliveries{Deliveries: list}
	if out.Deliveries == nil {
		out.Deliveries = []persistence.WebhookDelivery{}
	}
	if len(list) == f.Limit {
		out.NextBeforeID = list[len(list)-1].ID
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, out)
	return nil
}

// webhookStatusFilters are the deliveries listing's status filters a page offers: every
// delivery, then each state.
var webhookStatusFilters = append([]string{webhookStatusAll}, persistence.WebhookStates...)

// webhookStatusAll is the status filter of every delivery, whatever its state.
const webhookStatusAll = "all"

// deliveryFilter reads the listing's query: status (all, the default, or one or more states
// separated by commas), limit (1-1000, default webhookDeliveryLimit) and before_id; a bad
// value is a 400 naming it. It returns the status filter as given, for a page to show.
func deliveryFilter(args *fasthttp.Args) (persistence.WebhookFilter, string, error) {
	f := persistence.WebhookFilter{States: persistence.WebhookStates, Limit: webhookDeliveryLimit}
	status := webhookStatusAll
	if s := args.Peek("status"); len(s) > 0 {
		status = string(s)
		var ok bool
		if f.States, ok = persistence.ParseWebhookStates(status); !ok {
			return f, status, fault.BadRequest("query parameter status must be all, or one or more of %s separated by commas",
				strings.Join(persistence.WebhookStates, ", "))
		}
	}
	var err error
	if f.Limit, err = httpio.QueryInt(args, "limit", webhookDeliveryLimit, 1, 1000); err != nil {
		return f, status, err
	}
	before, err := httpio.QueryInt(args, "before_id", 0, 1, 1<<62)
	f.BeforeID = int64(before)
	return f, status, err
}

// testWebhook answers POST /webhook/test: it POSTs a signed test event (type webhook.test)
// to the buyer's webhook URL, as a delivery would, and answers what the buyer's server
// replied (payout.SendWebhookTest). Nothing is stored. A buyer without a webhook URL gets
// 409; one test per buyer at a time (429 otherwise).
func (a *accountAPI) testWebhook(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	if body := ctx.PostBody(); len(body) > 0 {
		var in struct{}
		if err := httpio.DecodeJSON(body, &in); err != nil {
			return err
		}
	}
	r, err := a.sendWebhookTest(dbContext(ctx), b)
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, r)
	return nil
}

// sendWebhookTest sends b's test event (testWebhook, and the console's webhook page).
func (a *accountAPI) sendWebhookTest(ctx context.Context, b persistence.Buyer) (payout.WebhookTestResult, error) {
	if a.webhooks == nil {
		return payout.WebhookTestResult{}, fault.Unavailable(errors.New("admin: no webhook sender"))
	}
	u, err := a.store.BuyerWebhook(ctx, b.ID)
	if err != nil {
		return payout.WebhookTestResult{}, err
	}
	if u == "" {
		return payout.WebhookTestResult{}, fault.Conflict("no webhook URL is set (PUT /api/v1/webhook)")
	}
	r, err := a.webhooks.SendWebhookTest(ctx, b.ID, u, b.APISecret)
	if errors.Is(err, payout.ErrTestInFlight) {
		err = fault.RateLimited()
	}
	return r, err
}
