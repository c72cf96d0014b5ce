// Package admin serves the buyer interface (/api/v1): lookups, campaigns, quotas,
// targeting, retargeting, relationships, custom screeners, adhoc accounts and exclusions.
//
// Every route authenticates with Basic email:token, is rate limited per token, answers
// JSON, and keeps each buyer's resources invisible to every other buyer (404). Every write
// is one database transaction that notifies the campaigns it changed.
package admin

import (
	"context"
	"time"

	"github.com/switchboard/switchboard/internal/entrytoken"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/internal/fault"
	"github.com/valyala/fasthttp"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router/payout"
)

// Deps is what the buyer interface needs from the process. The stores are what each part
// of the interface reads and writes (the interfaces are declared beside their users; each is
// a part of one persistence store).
type Deps struct {
	Buyers      buyerAuthenticator // every route's and the console's sign-in
	Suppliers   supplierList
	Accounts    accountStore
	Publishers  publisherList
	Sessions    sessionStore // console sign-ins
	Campaigns   campaignStore
	Quotas      quotaStore
	Screeners   screenerStore
	Catalog     questionCatalog
	Feasibility feasibilityInputs
	Results     resultStore
	Activity    campaignActivity
	Market      marketStats
	Quality     qualityBlocks
	Processes   processList
	Deliveries  deliveryLog
	Postbacks   postbackQueue
	Ledger      statementLedger
	Idempotency idempotencyStore
	Tx          transactor

	Log         *zap.Logger
	Environment string              // the deployment's environment; other tokens get 401
	PublicURL   string              // base of URLs handed out
	Limiter     *httpio.RateLimiter // per-token limit on /api/v1 and /insights_api
	// AuthFailures limits failed authentications per client address (nil: no limit); the
	// supply API shares it.
	AuthFailures *httpio.AuthFailures
	Panel        *engine.Panel // the in-memory panel feasibility estimates from
	Outcomes     Outcomes      // reject_completes, reconcile and redirect_test
	// Key signs the web console's CSRF values; nil: no console (RegisterConsole mounts nothing).
	Key *entrytoken.Key
	// ConsoleTTL is how long a console sign-in lasts (0: 8 hours).
	ConsoleTTL time.Duration
	// EngineStatus reports this process's engine to the console's operator view (nil: not shown).
	EngineStatus func() EngineStatus
	// Webhooks is the delivery worker: PUT /webhook refuses what its outbound policy would,
	// and POST /webhook/test sends through it (nil: the URL's form alone is checked, and the
	// test answers 503).
	Webhooks *payout.Worker
}

// Outcomes is the session-side logic of the buyer routes that act on completes. Each takes
// the authenticated buyer, the campaign id of the path and the request body, and returns
// the value to answer 200 with. The router implements it.
type Outcomes interface {
	RejectCompletes(ctx context.Context, buyer persistence.Buyer, campaignID int64, body []byte) (any, error)
	Reconcile(ctx context.Context, buyer persistence.Buyer, campaignID int64, body []byte) (any, error)
	RedirectTest(ctx context.Context, buyer persistence.Buyer, campaignID int64, body []byte) (any, error)
	// RedirectTestURL is the signed URL that starts a test session on a campaign.
	RedirectTestURL(campaignID int64, buyerSecret string) string
}

// outcome adapts an Outcomes method to a route.
func outcome(fn func(context.Context, persistence.Buyer, int64, []byte) (any, error)) handler {
	return func(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
		id, err := pathID(ctx, "id")
		if err != nil {
			return err
		}
		out, err := fn(dbContext(ctx), b, id, ctx.PostBody())
		if err != nil {
			return err
		}
		httpio.WriteJSON(ctx, fasthttp.StatusOK, out)
		return nil
	}
}

// API is the buyer interface: one handler type per resource family, each holding only
// what it uses, behind the one gate (auth.go) of every route. The console's pages
// (console.go) call the same families.
type API struct {
	gate        *gate
	lookups     *lookupAPI
	campaigns   *campaignAPI
	quotas      *quotaAPI
	screeners   *screenerAPI
	feasibility *feasibilityAPI
	accounts    *accountAPI
	insights    *insightsAPI
	statements  *statementAPI
	outcomes    Outcomes
	pages       consoleSite
}

// New returns the buyer interface.
func New(d Deps) *API {
	if d.Log == nil {
		d.Log = zap.NewNop()
	}
	if d.Outcomes == nil {
		d.Outcomes = noOutcomes{}
	}
	exports := httpio.NewCSVStreams(maxExports, d.Log) // shared: maxExports bounds them all
	a := &API{
		gate:        newGate(d),
		lookups:     &lookupAPI{catalog: d.Catalog, partners: d.Suppliers, env: d.Environment},
		campaigns:   &campaignAPI{store: d.Campaigns, env: d.Environment, outcomes: d.Outcomes},
		quotas:      &quotaAPI{store: d.Quotas},
		screeners:   &screenerAPI{store: d.Screeners},
		feasibility: &feasibilityAPI{catalog: d.Feasibility, panel: d.Panel},
		accounts:    &accountAPI{store: d.Accounts, deliveries: d.Deliveries, webhooks: d.Webhooks},
		insights:    &insightsAPI{store: d.Results, publicURL: d.PublicURL, exports: exports},
		statements:  &statementAPI{ledger: d.Ledger, exports: exports},
		outcomes:    d.Outcomes,
	}
	a.pages = newConsoleSite(d, a)
	return a
}

// Prefix is the path prefix of every route of the buyer interface.
const Prefix = "/api/v1"

// Route is one method and path pattern (fasthttp/router syntax) of the interface.
type Route struct {
	Method, Pattern string
	h               handler
	CSV             bool // answers text/csv on success: Accept may admit CSV or JSON
}

