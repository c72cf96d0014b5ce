// Package marketsim plays a synthetic market forward in time through the
// real engine and its real allocation code, on a virtual clock, so that
// allocation policies can be compared on what they deliver: completes per
// visit, campaigns and quotas filled by their deadline, hard quotas filled,
// terminations, partner revenue, buyer cost and how fast a new campaign's
// true conversion is learned. It is a model, not a forecast; every
// assumption of the generator is a field of Config (docs/allocation.md,
// "Simulator").
package marketsim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/engine/synth"
)

// Config describes one simulated market. Zero fields take the defaults
// documented on each.
type Config struct {
	Campaigns    int               // active campaigns (synth.Market)
	Participants int               // panel size (synth.Participants)
	Days         int               // simulated days
	Seed         int64             // same seed, same market, arrivals and outcomes
	Allocation   engine.Allocation // policy under test
	// TargetScale divides every quota target, so that a small panel can
	// fill a market of realistic shape (default 40).
	TargetScale int
	// RefreshEvery is the simulated time between weight refreshes
	// (seconds, default 6 h).
	RefreshEvery int64
	// TruthLow and TruthHigh bound the hidden true conversion of a
	// campaign: its stated incidence × a uniform draw in [TruthLow,
	// TruthHigh] (default 0.5 and 1.5), at most 0.95.
	TruthLow, TruthHigh float64
	// HardIncidence is the stated incidence (percent) at or under which a
	// campaign's non-global quotas count as hard to fill (default 25).
	HardIncidence int
	// PartnerShares are the revenue shares of the supply partners; each
	// participant belongs to partner (id mod len) (default 0.6, 0.5, 0.7).
	PartnerShares []float64
	// WaveAmplitude shapes each partner's daily wave: the hourly arrival
	// chance is the participant's daily rate / 24 × (1 + WaveAmplitude ×
	// cos(2π (hour − peak) / 24)), partner j peaking at 8 + 16·j/partners
	// hours UTC (default 0.8).
	WaveAmplitude float64
	// PositionBias is the chance that a participant enters the offer at
	// each position of the list shown; the rest of the mass leaves without
	// entering (default 0.55, 0.25, 0.12: three offers looked at).
	PositionBias []float64
	// NewCampaignAt is when the probe campaign enters the market (seconds
	// after the start, default one day): stated incidence 20%, true
	// conversion 40% (2× its prior), a broad audience, a target of 40. It is left out of the fill figures.
	NewCampaignAt int64
	// RerouteAttempts is the partners' reroute_attempts (docs/rules.md
	// §10, 0..5, default 0 = off): while a chain has attempts left, a
	// session that terminates, or an entry refused because the campaign
	// can no longer take the participant, continues the chain with the
	// next-ranked campaign the participant is eligible for now and has not
	// tried in the chain. A complete ends the chain.
	RerouteAttempts int
	// FairWindow is the number of the probe's eligible visits over which
	// its share of offers is compared with its fair share (default 200).
	FairWindow int
}

// ErrReroute is returned by Run for RerouteAttempts outside 0..5 (docs/rules.md §10).
var ErrReroute = errors.New("marketsim: reroute attempts must be 0..5")

func (cfg *Config) defaults() {
	if cfg.TargetScale <= 0 {
		cfg.TargetScale = 40
	}
	if cfg.RefreshEvery <= 0 {
		cfg.RefreshEvery = 6 * 3600
	}
	if cfg.TruthLow <= 0 && cfg.TruthHigh <= 0 {
		cfg.TruthLow, cfg.TruthHigh = 0.5, 1.5
	}
	if cfg.HardIncidence <= 0 {
		cfg.HardIncidence = 25
	}
	if len(cfg.PartnerShares) == 0 {
		cfg.PartnerShares = []float64{0.6, 0.5, 0.7}
	}
	if cfg.WaveAmplitude <= 0 {
		cfg.WaveAmplitude = 0.8
	}
	if len(cfg.PositionBias) == 0 {
		cfg.PositionBias = []float64{0.55, 0.25, 0.12}
	}
	if cfg.NewCampaignAt <= 0 {
		cfg.NewCampaignAt = 86400
	}
	if cfg.FairWindow <= 0 {
		cfg.FairWindow = 200
	}
}

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
	Terminates int // entries that did not complete
	Target     int // sum over campaigns of their non-global targets
	Campaigns  int // campaigns simulated (the probe left out)
	// Due counts the campaigns (and DueQuotas their non-global quotas)
	// whose deadline falls within the run; Filled and QuotasFilled those of
	// them filled by it.
	Due, Filled, DueQuotas, QuotasFilled int
	// HardTarget and HardCompletes are the target and the completes of the
	// non-global quotas of low-incidence campaigns (Config.HardIncidence).
	HardTarget, HardCompletes int
	Earnings                  float64 // partner earnings, USD (cpi × partner share per complete)
	BuyerCost                 float64 // what buyers paid, USD (cpi per complete)
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
	// Fill is the share of the total target completed at the end of each
	// simulated day (the probe left out).
	Fill []float64
	// QuotaFill is the share of all non-global quotas (the probe's left
	// out) full at the end of each simulated day.
	QuotaFill []float64
}

