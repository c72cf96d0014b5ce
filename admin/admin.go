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

	"github.com/dgraph-io/ristretto/v2"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/internal/payout"
	"github.com/switchboard/switchboard/persistence"
)

// Deps is what the buyer interface needs from the process.
type Deps struct {
	DB          *persistence.DB
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
func (a *API) outcome(fn func(context.Context, persistence.Buyer, int64, []byte) (any, error)) handler {
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

// API is the buyer interface.
type API struct {
	d       Deps
	auth    *ristretto.Cache[string, cachedBuyer]
	exports *httpio.CSVStreams // the CSV exports being streamed (maxExports)
}

// New returns the buyer interface.
func New(d Deps) *API {
	if d.Log == nil {
		d.Log = zap.NewNop()
	}
	if d.Outcomes == nil {
		d.Outcomes = noOutcomes{}
	}
	cache, err := ristretto.NewCache(&ristretto.Config[string, cachedBuyer]{
		NumCounters: 100_000,
		MaxCost:     10_000,
		BufferItems: 64,
	})
	if err != nil {
		panic("admin: auth cache: " + err.Error()) // only on an invalid static configuration
	}
	return &API{d: d, auth: cache, exports: httpio.NewCSVStreams(maxExports, d.Log)}
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
	return append(a.apiRoutes(), a.insightsRoutes()...)
}

func (a *API) apiRoutes() []Route {
	r := func(method, path string, h handler) Route { return Route{Method: method, Pattern: Prefix + path, h: h} }
	return []Route{
		r("GET", "/country_languages", a.countryLanguages),
		r("GET", "/qualifications", a.qualifications),
		r("GET", "/qualifications/{question_id}", a.qualification),
		r("GET", "/suppliers", a.suppliers),

		r("GET", "/campaigns", a.listCampaigns),
		r("POST", "/campaigns", a.idempotent(a.createCampaign)),
		r("GET", "/campaigns/{id}", a.showCampaign),
		r("PUT", "/campaigns/{id}", a.updateCampaign),
		r("GET", "/campaigns/{id}/redirect_test", a.outcome(a.d.Outcomes.RedirectTest)),
		r("POST", "/campaigns/{id}/reject_completes", a.outcome(a.d.Outcomes.RejectCompletes)),
		r("POST", "/campaigns/{id}/reconcile", a.outcome(a.d.Outcomes.Reconcile)),
		r("GET", "/campaigns/{id}/feasibility", a.campaignFeasibility),
		r("POST", "/campaigns/realtime_feasibility", a.realtimeFeasibility),
		r("POST", "/campaigns/{id}/campaign_exclusions", a.excludeFromCampaign),
		{Method: "POST", Pattern: Prefix + "/campaigns/{id}/export_demographics", h: a.exportDemographics, CSV: true},

		r("POST", "/campaigns/{id}/campaign_quotas", a.idempotent(a.createQuota)),
		r("GET", "/campaigns/{id}/campaign_quotas/{quota_id}", a.showQuota),
		r("PUT", "/campaigns/{id}/campaign_quotas/{quota_id}", a.updateQuota),
		r("DELETE", "/campaigns/{id}/campaign_quotas/{quota_id}", a.deleteQuota),
		r("GET", "/campaigns/{id}/campaign_quotas/{quota_id}/feasibility", a.quotaFeasibility),

		r("POST", "/campaigns/{id}/campaign_retargets", a.addRetargets),
		r("DELETE", "/campaigns/{id}/campaign_retargets", a.removeRetargets),

		r("POST", "/campaign_relationships", a.createRelationship),
		r("DELETE", "/campaign_relationships/{id}", a.deleteRelationship),

		r("POST", "/custom_qualifications", a.createCustomQualification),
		r("POST", "/custom_qualifications/{question_id}/custom_qualification_answers", a.createCustomAnswer),
		r("POST", "/campaigns/{id}/campaign_qualifications", a.attachCustomQualification),
		r("PUT", "/campaigns/{id}/campaign_qualifications/{qualification_id}", a.updateCustomQualification),
		r("DELETE", "/campaigns/{id}/campaign_qualifications/{qualification_id}", a.detachCustomQualification),

		r("POST", "/adhoc_accounts", a.createAdhocAccount),

		r("GET", "/webhook", a.showWebhook),
		r("PUT", "/webhook", a.setWebhook),
		r("GET", "/webhook/deliveries", a.webhookDeliveries),
		r("POST", "/webhook/test", a.testWebhook),

		{Method: "GET", Pattern: Prefix + "/statements", h: a.statement, CSV: true}, // statements.go
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
			mux.Handle(r.Method, r.Pattern, a.wrapCSV(h))
		} else {
			mux.Handle(r.Method, r.Pattern, a.wrap(h))
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