// readPosts are the POST routes that change nothing: a read token may call them.
var readPosts = map[string]bool{
	Prefix + "/campaigns/realtime_feasibility":     true, // an estimate of a campaign not stored
	Prefix + "/campaigns/{id}/export_demographics": true, // a CSV of stored sessions
}

// Writes reports whether the route changes anything, so that a read token may not call it
// (docs/api.md, "Authentication"): every method but GET and HEAD writes, except the POSTs
// of readPosts. It is the one place that decides; wrap refuses per route by it.
func (r Route) Writes() bool {
	if r.Method == "GET" || r.Method == "HEAD" {
		return false
	}
	return !(r.Method == "POST" && readPosts[r.Pattern])
}

// Routes lists every route of the interface (/api/v1, then /insights_api), in
// documentation order.
func (a *API) Routes() []Route {
	return append(a.apiRoutes(), a.insights.insightsRoutes()...)
}

func (a *API) apiRoutes() []Route {
	r := func(method, path string, h handler) Route { return Route{Method: method, Pattern: Prefix + path, h: h} }
	return []Route{
		r("GET", "/country_languages", a.lookups.countryLanguages),
		r("GET", "/qualifications", a.lookups.qualifications),
		r("GET", "/qualifications/{question_id}", a.lookups.qualification),
		r("GET", "/suppliers", a.lookups.suppliers),

		r("GET", "/campaigns", a.campaigns.listCampaigns),
		r("POST", "/campaigns", a.gate.idempotent(a.campaigns.createCampaign)),
		r("GET", "/campaigns/{id}", a.campaigns.showCampaign),
		r("PUT", "/campaigns/{id}", a.campaigns.updateCampaign),
		r("GET", "/campaigns/{id}/redirect_test", outcome(a.outcomes.RedirectTest)),
		r("POST", "/campaigns/{id}/reject_completes", outcome(a.outcomes.RejectCompletes)),
		r("POST", "/campaigns/{id}/reconcile", outcome(a.outcomes.Reconcile)),
		r("GET", "/campaigns/{id}/feasibility", a.feasibility.campaignFeasibility),
		r("POST", "/campaigns/realtime_feasibility", a.feasibility.realtimeFeasibility),
		r("POST", "/campaigns/{id}/campaign_exclusions", a.campaigns.excludeFromCampaign),
		{Method: "POST", Pattern: Prefix + "/campaigns/{id}/export_demographics", h: a.insights.exportDemographics, CSV: true},

		r("POST", "/campaigns/{id}/campaign_quotas", a.gate.idempotent(a.quotas.createQuota)),
		r("GET", "/campaigns/{id}/campaign_quotas/{quota_id}", a.quotas.showQuota),
		r("PUT", "/campaigns/{id}/campaign_quotas/{quota_id}", a.quotas.updateQuota),
		r("DELETE", "/campaigns/{id}/campaign_quotas/{quota_id}", a.quotas.deleteQuota),
		r("GET", "/campaigns/{id}/campaign_quotas/{quota_id}/feasibility", a.feasibility.quotaFeasibility),

		r("POST", "/campaigns/{id}/campaign_retargets", a.campaigns.addRetargets),
		r("DELETE", "/campaigns/{id}/campaign_retargets", a.campaigns.removeRetargets),

		r("POST", "/campaign_relationships", a.campaigns.createRelationship),
		r("DELETE", "/campaign_relationships/{id}", a.campaigns.deleteRelationship),

		r("POST", "/custom_qualifications", a.screeners.createCustomQualification),
		r("POST", "/custom_qualifications/{question_id}/custom_qualification_answers", a.screeners.createCustomAnswer),
		r("POST", "/campaigns/{id}/campaign_qualifications", a.screeners.attachCustomQualification),
		r("PUT", "/campaigns/{id}/campaign_qualifications/{qualification_id}", a.screeners.updateCustomQualification),
		r("DELETE", "/campaigns/{id}/campaign_qualifications/{qualification_id}", a.screeners.detachCustomQualification),

		r("POST", "/adhoc_accounts", a.accounts.createAdhocAccount),

		r("GET", "/webhook", a.accounts.showWebhook),
		r("PUT", "/webhook", a.accounts.setWebhook),
		r("GET", "/webhook/deliveries", a.accounts.webhookDeliveries),
		r("POST", "/webhook/test", a.accounts.testWebhook),

		{Method: "GET", Pattern: Prefix + "/statements", h: a.statements.statement, CSV: true}, // statements.go
	}
}

// Register mounts every /api/v1 and /insights_api route on mux.
func (a *API) Register(mux *httpio.Mux) {
	for _, r := range a.Routes() {
		h := r.h
		if r.Writes() {
			h = writeRoute(r, h)
		}
		if r.CSV {
			mux.Handle(r.Method, r.Pattern, a.gate.wrapCSV(h))
		} else {
			mux.Handle(r.Method, r.Pattern, a.gate.wrap(h))
		}
	}
}

// noOutcomes stands in when no router is wired: the routes answer 501.
type noOutcomes struct{}

func (noOutcomes) RejectCompletes(context.Context, persistence.Buyer, int64, []byte) (any, error) {
	return nil, fault.NotImplemented("reject_completes")
}

func (noOutcomes) Reconcile(context.Context, persistence.Buyer, int64, []byte) (any, error) {
	return nil, fault.NotImplemented("reconcile")
}

func (noOutcomes) RedirectTest(context.Context, persistence.Buyer, int64, []byte) (any, error) {
	return nil, fault.NotImplemented("redirect_test")
}

func (noOutcomes) RedirectTestURL(int64, string) string { return "" }
