// Package admin serves the buyer interface (/api/v1): lookups, campaigns, quotas,
// targeting, retargeting, relationships, custom screeners, adhoc accounts and exclusions.
//
// Every route authenticates with Basic email:token, is rate limited per token, answers
// JSON, and keeps each buyer's resources invisible to every other buyer (404). Every write
// is one database transaction that notifies the campaigns it changed.
package admin

import (
	"strconv"

	"github.com/dgraph-io/ristretto/v2"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router/httpio"
)

// Deps is what the buyer interface needs from the process.
type Deps struct {
	DB          *persistence.DB
	Log         *zap.Logger
	Environment string              // the deployment's environment; other tokens get 401
	PublicURL   string              // base of URLs handed out
	Limiter     *httpio.RateLimiter // per-token limit on /api/v1 and /insights_api
}

// API is the buyer interface.
type API struct {
	d    Deps
	auth *ristretto.Cache[string, cachedBuyer]
}

// New returns the buyer interface.
func New(d Deps) *API {
	if d.Log == nil {
		d.Log = zap.NewNop()
	}
	cache, err := ristretto.NewCache(&ristretto.Config[string, cachedBuyer]{
		NumCounters: 100_000,
		MaxCost:     10_000,
		BufferItems: 64,
	})
	if err != nil {
		panic("admin: auth cache: " + err.Error()) // only on an invalid static configuration
	}
	return &API{d: d, auth: cache}
}

// Prefix is the path prefix of every route of the buyer interface.
const Prefix = "/api/v1"

// Route is one method and path pattern (fasthttp/router syntax) of the interface.
type Route struct {
	Method, Pattern string
	h               handler
}

// Routes lists every route of the interface, in documentation order.
func (a *API) Routes() []Route {
	r := func(method, path string, h handler) Route { return Route{Method: method, Pattern: Prefix + path, h: h} }
	return []Route{
		r("GET", "/country_languages", a.countryLanguages),
		r("GET", "/qualifications", a.qualifications),
		r("GET", "/qualifications/{question_id}", a.qualification),

		r("GET", "/campaigns", a.listCampaigns),
		r("POST", "/campaigns", a.createCampaign),
		r("GET", "/campaigns/{id}", a.showCampaign),
		r("PUT", "/campaigns/{id}", a.updateCampaign),
		r("GET", "/campaigns/{id}/redirect_test", notImplemented("redirect_test")),
		r("POST", "/campaigns/{id}/reject_completes", notImplemented("reject_completes")),
		r("POST", "/campaigns/{id}/reconcile", notImplemented("reconcile")),
		r("GET", "/campaigns/{id}/feasibility", notImplemented("campaign feasibility")),
		r("POST", "/campaigns/realtime_feasibility", notImplemented("realtime_feasibility")),
		r("POST", "/campaigns/{id}/campaign_exclusions", a.excludeFromCampaign),
		r("POST", "/campaigns/{id}/export_demographics", notImplemented("export_demographics")),

		r("POST", "/campaigns/{id}/campaign_quotas", a.createQuota),
		r("GET", "/campaigns/{id}/campaign_quotas/{quota_id}", a.showQuota),
		r("PUT", "/campaigns/{id}/campaign_quotas/{quota_id}", a.updateQuota),
		r("DELETE", "/campaigns/{id}/campaign_quotas/{quota_id}", a.deleteQuota),
		r("GET", "/campaigns/{id}/campaign_quotas/{quota_id}/feasibility", notImplemented("quota feasibility")),

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
	}
}

// Register mounts every /api/v1 route on mux.
func (a *API) Register(mux *httpio.Mux) {
	for _, r := range a.Routes() {
		mux.Handle(r.Method, r.Pattern, a.wrap(r.h))
	}
}

// redirectTestURL is where a buyer starts a test session on a campaign.
func (a *API) redirectTestURL(campaignID int64) string {
	return a.d.PublicURL + "/router/test/" + strconv.FormatInt(campaignID, 10)
}