// CompletesPer1000 is completes per 1,000 participant visits.
func (r Result) CompletesPer1000() float64 { return 1000 * ratio(r.Completes, r.Arrivals) }

// CampaignsFilled is the share of campaigns due within the run that filled by their deadline.
func (r Result) CampaignsFilled() float64 { return ratio(r.Filled, r.Due) }

// QuotasFilledShare is the share of quotas due within the run that filled by their deadline.
func (r Result) QuotasFilledShare() float64 { return ratio(r.QuotasFilled, r.DueQuotas) }

// HardFill is the share of the hard quotas' target completed.
func (r Result) HardFill() float64 { return ratio(r.HardCompletes, r.HardTarget) }

// LeftEmptyPer1000 is visits that entered and left without a complete, per 1,000 visits.
func (r Result) LeftEmptyPer1000() float64 { return 1000 * ratio(r.LeftEmpty, r.Arrivals) }

// ProbeShareOfFair is how often the probe was shown against how often it
// would have been at its true conversion, over the run.
func (r Result) ProbeShareOfFair() float64 { return ratio(r.ProbeShown, r.ProbeFair) }

// TermsPerComplete is terminations per complete.
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
	return fmt.Sprintf("%-8s reroute %d seed %d visits %d completes/1k %.1f campaigns filled %d/%d quotas filled %d/%d hard fill %.1f%% terms/complete %.2f revenue/visit $%.4f cost/complete $%.2f probe %d sessions %.0f h",
		r.Allocation, r.Reroute, r.Seed, r.Arrivals, r.CompletesPer1000(), r.Filled, r.Due, r.QuotasFilled, r.DueQuotas,
		100*r.HardFill(), r.TermsPerComplete(), r.RevenuePerVisit(), r.CostPerComplete(), r.ProbeSessions, r.ProbeHours)
}

// probeTruth is the probe campaign's true conversion; probeIncidence its
// stated incidence (percent), half of it.
const (
	probeTruth     = 0.40
	probeIncidence = 20
	// probeTarget is the probe's target: about 100 sessions at its true
	// conversion, past the 80 its estimate needs on average, and small
	// enough that its own weight under the balanced policy stays ordinary.
	probeTarget = 40
)

