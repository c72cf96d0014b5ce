package admin

import (
	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router/payout"
)

// webhookPages are the buyer's webhook page in the console.
type webhookPages struct {
	*console
	store      accountStore
	deliveries deliveryLog
	accounts   *accountAPI // sends the test event
}

// consoleDeliveries is how many deliveries the console's webhook page lists at once.
const consoleDeliveries = 50

// webhookPage is the buyer's webhook in the console: its URL, a test event and the delivery
// log (GET /api/v1/webhook, POST /api/v1/webhook/test and GET /api/v1/webhook/deliveries in
// a browser).
type webhookPage struct {
	consoleBase
	URL        string
	Statuses   []string // the log's filters
	Status     string   // the filter shown
	Deliveries []persistence.WebhookDelivery
	Older      int64                     // before_id of the next page; 0: none
	Test       *payout.WebhookTestResult // the test event just sent
}

// registerConsoleWebhook mounts the buyer's webhook page; buyer wraps a handler for a buyer
// session.
func (a *webhookPages) registerConsoleWebhook(mux *httpio.Mux, buyer func(consoleHandler) fasthttp.RequestHandler) {
	mux.Handle("GET", ConsolePrefix+"/webhook", buyer(a.consoleWebhook))
	mux.Handle("POST", ConsolePrefix+"/webhook/test", buyer(a.consoleWebhookTest))
}

// consoleWebhook shows the page; the query filters and pages the log as the API's does.
func (a *webhookPages) consoleWebhook(ctx *fasthttp.RequestCtx, s *consoleSession) error {
	return a.renderWebhook(ctx, s, nil)
}

// consoleWebhookTest sends a test event through the API's own code and shows its result
// above the log (nothing is stored, so the page answers the post itself).
func (a *webhookPages) consoleWebhookTest(ctx *fasthttp.RequestCtx, s *consoleSession) error {
	r, err := a.accounts.sendWebhookTest(dbContext(ctx), s.Buyer)
	if err != nil {
		return err
	}
	return a.renderWebhook(ctx, s, &r)
}

func (a *webhookPages) renderWebhook(ctx *fasthttp.RequestCtx, s *consoleSession, test *payout.WebhookTestResult) error {
	f, status, err := deliveryFilter(ctx.QueryArgs())
	if err != nil {
		return err
	}
	if test != nil {
		f, status = persistence.WebhookFilter{States: persistence.WebhookStates}, webhookStatusAll // the log from its start
	}
	f.BuyerID, f.Limit = s.Buyer.ID, consoleDeliveries
	u, err := a.store.BuyerWebhook(dbContext(ctx), s.Buyer.ID)
	if err != nil {
		return err
	}
	list, err := a.deliveries.ListWebhookDeliveries(dbContext(ctx), f)
	if err != nil {
		return err
	}
	p := &webhookPage{consoleBase: s.base("Webhook"), URL: u, Statuses: webhookStatusFilters, Status: status,
		Deliveries: list, Test: test}
	if len(list) == f.Limit {
		p.Older = list[len(list)-1].ID
	}
	a.render(ctx, fasthttp.StatusOK, "webhook", p)
	return nil
}
