package marketsim

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/engine/synth"
)

// simCampaign is one campaign of the simulated market with what the engine
// does not see: when it enters the market, its true conversion and how a
// participant's profile changes it.
type simCampaign struct {
	def    engine.Campaign
	arrive int64 // when it enters the market (≤ the start: in field at the start)
	end    int64 // end of its field period
	// mean is its true conversion over the panel; a participant answering its
	// screener question with a code in [lo, hi] converts at mean × in × the
	// participant's quality, any other at mean × out × quality (at most 0.95).
	mean          float64
	screen        int32
	lo, hi        int32
	in, out       float64
	probe         bool
	quotas        []int64 // its non-global quota ids
	targets       []int64 // and their targets
	before        []int64 // and their completes before the start (in field at the start)
	filled, ended bool    // at its end: every non-global quota full; the end passed
	quotasFilled  int     // at its end: non-global quotas full
}

// screenQuestions are the profile questions a campaign's hidden screener
// asks (the synthetic catalog's), with their answer codes 1..n.
var screenQuestions = []struct {
	id int32
	n  int32
}{
	{synth.Income, 12}, {synth.Education, 7}, {synth.Employment, 8},
	{synth.Children, 5}, {synth.Marital, 6}, {synth.Ethnicity, 8},
}

// simParticipant is a panel member with its daily visit rate, partner,
// quality (a factor of every conversion) and screener answers.
type simParticipant struct {
	p       engine.Participant
	rate    float64 // visits per day
	partner int
	quality float64
	answers [nScreens]int32 // code of each screenQuestions entry, 0 unanswered
}

// nScreens is len(screenQuestions).
const nScreens = 6

// conversion is the participant's true chance of completing campaign c.
func (c *simCampaign) conversion(sp *simParticipant) float64 {
	m := c.out
	if c.screen >= 0 {
		if a := sp.answers[c.screen]; a >= c.lo && a <= c.hi {
			m = c.in
		}
	}
	return min(c.mean*m*sp.quality, 0.95)
}

// takeUp is the share of an eligible participant's visits a buyer's
// feasibility estimate counts on for its quota: the participant has other
// offers.
const takeUp = 0.01

// feasibilitySample is how many participants (every k-th of the panel) a
// quota's feasibility estimate looks at.
const feasibilitySample = 1000

// expected is a buyer's feasibility estimate for quota q of campaign d: the
// completes the panel's eligible participants would bring over its field
// period at its stated incidence, counting takeUp of their visits.
func expected(ps []simParticipant, d *engine.Campaign, q *engine.Quota) float64 {
	step := max(len(ps)/feasibilitySample, 1)
	sum := 0.0
	for i := 0; i < len(ps); i += step {
		p := &ps[i].p
		if d.Devices != 0 && d.Devices&p.Device == 0 || !qualifies(p, q.Conditions) {
			continue
		}
		sum += ps[i].rate
	}
	return sum * float64(step) * float64(d.DaysInField) * takeUp * float64(d.Incidence) / 100
}

// qualifies reports whether p meets every condition (a code or a text of
// its answer to the condition's question among the condition's).
func qualifies(p *engine.Participant, conds []engine.Condition) bool {
	for _, c := range conds {
		i := slices.IndexFunc(p.Answers, func(a engine.Answer) bool { return a.QuestionID == c.QuestionID })
		if i < 0 {
			return false
		}
		a := &p.Answers[i]
		if !slices.ContainsFunc(a.Codes, func(x int32) bool { return slices.Contains(c.Codes, x) }) &&
			!(a.Text != "" && slices.Contains(c.Texts, a.Text)) {
			return false
		}
	}
	return true
}

// newParticipants draws the panel: profiles from synth, a daily visit rate
// (0.05 + 0.95·u², a long tail of rare visitors), a partner by id, a quality
// in [0.7, 1.3] and the screener answers.
func newParticipants(cfg *Config, r *rand.Rand) []simParticipant {
	ps := synth.Participants(cfg.Participants, cfg.Seed+1, 0)
	out := make([]simParticipant, len(ps))
	for i := range ps {
		sp := &out[i]
		sp.p = ps[i]
		sp.rate = 0.05 + 0.95*r.Float64()*r.Float64()
		sp.partner = int(ps[i].ID) % len(cfg.PartnerShares)
		sp.quality = 0.7 + 0.6*r.Float64()
		for j, q := range screenQuestions {
			for _, a := range ps[i].Answers {
				if a.QuestionID == q.id && len(a.Codes) > 0 {
					sp.answers[j] = a.Codes[0]
				}
			}
		}
	}
	return out
}