// Run plays the market of cfg for cfg.Days days in hourly steps.
func Run(cfg Config) (Result, error) {
	if cfg.RerouteAttempts < 0 || cfg.RerouteAttempts > 5 {
		return Result{}, ErrReroute
	}
	cfg.defaults()
	r := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x51))
	start := synth.Now
	stop := start + int64(cfg.Days)*86400
	cs := synth.Market(cfg.Campaigns, cfg.Seed)
	truth := make(map[int64]float64, len(cs)+1) // true conversion per campaign
	end := make(map[int64]int64, len(cs)+1)     // end of field period
	hard := make(map[int64]bool, len(cs))
	for i := range cs {
		c := &cs[i]
		c.FieldStart = start - int64(r.IntN(c.DaysInField)*86400/2) // some already under way
		c.Retargets, c.ExcludedParticipants = nil, nil
		for j := range c.Quotas {
			c.Quotas[j].NumRespondents = max(1, c.Quotas[j].NumRespondents/cfg.TargetScale)
		}
		f := cfg.TruthLow + (cfg.TruthHigh-cfg.TruthLow)*r.Float64()
		truth[c.ID] = min(float64(c.Incidence)/100*f, 0.95)
		end[c.ID] = c.FieldStart + int64(c.DaysInField)*86400
		hard[c.ID] = c.Incidence <= cfg.HardIncidence
	}
	// The probe: a new campaign whose true conversion is twice its prior.
	probeAt := start + cfg.NewCampaignAt
	lastQuota := int64(0)
	for _, c := range cs {
		for _, q := range c.Quotas {
			lastQuota = max(lastQuota, q.ID)
		}
	}
	probe := engine.Campaign{
		ID: int64(len(cs) + 1), BuyerID: 1, CountryID: synth.Country, Status: engine.StatusActive,
		CPICents: 250, LOI: 15, Incidence: probeIncidence, ReentryMinutes: engine.ReentryNever,
		DaysInField: max(cfg.Days, 1), FieldStart: probeAt,
		Quotas: []engine.Quota{{ID: lastQuota + 1, NumRespondents: probeTarget, Conditions: []engine.Condition{
			{QuestionID: engine.QuestionAge, Codes: ages(18, 99)}}}},
	}
	truth[probe.ID] = probeTruth
	end[probe.ID] = probeAt + int64(probe.DaysInField)*86400

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
					return Result{}, err
				}
			}
		}
	}
	e.SetAllocation(cfg.Allocation, panel)
	np := len(cfg.PartnerShares)

	res := Result{Allocation: cfg.Allocation, Reroute: cfg.RerouteAttempts, Seed: cfg.Seed, Campaigns: len(cs),
		ProbeSessions: -1, ProbeHours: -1, ProbeFairSessions: -1}
	for i := range cs {
		for _, q := range cs[i].Quotas {
			if !q.Global {
				res.Target += q.NumRespondents
			}
		}
	}
	shown := len(cfg.PositionBias)
	dst := make([]engine.Offer, 0, shown+1)
	next := make([]engine.Offer, 0, cfg.RerouteAttempts+2)
	tried := make([]int64, 0, cfg.RerouteAttempts+1)
	var quotas, probeQuotas []int64
	lastRefresh := int64(-1 << 62)
	probeSessions, probeCompletes, probeInField := 0, 0, 0
	fair := newFairWindow(cfg.FairWindow)
	// Arrivals draw from their own stream, so every policy sees the same
	// visits; choices and outcomes from another.
	ra := rand.New(rand.NewPCG(uint64(cfg.Seed), 0xa1))
	rc := rand.New(rand.NewPCG(uint64(cfg.Seed), 0xc1))
	for now := start; now < stop; now += 3600 {
		if now == probeAt {
			e.Apply([]engine.Campaign{probe}, nil)
		}
		if now-lastRefresh >= cfg.RefreshEvery {
			e.RefreshAllocation(now)
			lastRefresh = now
		}
		hour := float64((now % 86400) / 3600)
		for i := range ps {
			j := int(ps[i].ID) % np
			peak := 8 + 16*float64(j)/float64(np)
			wave := 1 + cfg.WaveAmplitude*math.Cos(2*math.Pi*(hour-peak)/24)
			if ra.Float64() >= rates[i]/24*wave {
				continue
			}
			res.Arrivals++
			panel.Touch(ps[i].ID, now)
			p, _ := panel.GetByID(ps[i].ID)
			share := cfg.PartnerShares[j]
			// One more offer than are looked at, to judge the probe's fair share.
			dst = e.Match(p, share, now, shown+1, dst)
			if now >= probeAt && now < end[probe.ID] {
				var ok bool
				if probeQuotas, ok = e.Eligible(p, probe.ID, now, probeQuotas[:0]); ok {
					// Known truth needs no exploration: the oracle score is
					// the true EPC times the policy's weight alone.
					w, _, _ := e.Snapshot().Weight(probe.ID)
					oracle := float64(probe.CPICents) / 100 * share * probeTruth * w
					if fair.add(probeShown(dst, shown, probe.ID), probeFair(dst, shown, probe.ID, oracle)) && res.ProbeFairSessions < 0 {
						res.ProbeFairSessions = probeSessions
					}
				}
			}
			if len(dst) > shown {
				dst = dst[:shown]
			}
			if len(dst) == 0 {
				continue
			}
			res.Offered++
			x, pos := rc.Float64(), -1
			for k := range dst {
				if x < cfg.PositionBias[k] {
					pos = k
					break
				}
				x -= cfg.PositionBias[k]
			}
			if pos < 0 {
				continue // looked and left
			}
			pick := dst[pos]
			tried = tried[:0]
			entered, completed := false, false
			for attempt := 0; ; attempt++ {
				var ok bool
				quotas, ok = e.Eligible(p, pick.CampaignID, now, quotas[:0])
				if ok {
					if !entered {
						res.Entries++
					}
					entered = true
					res.Sessions++
					if attempt > 0 {
						res.Rerouted++
					}
					ctr := e.Counters()
					ctr.RecordEntry(pick.CampaignID, quotas)
					panel.RecordEntry(p.ID, pick.CampaignID, now)
					done := rc.Float64() < truth[pick.CampaignID]
					ctr.RecordOutcome(pick.CampaignID, quotas, done, now)
					if pick.CampaignID == probe.ID {
						probeSessions++
						if done {
							probeCompletes++
						}
						if res.ProbeSessions < 0 && engine.Conversion(probeIncidence, int64(probeSessions), int64(probeCompletes)) >= 0.9*probeTruth {
							res.ProbeSessions = probeSessions
							res.ProbeHours = float64(now-probeAt) / 3600
						}
					}
					if done {
						completed = true
						if now < end[pick.CampaignID] {
							res.Completes++
							res.Earnings += float64(pick.CPICents) / 100 * share
							res.BuyerCost += float64(pick.CPICents) / 100
							if hard[pick.CampaignID] {
								res.HardCompletes++
							}
							if pick.CampaignID == probe.ID {
								probeInField++
							}
						}
						break
					}
					res.Terminates++
				}
				// A termination, or an entry refused: the chain goes on to
				// the next-ranked campaign not tried yet while it has
				// attempts left (docs/rules.md §10).
				tried = append(tried, pick.CampaignID)
				if attempt >= cfg.RerouteAttempts {
					break
				}
				p, _ = panel.GetByID(ps[i].ID) // with this chain's entries
				next = e.Match(p, share, now, len(tried)+1, next)
				found := false
				for _, o := range next {
					if !slices.Contains(tried, o.CampaignID) {
						pick, found = o, true
						break
					}
				}
				if !found {
					break
				}
			}
			if entered && !completed {
				res.LeftEmpty++
			}
		}
		if (now-start)%86400 == 86400-3600 {
			res.Fill = append(res.Fill, ratio(res.Completes-probeInField, res.Target))
			full, all := 0, 0
			for i := range cs {
				for _, q := range cs[i].Quotas {
					if !q.Global {
						all++
						if e.Counters().Quota(q.ID).Completes >= int64(q.NumRespondents) {
							full++
						}
					}
				}
			}
			res.QuotaFill = append(res.QuotaFill, ratio(full, all))
		}
		// Campaigns leave the market at the end of their field period.
		var gone []int64
		for id := int64(1); id <= probe.ID; id++ {
			if t := end[id]; t <= now && t > now-3600 {
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
		due := end[c.ID] <= stop
		filled := true
		for _, q := range c.Quotas {
			if q.Global {
				continue
			}
			got := ctr.Quota(q.ID).Completes
			if hard[c.ID] {
				res.HardTarget += q.NumRespondents
			}
			if !due {
				continue
			}
			res.DueQuotas++
			if got >= int64(q.NumRespondents) {
				res.QuotasFilled++
			} else {
				filled = false
			}
		}
		if due {
			res.Due++
			if filled {
				res.Filled++
			}
		}
	}
	res.ProbeTotal = probeSessions
	res.ProbeShown, res.ProbeFair = fair.shownAll, fair.fairAll
	return res, nil
}

// probeShown reports whether the probe is among the first n offers.
func probeShown(offers []engine.Offer, n int, probe int64) bool {
	for i := range min(n, len(offers)) {
		if offers[i].CampaignID == probe {
			return true
		}
	}
	return false
}

// probeFair reports whether the probe, ranked at its oracle score (its
// score had the engine known its true conversion), would be among the
// first n offers: fewer than n other offers beat it. offers must be the
// top n+1, so that every other offer that could beat it is there.
func probeFair(offers []engine.Offer, n int, probe int64, oracle float64) bool {
	beat := 0
	for _, o := range offers {
		if o.CampaignID != probe && (o.Score > oracle || (o.Score == oracle && o.CampaignID < probe)) {
			beat++
		}
	}
	return beat < n
}

// fairWindow compares, over the last n eligible visits of the probe, how
// often it was shown with how often it would have been at its true
// conversion.
type fairWindow struct {
	shown, fair       []bool
	at, count         int
	shownSum, fairSum int
	shownAll, fairAll int
}

func newFairWindow(n int) *fairWindow {
	return &fairWindow{shown: make([]bool, n), fair: make([]bool, n)}
}

// add records one eligible visit and reports whether the window is full
// and the probe was shown at least 80% as often as its fair share.
func (w *fairWindow) add(shown, fair bool) bool {
	n := len(w.shown)
	if w.count == n {
		w.shownSum -= b2i(w.shown[w.at])
		w.fairSum -= b2i(w.fair[w.at])
	} else {
		w.count++
	}
	w.shown[w.at], w.fair[w.at] = shown, fair
	w.shownSum += b2i(shown)
	w.fairSum += b2i(fair)
	w.shownAll += b2i(shown)
	w.fairAll += b2i(fair)
	w.at = (w.at + 1) % n
	return w.count == n && w.fairSum > 0 && 5*w.shownSum >= 4*w.fairSum
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ages returns the AGE codes lo..hi.
func ages(lo, hi int32) []int32 {
	out := make([]int32, 0, hi-lo+1)
	for a := lo; a <= hi; a++ {
		out = append(out, a)
	}
	return out
}
