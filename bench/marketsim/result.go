package marketsim

import (
	"fmt"

	"github.com/switchboard/switchboard/engine"
)

// Result is what a run delivered.
type Result struct {
	Allocation engine.Allocation
	Reroute    int // Config.RerouteAttempts
	Seed       int64
	Arrivals   int // participant visits
	Offered    int // visits with at least one offer
	Entries    int // visits that entered a campaign (a chain counts once)
	Sessions   int // sessions entered, re-routed ones included
	Rerouted   int // sessions entered through re-routing
	// LeftEmpty counts visits that entered at least one session and ended
	// without a complete: participants who gave their time for nothing.
	LeftEmpty  int
	Completes  int // completes within the entered campaign's field period (the probe's included)
	Terminates int // sessions that screened out
	Abandoned  int // sessions abandoned (no outcome; released at the engine's timeout)
	Campaigns  int // campaigns simulated (the probe left out)
	// Due counts the campaigns (and DueQuotas their non-global quotas)
	// whose deadline falls within the run; Filled and QuotasFilled those of
	// them filled by it (the probe left out).
	Due, Filled, DueQuotas, QuotasFilled int
	Earnings                             float64 // partner earnings, USD (cpi × partner share per complete)
	BuyerCost                            float64 // what buyers paid, USD (cpi per complete)
	// ProbeSessions and ProbeHours are the sessions and simulated hours
	// the probe campaign needed before the engine's conversion estimate
	// reached 90% of its true conversion (-1: not within the run).
	ProbeSessions int
	ProbeHours    float64
	// ProbeTotal is the probe's sessions over the whole run.
	ProbeTotal int
	// ProbeFairSessions is the probe's sessions when, over its last
	// Config.FairWindow eligible visits, it was first shown at least 80% as
	// often as it would have been had the engine known its true conversion
	// (its fair share of offers: ranked by its true EPC × the policy's
	// weight, without exploration bonus); -1: not within the run.
	ProbeFairSessions int
	// ProbeShown and ProbeFair count the probe's eligible visits on which
	// it was shown, and on which it would have been shown at its true
	// conversion, over the whole run.
	ProbeShown, ProbeFair int
}

// CompletesPer1000 is completes per 1,000 participant visits.
func (r Result) CompletesPer1000() float64 { return 1000 * ratio(r.Completes, r.Arrivals) }

// CampaignsFilled is the share of campaigns due within the run that filled by their deadline.
func (r Result) CampaignsFilled() float64 { return ratio(r.Filled, r.Due) }

// QuotasFilledShare is the share of quotas due within the run that filled by their deadline.
func (r Result) QuotasFilledShare() float64 { return ratio(r.QuotasFilled, r.DueQuotas) }

// LeftEmptyPer1000 is visits that entered and left without a complete, per 1,000 visits.
func (r Result) LeftEmptyPer1000() float64 { return 1000 * ratio(r.LeftEmpty, r.Arrivals) }

// ProbeShareOfFair is how often the probe was shown against how often it
// would have been at its true conversion, over the run.
func (r Result) ProbeShareOfFair() float64 { return ratio(r.ProbeShown, r.ProbeFair) }

// TermsPerComplete is screen-outs per complete.
func (r Result) TermsPerComplete() float64 { return ratio(r.Terminates, r.Completes) }

// RevenuePerVisit is partner revenue per visit, USD.
func (r Result) RevenuePerVisit() float64 { return r.Earnings / float64(max(r.Arrivals, 1)) }

// CostPerComplete is what buyers paid per complete, USD.
func (r Result) CostPerComplete() float64 { return r.BuyerCost / float64(max(r.Completes, 1)) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// String formats the result as one line.
func (r Result) String() string {
	return fmt.Sprintf("%-8s reroute %d seed %d visits %d completes/1k %.1f campaigns filled %d/%d quotas filled %d/%d terms/complete %.2f abandoned %d revenue/visit $%.4f cost/complete $%.2f probe %d sessions %.0f h",
		r.Allocation, r.Reroute, r.Seed, r.Arrivals, r.CompletesPer1000(), r.Filled, r.Due, r.QuotasFilled, r.DueQuotas,
		r.TermsPerComplete(), r.Abandoned, r.RevenuePerVisit(), r.CostPerComplete(), r.ProbeSessions, r.ProbeHours)
}
