package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
)

// feasibilityInputs is what a feasibility estimate reads besides the panel (persistence
// CatalogStore).
type feasibilityInputs interface {
	FeasibilityInput(ctx context.Context, buyerID, campaignID int64) (engine.FeasibilityRequest, error)
	CountryQuestions(ctx context.Context, buyerID int64, countryID int32) (map[int32]int16, error)
	CountryOfLanguage(ctx context.Context, countryLanguageID int) (int32, error)
}

// feasibilityAPI serves feasibility estimates of stored and realtime campaigns.
type feasibilityAPI struct {
	catalog feasibilityInputs
	panel   *engine.Panel // nil: an empty panel
}

// feasibilityQuota is one per-quota item of a feasibility answer: an estimate, or a message
// when the quota names questions the country's catalog does not hold.
type feasibilityQuota struct {
	ID                 int64  `json:"id,omitempty"`
	EstimatedCompletes *int   `json:"estimated_completes,omitempty"`
	Message            string `json:"message,omitempty"`
}

// feasibilityAnswer is a feasibility estimate as docs/feasibility.md describes it; ID is
// absent in realtime answers.
type feasibilityAnswer struct {
	ID                 int64              `json:"id,omitempty"`
	EstimatedCompletes int                `json:"estimated_completes"`
	OverNumDays        int                `json:"over_num_days"`
	CampaignQuotas     []feasibilityQuota `json:"campaign_quotas"`
}

// estimate runs the engine's model over the in-memory panel.
func (a *feasibilityAPI) estimate(ctx *fasthttp.RequestCtx, b persistence.Buyer, req engine.FeasibilityRequest) (engine.FeasibilityResult, error) {
	known, err := a.catalog.CountryQuestions(dbContext(ctx), b.ID, req.CountryID)
	if err != nil {
		return engine.FeasibilityResult{}, err
	}
	panel := a.panel
	if panel == nil {
		panel = engine.NewPanel()
	}
	return engine.Feasibility(req, panel, time.Now().Unix(), func(_, q int32) bool {
		_, ok := known[q]
		return ok
	}), nil
}

func answerOf(res engine.FeasibilityResult, withIDs bool) feasibilityAnswer {
	out := feasibilityAnswer{EstimatedCompletes: res.EstimatedCompletes, OverNumDays: res.OverNumDays,
		CampaignQuotas: make([]feasibilityQuota, len(res.Quotas))}
	for i, q := range res.Quotas {
		item := feasibilityQuota{Message: q.Message}
		if withIDs {
			item.ID = q.ID
		}
		if q.Message == "" {
			n := q.EstimatedCompletes
			item.EstimatedCompletes = &n
		}
		out.CampaignQuotas[i] = item
	}
	return out
}

// campaignFeasibility is GET /api/v1/campaigns/:id/feasibility.
func (a *feasibilityAPI) campaignFeasibility(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	id, err := pathID(ctx, "id")
	if err != nil {
		return err
	}
	req, err := a.catalog.FeasibilityInput(dbContext(ctx), b.ID, id)
	if err != nil {
		return err
	}
	res, err := a.estimate(ctx, b, req)
	if err != nil {
		return err
	}
	out := answerOf(res, true)
	out.ID = id
	httpio.WriteJSON(ctx, fasthttp.StatusOK, out)
	return nil
}

// quotaFeasibility is GET /api/v1/campaigns/:id/campaign_quotas/:quota_id/feasibility: the
// quota estimated alone, capped by the campaign's global quotas.
func (a *feasibilityAPI) quotaFeasibility(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	cid, qid, err := quotaPath(ctx)
	if err != nil {
		return err
	}
	req, err := a.catalog.FeasibilityInput(dbContext(ctx), b.ID, cid)
	if err != nil {
		return err
	}
	kept := req.Quotas[:0:0]
	found := false
	for _, q := range req.Quotas {
		if q.ID == qid {
			found = true
		}
		if q.ID == qid || q.Global {
			kept = append(kept, q)
		}
	}
	if !found {
		return fault.NotFound("quota not found")
	}
	req.Quotas = kept
	res, err := a.estimate(ctx, b, req)
	if err != nil {
		return err
	}
	out := map[string]any{"id": qid, "estimated_completes": res.EstimatedCompletes, "over_num_days": res.OverNumDays}
	for _, q := range res.Quotas {
		if q.ID == qid && q.Message != "" {
			out["message"] = q.Message
		}
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, out)
	return nil
}

