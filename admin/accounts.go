package admin

import (
	"context"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router/payout"
)

// accountStore is a buyer's adhoc accounts and webhook URL (persistence AccountStore).
type accountStore interface {
	CreateAdhocAccount(ctx context.Context, buyerID int64, name, identifier string) (persistence.AdhocAccount, error)
	BuyerWebhook(ctx context.Context, buyerID int64) (string, error)
	SetBuyerWebhook(ctx context.Context, buyerID int64, u string) error
}

// deliveryLog is the log of webhook deliveries (persistence OutboxStore).
type deliveryLog interface {
	ListWebhookDeliveries(ctx context.Context, f persistence.WebhookFilter) ([]persistence.WebhookDelivery, error)
}

// accountAPI serves what belongs to the buyer's account: adhoc accounts and the webhook
// (webhook.go).
type accountAPI struct {
	store      accountStore
	deliveries deliveryLog
	webhooks   *payout.Worker // nil: URLs checked by form only, and no test sends
}

func (a *accountAPI) createAdhocAccount(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
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
	acct, err := a.store.CreateAdhocAccount(dbContext(ctx), b.ID, name, ident)
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusCreated, acct)
	return nil
}
