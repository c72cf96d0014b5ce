// Package marketsim plays a synthetic market forward in time through the
// engine, so that allocation policies can be compared on what they deliver:
// completes within each campaign's field period, campaigns filled, partner
// earnings. It is a model, not a forecast: participants arrive at their own
// daily rates, take the first offer (or, with a small chance, the second),
// and complete with the campaign's true conversion, which differs from the
// stated incidence the engine starts from.
package marketsim

import (
	"fmt"
	"math/rand/v2"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/engine/synth"
)

// Config describes one simulated market.
type Config struct {
	Campaigns    int               // active campaigns (synth.Market)
	Participants int               // panel size (synth.Participants)
	Days         int               // simulated days
	Seed         int64             // same seed, same market and arrivals
	Allocation   engine.Allocation // policy under test
	// TargetScale divides every quota target, so that a small panel can
	// fill a market of realistic shape (default 40).
	TargetScale int
	// RefreshEvery is the simulated time between weight refreshes
	// (seconds, default 6 h).
	RefreshEvery int64
}

// Result is what a run delivered.
type Result struct {
	Allocation  engine.Allocation
	Arrivals    int     // participant visits
	Offered     int     // visits with at least one offer
	Entries     int     // visits that entered a campaign
	Completes   int     // completes within the entered campaign's field period
	Target      int     // sum over campaigns of their non-global targets
	Filled      int     // campaigns whose every non-global quota filled in time
	Campaigns   int     // campaigns simulated
	Earnings    float64 // partner earnings over the run, USD (cpi × share per complete)
	EPCPerVisit float64 // Earnings / Arrivals
}

// String formats the result as one table row.
func (r Result) String() string {
	return fmt.Sprintf("%-8s arrivals %6d offered %5.1f%% entries %6d completes %6d (%.1f%% of target %d) filled %d/%d campaigns earnings $%.0f ($%.4f/visit)",
		r.Allocation, r.Arrivals, 100*float64(r.Offered)/float64(max(r.Arrivals, 1)), r.Entries, r.Completes,
		100*float64(r.Completes)/float64(max(r.Target, 1)), r.Target, r.Filled, r.Campaigns, r.Earnings, r.EPCPerVisit)
}

// share is the publisher revenue share the simulation matches with.
const share = 0.6

// Run plays the market of cfg for cfg.Days days in hourly steps.
func Run(cfg Config) Result {
	if cfg.TargetScale <= 0 {
		cfg.TargetScale = 40
	}
	if cfg.RefreshEvery <= 0 {
		cfg.RefreshEvery = 6 * 3600
	}
	r := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x51))
	start := synth.Now
	cs := synth.Market(cfg.Campaigns, cfg.Seed)
	truth := make(map[int64]float64, len(cs)) // true conversion per campaign
	end := make(map[int64]int64, len(cs))     // end of field period
	for i := range cs {
		c := &cs[i]
		c.FieldStart = start - int64(r.IntN(c.DaysInField)*86400/2) // some already under way
		c.Retargets, c.ExcludedParticipants = nil, nil
		for j := range c.Quotas {
			c.Quotas[j].NumRespondents = max(1, c.Quotas[j].NumRespondents/cfg.TargetScale)
		}
		truth[c.ID] = min(float64(c.Incidence)/100*(0.5+r.Float64()), 0.95)
		end[c.ID] = c.FieldStart + int64(c.DaysInField)*86400
	}

	e := engine.New(nil)
	e.Load(cs)
	panel := engine.NewPanel()
	ps := synth.Participants(cfg.Participants, cfg.Seed+1, cfg.Campaigns)
	rates := make([]float64, len(ps)) // arrivals per day
	for i := range ps {
		ps[i].Entries = nil
		rates[i] = 0.05 + 0.95*r.Float64()*r.Float64()
		// A month of history at its own rate, so supply estimates see it.
		for d := 30; d > 0; d-- {
			if r.Float64() < rates[i] || d == 1 {
				if _, err := panel.Upsert(1, fmt.Sprint(ps[i].ID), ps[i], start-int64(d)*86400); err != nil {
					panic(err) // ids are set by synth
				}
			}
		}
	}
	e.SetAllocation(cfg.Allocation, panel)

	res := Result{Allocation: cfg.Allocation, Campaigns: len(cs)}
	completes := make(map[int64]int, len(cs))
	dst := make([]engine.Offer, 0, 10)
	var quotas []int64
	lastRefresh := int64(-1 << 62)
	// Arrivals draw from their own stream, so both policies see the same
	// visits; choices and outcomes from another.
	ra := rand.New(rand.NewPCG(uint64(cfg.Seed), 0xa1))
	rc := rand.New(rand.NewPCG(uint64(cfg.Seed), 0xc1))
	for now := start; now < start+int64(cfg.Days)*86400; now += 3600 {
		if now-lastRefresh >= cfg.RefreshEvery {
			e.RefreshAllocation(now)
			lastRefresh = now
		}
		for i := range ps {
			if ra.Float64() >= rates[i]/24 {
				continue
			}
			res.Arrivals++
			panel.Touch(ps[i].ID, now)
			p, _ := panel.GetByID(ps[i].ID)
			dst = e.Match(p, share, now, cap(dst), dst)
			if len(dst) == 0 {
				continue
			}
			res.Offered++
			pick := dst[0]
			if len(dst) > 1 && rc.Float64() < 0.2 {
				pick = dst[1]
			}
			var ok bool
			quotas, ok = e.Eligible(p, pick.CampaignID, now, quotas[:0])
			if !ok {
				continue
			}
			res.Entries++
			ctr := e.Counters()
			ctr.RecordEntry(pick.CampaignID, quotas)
			panel.RecordEntry(p.ID, pick.CampaignID, now)
			done := rc.Float64() < truth[pick.CampaignID]
			ctr.RecordOutcome(pick.CampaignID, quotas, done, now)
			if done && now < end[pick.CampaignID] {
				completes[pick.CampaignID]++
				res.Completes++
				res.Earnings += float64(pick.CPICents) / 100 * share
			}
		}
		// Campaigns leave the market at the end of their field period.
		var gone []int64
		for id, t := range end {
			if t <= now && t > now-3600 {
				gone = append(gone, id)
			}
		}
		if len(gone) > 0 {
			e.Apply(nil, gone)
		}
	}
	ctr := e.Counters()
	for i := range cs {
		c := &cs[i]
		filled := true
		for _, q := range c.Quotas {
			if q.Global {
				continue
			}
			res.Target += q.NumRespondents
			if ctr.Quota(q.ID).Completes < int64(q.NumRespondents) {
				filled = false
			}
		}
		if filled {
			res.Filled++
		}
	}
	res.EPCPerVisit = res.Earnings / float64(max(res.Arrivals, 1))
	return res
}