// realtimeBody is POST /api/v1/campaigns/realtime_feasibility. country_language_id and cpi
// may be omitted: country_language_id defaults to 1 (en-US) and cpi, a bid, does not change
// the estimate (docs/feasibility.md).
type realtimeBody struct {
	Incidence         *int              `json:"incidence" range:"1,100"`
	LengthOfInterview *int              `json:"length_of_interview" range:"1,120"`
	DaysInField       *int              `json:"days_in_field" range:"1,365"`
	CountryLanguageID *int              `json:"country_language_id" range:"1"`
	CPI               *json.Number      `json:"cpi"`
	CampaignQuotas    []json.RawMessage `json:"campaign_quotas"`
}

// realtimeFeasibility estimates a campaign that does not exist yet.
func (a *feasibilityAPI) realtimeFeasibility(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	out, err := a.realtime(ctx, b, ctx.PostBody())
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, out)
	return nil
}

// realtime is POST /campaigns/realtime_feasibility once routed: body validated and
// estimated. The console's quota form estimates through it too.
func (a *feasibilityAPI) realtime(ctx *fasthttp.RequestCtx, b persistence.Buyer, body []byte) (feasibilityAnswer, error) {
	var in realtimeBody
	if err := httpio.DecodeJSON(body, &in); err != nil {
		return feasibilityAnswer{}, err
	}
	switch {
	case in.Incidence == nil:
		return feasibilityAnswer{}, fault.Invalid("incidence", "is required")
	case in.LengthOfInterview == nil:
		return feasibilityAnswer{}, fault.Invalid("length_of_interview", "is required")
	case len(in.CampaignQuotas) == 0:
		return feasibilityAnswer{}, fault.Invalid("campaign_quotas", "must be a non-empty array")
	case len(in.CampaignQuotas) > 100:
		return feasibilityAnswer{}, fault.Invalid("campaign_quotas", "must have at most 100 quotas")
	}
	if in.CPI != nil {
		if f, err := in.CPI.Float64(); err != nil || f < 0 {
			return feasibilityAnswer{}, fault.Invalid("cpi", "must be a non-negative decimal")
		}
	}
	cl := 1
	if in.CountryLanguageID != nil {
		cl = *in.CountryLanguageID
	}
	country, err := a.catalog.CountryOfLanguage(dbContext(ctx), cl)
	if err != nil {
		if fault.KindOf(err) == fault.KindNotFound {
			return feasibilityAnswer{}, fault.Invalid("country_language_id", "is not a known country language")
		}
		return feasibilityAnswer{}, err
	}
	types, err := a.catalog.CountryQuestions(dbContext(ctx), b.ID, country)
	if err != nil {
		return feasibilityAnswer{}, err
	}
	req := engine.FeasibilityRequest{CountryID: country, Incidence: *in.Incidence, LOI: *in.LengthOfInterview}
	if in.DaysInField != nil {
		req.DaysInField = *in.DaysInField
	}
	for i, raw := range in.CampaignQuotas {
		f, err := DecodeQuota(raw, true)
		if err != nil {
			if fe := fault.As(err); fe != nil && fe.Kind == fault.KindInvalid {
				return feasibilityAnswer{}, fault.Invalid(fmt.Sprintf("campaign_quotas[%d].%s", i, fe.Field), "%s", fe.Message[len(fe.Field)+1:])
			}
			return feasibilityAnswer{}, err
		}
		q := engine.Quota{ID: int64(i + 1), NumRespondents: *f.NumRespondents}
		if f.IsGlobal != nil {
			q.Global = *f.IsGlobal
		}
		for _, qual := range f.Qualifications {
			q.Conditions = append(q.Conditions, persistence.Condition(int32(qual.QuestionID), types[int32(qual.QuestionID)], qual.PreCodes))
		}
		req.Quotas = append(req.Quotas, q)
	}
	res, err := a.estimate(ctx, b, req)
	if err != nil {
		return feasibilityAnswer{}, err
	}
	return answerOf(res, false), nil
}
