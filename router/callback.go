package router

import (
	"context"
	"crypto/sha1"
	"html"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/internal/outcome"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router/payout"
)

// callback is GET /router/customers/{customer_id}/cps/{outcome}?tid=&tr_sech= (docs/rules.md §7).
func (r *Router) callback(ctx *fasthttp.RequestCtx) {
	location, page, err := r.handleCallback(context.Background(), ctx.UserValue("customer_id").(string),
		ctx.UserValue("outcome").(string), string(ctx.Request.Header.RequestURI()), string(ctx.QueryArgs().Peek("tid")))
	switch {
	case err != nil:
		httpio.WriteError(ctx, r.log, httpio.StyleMessage, err)
	case page != "":
		ctx.SetStatusCode(fasthttp.StatusOK)
		ctx.SetContentType("text/html; charset=utf-8")
		ctx.Response.Header.Set("Cache-Control", "no-store")
		ctx.SetBodyString(page)
	default:
		redirect(ctx, location)
	}
}

// handleCallback decides a callback: the partner redirect to answer with, or the page of a
// test session, or an error.
func (r *Router) handleCallback(ctx context.Context, customerID, named, requestURI, tid string) (location, page string, err error) {
	if !outcome.Valid(named) {
		return "", "", fault.NotFound("not found")
	}
	s, hashOK, found, err := r.callbackSession(ctx, customerID, requestURI, tid)
	if err != nil {
		return "", "", err
	}
	if found && s.IsTest {
		return "", testPage(named, hashOK), nil
	}
	if !hashOK {
		return "", "", fault.Forbidden("invalid tr_sech")
	}
	if !found {
		return "", "", fault.NotFound("unknown transaction")
	}
	now := time.Now()
	if now.Sub(s.EnteredAt) > r.cfg.SessionMaxAge {
		return "", "", fault.Gone("transaction is older than 7 days")
	}
	pub, err := r.publisher(ctx, s.PublisherID)
	if err != nil {
		return "", "", err
	}
	if s.ChainID != 0 {
		return r.chainCallback(ctx, pub, s, named, now) // re-routing (reroute.go, docs/rules.md §10)
	}
	if s.Outcome != "" {
		return r.repeat(pub, s, named)
	}
	if s.Closed() {
		return "", "", errClosed
	}
	return r.decide(ctx, pub, s, named, now)
}

// callbackSession authenticates a callback of the buyer customerID and finds the session
// of tid: hashOK reports a tr_sech that verifies, found a session of that buyer. A callback
// without a well-formed final tr_sech is refused before any database work (an unsigned
// request costs no lookup), and texts PostgreSQL would refuse are never looked up
// (docs/validation.md).
func (r *Router) callbackSession(ctx context.Context, customerID, requestURI, tid string) (s persistence.Session, hashOK, found bool, err error) {
	if !sechShaped(requestURI) {
		return s, false, false, fault.Forbidden("invalid tr_sech")
	}
	if !httpio.ValidText(customerID) {
		return s, false, false, fault.NotFound("not found")
	}
	buyer, err := r.buyer(ctx, customerID)
	if err != nil {
		return s, false, false, err
	}
	hashOK = r.signedBy(buyer, requestURI)
	if tid == "" || !httpio.ValidText(tid) {
		// No session has such a tid: the answer a correctly signed unknown tid gets.
		if !hashOK {
			return s, false, false, fault.Forbidden("invalid tr_sech")
		}
		return s, hashOK, false, fault.NotFound("unknown transaction")
	}
	s, err = r.session(ctx, tid)
	if err != nil && !isNotFound(err) {
		return s, hashOK, false, err
	}
	return s, hashOK, err == nil && s.BuyerID == buyer.ID, nil
}

// signedBy reports whether requestURI's tr_sech verifies with the buyer's secret or, within
// a secret rotation's grace period, with the replaced one (buyer rotate-secret): a second
// HMAC only for callbacks the current one refuses.
func (r *Router) signedBy(buyer persistence.Buyer, requestURI string) bool {
	return VerifyCallback(r.cfg.PublicURL, requestURI, buyer.APISecret) ||
		buyer.PreviousAPISecret != "" && time.Now().Before(buyer.PreviousUntil) &&
			VerifyCallback(r.cfg.PublicURL, requestURI, buyer.PreviousAPISecret)
}

// decide records the first outcome of a lone session s and answers the partner redirect;
// a session decided meanwhile (by a concurrent callback, or reconciled) answers as such.
func (r *Router) decide(ctx context.Context, pub persistence.Publisher, s persistence.Session, named string, now time.Time) (string, string, error) {
	pay, rec, err := r.outcomeRecord(pub, s, named, now, 0)
	if err != nil {
		return "", "", err
	}
	res, err := r.record(ctx, s, rec)
	if err != nil {
		return "", "", err
	}
	if !res.Decided {
		if res.Stored.Outcome == "" {
			return "", "", errClosed // reconciled since it was read
		}
		return r.repeat(pub, res.Stored, named)
	}
	r.outcomeStored(ctx, s, named, res, now)
	return payout.RedirectURL(pub, payout.Fields{TID: s.TID, Status: named, Reward: pay.Reward}), "", nil
}

