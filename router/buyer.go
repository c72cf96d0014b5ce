package router

import (
	"context"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router/payout"
)

// BuyerOps is the buyer-side logic of the routes the admin interface mounts:
// reject_completes, reconcile and redirect_test. Each takes the authenticated buyer, the
// campaign id of the path and the request body, and returns the value to answer 200 with.
type BuyerOps struct {
	Verdicts  verdictStore    // reject_completes and reconcile
	Campaigns routeStore      // redirect_test (testsession.go)
	Feed      countsAnnouncer // the counts a verdict moved, told to every process (notifier.go)
	PublicURL string
	Log       *zap.Logger
	// Quality makes rejected completes quality signals, recorded in the rejecting
	// transaction (rejectEffects); nil: off.
	Quality QualityGate
}

// verdictStore records a buyer's verdicts on a campaign's completes.
type verdictStore interface {
	RejectCompletes(ctx context.Context, buyerID, campaignID int64, tids []string, fx persistence.RejectEffects) (persistence.Rejection, error)
	Reconcile(ctx context.Context, buyerID, campaignID int64, tids []string, purchaseOrder *string, accept persistence.Acceptance, fx persistence.RejectEffects) (persistence.Reconciliation, error)
}

// maxIDs bounds the id arrays of one request (docs/rules.md §2).
const maxIDs = 10_000

// reverse builds the reversal postback of a rejected complete (docs/rules.md §7).
func reverse(s persistence.Session, pub persistence.Publisher, eventID string) (persistence.Postback, error) {
	return payout.ReversalPostback(pub, payout.Fields{TID: s.TID, Reward: s.Reward,
		PayoutUSD: payout.USD(s.PayoutUSD), UserIdentifier: s.UserIdentifier, EventID: eventID})
}

// accept prices a session that reconcile makes an accepted complete: cpi × the publisher's
// revenue share (docs/rules.md §7), whatever it paid before (a time-based payout, or nothing
// yet), with the status=complete postback that tells the partner.
func accept(s persistence.Session, pub persistence.Publisher, eventID string) (persistence.Accepted, bool, error) {
	usd := payout.CompletePayout(s.CPICents, pub.RevenueShare)
	f := payout.Fields{TID: s.TID, Reward: payout.Reward(usd, pub.ExchangeRate), PayoutUSD: usd, UserIdentifier: s.UserIdentifier, EventID: eventID}
	pb, err := payout.AcceptancePostback(pub, f)
	if err != nil {
		return persistence.Accepted{}, false, err
	}
	return persistence.Accepted{PayoutUSD: int64(usd), Reward: f.Reward, Postback: pb}, true, nil
}

// rejectEffects are what a rejection does for the partner (a reversal postback) and, when
// quality is on, against the participant (a quality signal).
func (o *BuyerOps) rejectEffects() persistence.RejectEffects {
	fx := persistence.RejectEffects{Reverse: reverse}
	if o.Quality != nil {
		pol := o.Quality.Policy()
		fx.Quality = &pol
	}
	return fx
}

// observe applies, once the rejecting transaction has committed, what its quality signals
// decided.
func (o *BuyerOps) observe(outs []persistence.QualityOutcome) {
	if o.Quality == nil {
		return
	}
	for _, out := range outs {
		o.Quality.Observe(out)
	}
}

type rejectBody struct {
	TransactionIDs *[]string `json:"transaction_ids"`
}

// RejectCompletes is POST /api/v1/campaigns/:id/reject_completes: 200
// {"id","rejected_transaction_ids","not_found_transaction_ids"}.
func (o *BuyerOps) RejectCompletes(ctx context.Context, buyer persistence.Buyer, campaignID int64, body []byte) (any, error) {
	var b rejectBody
	if err := httpio.DecodeJSON(body, &b); err != nil {
		return nil, err
	}
	if b.TransactionIDs == nil {
		return nil, fault.Invalid("transaction_ids", "is required")
	}
	if len(*b.TransactionIDs) > maxIDs {
		return nil, fault.Invalid("transaction_ids", "must hold at most %d ids", maxIDs)
	}
	out, err := o.Verdicts.RejectCompletes(ctx, buyer.ID, campaignID, *b.TransactionIDs, o.rejectEffects())
	if err != nil {
		return nil, err
	}
	o.observe(out.QualityOutcomes())
	if out.NewlyRejected() > 0 {
		o.announce(ctx, campaignID)
	}
	return out, nil
}

type reconcileBody struct {
	AcceptedIDs   *[]string `json:"accepted_ids"`
	PurchaseOrder *string   `json:"purchase_order"`
}

// Reconcile is POST /api/v1/campaigns/:id/reconcile: 200
// {"id","accepted_count","rejected_count","purchase_order"}; the campaign becomes 6.
func (o *BuyerOps) Reconcile(ctx context.Context, buyer persistence.Buyer, campaignID int64, body []byte) (any, error) {
	var b reconcileBody
	if err := httpio.DecodeJSON(body, &b); err != nil {
		return nil, err
	}
	if b.AcceptedIDs == nil {
		return nil, fault.Invalid("accepted_ids", "is required")
	}
	if len(*b.AcceptedIDs) > maxIDs {
		return nil, fault.Invalid("accepted_ids", "must hold at most %d ids", maxIDs)
	}
	out, err := o.Verdicts.Reconcile(ctx, buyer.ID, campaignID, *b.AcceptedIDs, b.PurchaseOrder, accept, o.rejectEffects())
	if err != nil {
		return nil, err
	}
	o.observe(out.QualityOutcomes())
	o.announce(ctx, campaignID)
	return out, nil
}

// RedirectTest is GET /api/v1/campaigns/:id/redirect_test: 200 {"redirect_test_url"}.
func (o *BuyerOps) RedirectTest(ctx context.Context, buyer persistence.Buyer, campaignID int64, _ []byte) (any, error) {
	route, err := o.Campaigns.CampaignRoute(ctx, campaignID)
	if err != nil {
		return nil, err
	}
	if route.BuyerID != buyer.ID {
		return nil, fault.NotFound("campaign not found")
	}
	return map[string]string{"redirect_test_url": RedirectTestURL(o.PublicURL, campaignID, buyer.APISecret)}, nil
}

// RedirectTestURL is the signed URL that starts a test session on a campaign.
func (o *BuyerOps) RedirectTestURL(campaignID int64, buyerSecret string) string {
	return RedirectTestURL(o.PublicURL, campaignID, buyerSecret)
}

// announce tells every process that the campaign's counts changed.
func (o *BuyerOps) announce(ctx context.Context, campaignID int64) {
	if err := o.Feed.NotifyCounts(context.WithoutCancel(ctx), []int64{campaignID}); err != nil && o.Log != nil {
		o.Log.Warn("counts notification failed; reconciliation catches up", zap.Error(err))
	}
}