// newMarket draws the campaigns: cfg.Campaigns in field at the start (each
// started up to its field period before), cfg.Arriving entering at whole
// hours spread over the run, each with quotas sized by a buyer's
// feasibility estimate (Config.Demand), a field period of FieldMin..FieldMax days, a
// true conversion and a hidden screener; then the probe (Config.NewCampaignAt).
func newMarket(cfg *Config, r *rand.Rand, ps []simParticipant, start int64) []simCampaign {
	n := cfg.Campaigns + cfg.Arriving
	defs := synth.Market(n, cfg.Seed)
	cs := make([]simCampaign, 0, n+1)
	hours := int64(cfg.Days) * 24
	for i := range defs {
		d := defs[i]
		d.Retargets, d.ExcludedParticipants = nil, nil
		d.DaysInField = cfg.FieldMin + r.IntN(cfg.FieldMax-cfg.FieldMin+1)
		c := simCampaign{}
		if i < cfg.Campaigns {
			c.arrive = start - 3600*r.Int64N(int64(d.DaysInField)*24)
		} else {
			c.arrive = start + 3600*r.Int64N(hours)
		}
		d.FieldStart = c.arrive
		total := int64(0)
		for j := range d.Quotas {
			q := &d.Quotas[j]
			if q.Global {
				continue
			}
			est := cfg.Demand * expected(ps, &d, q)
			for est < float64(cfg.QuotaMin) && len(q.Conditions) > 1 {
				// Too narrow for the panel: the buyer drops a condition.
				q.Conditions = q.Conditions[:len(q.Conditions)-1]
				est = cfg.Demand * expected(ps, &d, q)
			}
			est *= math.Exp(0.5 * r.NormFloat64())
			q.NumRespondents = min(max(int(math.Round(est)), cfg.QuotaMin), cfg.QuotaMax)
			total += int64(q.NumRespondents)
			c.quotas = append(c.quotas, q.ID)
			c.targets = append(c.targets, int64(q.NumRespondents))
		}
		for j := range d.Quotas {
			if q := &d.Quotas[j]; q.Global {
				q.NumRespondents = max(1, int(float64(total)*(0.6+0.8*r.Float64())))
			}
		}
		if d.MaxDailyCompletes > 0 {
			d.MaxDailyCompletes = max(1, int(float64(total)/float64(d.DaysInField)*(1.5+r.Float64())))
		}
		c.end = c.arrive + int64(d.DaysInField)*86400
		if c.arrive < start {
			// Under way: completes so far of 0.4–1.2 × the schedule's.
			done := float64(start-c.arrive) / float64(c.end-c.arrive)
			for _, t := range c.targets {
				c.before = append(c.before, min(int64(float64(t)*done*(0.4+0.8*r.Float64())), t-1))
			}
		}
		f := cfg.TruthLow + (cfg.TruthHigh-cfg.TruthLow)*r.Float64()
		c.mean = min(float64(d.Incidence)/100*f, 0.95)
		c.screen, c.lo, c.hi, c.in, c.out = screener(r, ps, cfg.ProfileContrast)
		c.def = d
		cs = append(cs, c)
	}
	// The probe: a new campaign whose true conversion is twice its prior, no
	// screener, a broad audience.
	lastQuota := int64(0)
	for _, c := range defs {
		for _, q := range c.Quotas {
			lastQuota = max(lastQuota, q.ID)
		}
	}
	at := start + cfg.NewCampaignAt
	probe := simCampaign{
		def: engine.Campaign{
			ID: int64(n + 1), BuyerID: 1, CountryID: synth.Country, Status: engine.StatusActive,
			CPICents: 250, LOI: 15, Incidence: probeIncidence, ReentryMinutes: engine.ReentryNever,
			DaysInField: max(cfg.Days, 1), FieldStart: at,
			Quotas: []engine.Quota{{ID: lastQuota + 1, NumRespondents: probeTarget, Conditions: []engine.Condition{
				{QuestionID: engine.QuestionAge, Codes: ages(18, 99)}}}},
		},
		arrive: at, end: at + int64(max(cfg.Days, 1))*86400, mean: probeTruth, screen: -1, in: 1, out: 1, probe: true,
		quotas: []int64{lastQuota + 1}, targets: []int64{probeTarget},
	}
	return append(cs, probe)
}

// screener draws a campaign's hidden screener: a question, a run of its
// codes held by 30–70% of the panel (redrawn up to 20 times), and the
// conversion multipliers in and out of it, out = contrast and in such that
// the panel's mean multiplier is 1. Contrast 1: no screener.
func screener(r *rand.Rand, ps []simParticipant, contrast float64) (q, lo, hi int32, in, out float64) {
	if contrast >= 1 || len(ps) == 0 {
		return -1, 0, 0, 1, 1
	}
	var share float64
	for range 20 {
		q = int32(r.IntN(len(screenQuestions)))
		n := screenQuestions[q].n
		l := 1 + r.Int32N(n)
		lo = 1 + r.Int32N(n-l+1)
		hi = lo + l - 1
		k := 0
		for i := range ps {
			if a := ps[i].answers[q]; a >= lo && a <= hi {
				k++
			}
		}
		if share = float64(k) / float64(len(ps)); share >= 0.3 && share <= 0.7 {
			break
		}
	}
	if share <= 0 {
		return -1, 0, 0, 1, 1
	}
	return q, lo, hi, (1 - (1-share)*contrast) / share, contrast
}

// newRand is a generator seeded by seed alone.
func newRand(seed int64) *rand.Rand { return rand.New(rand.NewPCG(uint64(seed), 0x51)) }

// ages returns the AGE codes lo..hi.
func ages(lo, hi int32) []int32 {
	out := make([]int32, 0, hi-lo+1)
	for a := lo; a <= hi; a++ {
		out = append(out, a)
	}
	return out
}

// draw is a uniform number in [0, 1) fixed by the seed and the keys: the
// same visit, or the same participant's n-th session in the same campaign,
// draws the same number under every policy (common random numbers, so that
// paired differences measure the policies, not the draws).
func draw(seed int64, keys ...uint64) float64 {
	x := uint64(seed) * 0x9e3779b97f4a7c15
	for _, k := range keys {
		x ^= k + 0x632be59bd9b4e019 + x<<6 + x>>2
		x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
		x = (x ^ x>>27) * 0x94d049bb133111eb
		x ^= x >> 31
	}
	return float64(x>>11) / (1 << 53)
}