// outcomeRecord prices the outcome named of s and builds what records it: the partner's
// postback is stored with the outcome, in the same transaction, leased to this process's
// sender when there is one. attempts is the chain's sessions so far (0: a lone session).
func (r *Router) outcomeRecord(pub persistence.Publisher, s persistence.Session, named string, now time.Time, attempts int) (payout.Payout, persistence.OutcomeRecord, error) {
	pay := r.cfg.Rules.Pay(payout.Session{Outcome: named, CPICents: s.CPICents, EnteredAt: s.EnteredAt, OutcomeAt: now},
		pub.RevenueShare, pub.ExchangeRate)
	pb, err := payout.OutcomePostback(pub, payout.Fields{TID: s.TID, Status: named, Reward: pay.Reward, PayoutUSD: pay.USD,
		UserIdentifier: s.UserIdentifier, Attempts: attempts, EventID: persistence.EventID(s.TID, persistence.OutcomeEventSeq)})
	if err != nil {
		return pay, persistence.OutcomeRecord{}, err
	}
	rec := persistence.OutcomeRecord{Outcome: named, At: now, PayoutUSD: int64(pay.USD), Reward: pay.Reward, Postback: pb}
	if r.sender != nil {
		rec.PostbackLease = r.sender.Lease()
	}
	return pay, rec, nil
}

// sechShaped reports whether requestURI ends with a tr_sech of the right shape: 40
// lower-case hex digits, the last parameter (docs/rules.md §7). Whether it is the right
// hash needs the buyer's secret, read from the database; the shape does not.
func sechShaped(requestURI string) bool {
	_, sech, ok := SplitCallback(requestURI)
	if !ok || len(sech) != 2*sha1.Size {
		return false
	}
	for i := 0; i < len(sech); i++ {
		if c := sech[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// errClosed answers the first callback of a session whose campaign is reconciled or
// archived: its completes are final (docs/rules.md §8), like a session's after 7 days.
var errClosed = fault.Gone("transaction is closed: its campaign is reconciled or archived")

// repeat answers a callback of a session that has its outcome with the session's current
// state: the same answer for the same outcome, 409 for another, and 409 for a complete the
// buyer has rejected since (docs/rules.md §7): its partner was sent a reversal, and a
// freshly signed complete redirect would credit the participant again.
func (r *Router) repeat(pub persistence.Publisher, s persistence.Session, outcome string) (string, string, error) {
	if s.Outcome != outcome {
		return "", "", fault.Conflict("transaction already has outcome " + s.Outcome)
	}
	if s.Rejected {
		return "", "", errRejected
	}
	return payout.RedirectURL(pub, payout.Fields{TID: s.TID, Status: s.Outcome, Reward: s.Reward}), "", nil
}

// errRejected answers a replayed complete callback of a session whose complete the buyer
// rejected (reject_completes, or left unlisted by reconcile).
var errRejected = fault.Conflict("transaction's complete was rejected by the buyer")

// testPage is the answer to a test session's callback.
func testPage(outcome string, hashOK bool) string {
	valid := "valid"
	if !hashOK {
		valid = "NOT valid"
	}
	o := html.EscapeString(outcome)
	return "<!doctype html><html><head><meta charset=\"utf-8\"><title>Switchboard redirect test</title></head>" +
		"<body><h1>Redirect test</h1><p>Outcome received: <strong id=\"outcome\">" + o + "</strong></p>" +
		"<p>Security hash (tr_sech): <strong id=\"hash\">" + valid + "</strong></p></body></html>"
}

// outcomeStored does what follows a stored outcome (res), on a chain's hop as on a lone
// session: hand its postback (if any) to the sender at once (else it is claimed once the
// lease runs out), move the live counters (held: the session's in-progress hold is
// released; an overage counts no complete, docs/rules.md §5), tell other processes, and
// record the quality signals (quality_term, speeders: quality.go).
func (r *Router) outcomeStored(ctx context.Context, s persistence.Session, named string, res persistence.OutcomeResult, now time.Time) {
	if res.Postback.ID != 0 {
		r.sender.Send(res.Postback)
	}
	complete, held := named == outcome.Complete && !res.Overage, res.Held
	if res.Overage {
		r.overages.Add(1)
	}
	c := r.eng.Counters()
	if held {
		c.RecordOutcome(s.CampaignID, s.QuotaIDs, complete, now.Unix())
	} else if complete {
		c.AddCompletes(s.CampaignID, s.QuotaIDs, 1, now.Unix())
	}
	r.notify.counts(s.CampaignID)
	if complete {
		r.notify.completed(s.CampaignID)
	}
	r.afterOutcome(ctx, s, named, now)
}
