package marketsim

import (
	"errors"
	"math"

	"github.com/switchboard/switchboard/engine"
)

// Config describes one simulated market. Zero fields take the defaults
// documented on each.
type Config struct {
	Campaigns    int               // campaigns in field at the start (default 60)
	Arriving     int               // campaigns entering during the run, each at a whole hour drawn uniformly
	Participants int               // panel size (default 4,000)
	Days         int               // simulated days (default 7)
	Seed         int64             // same seed, same market, visits and outcome draws
	Allocation   engine.Allocation // policy under test
	// RerouteAttempts is the partners' reroute_attempts (docs/rules.md
	// §10, 0..5, default 0 = off): while a chain has attempts left, a
	// session that screens out, or an entry refused because the campaign
	// can no longer take the participant, continues the chain with the
	// next-ranked campaign the participant is eligible for then and has not
	// tried in the chain. A complete or an abandoned session ends it.
	RerouteAttempts int
	// Demand sizes the quotas: a non-global quota asks for Demand × its
	// buyer's feasibility estimate (the completes the panel's eligible
	// participants would bring over the field period at the stated
	// incidence, counting 30% of their visits: they have other offers) ×
	// a log-normal factor (σ 0.5), within QuotaMin..QuotaMax (default 1,
	// and 5..500 completes). Above 1 the market is short of supply. A global quota caps its
	// campaign at 0.6–1.4 × the sum of its non-global targets; a daily cap,
	// where synth draws one, at 1.5–2.5 × the campaign's target per day.
	Demand             float64
	QuotaMin, QuotaMax int
	// FieldMin and FieldMax bound a campaign's field period in days,
	// uniform (default 3 and 14).
	FieldMin, FieldMax int
	// RefreshEvery is the simulated time between weight refreshes
	// (seconds, default 6 h).
	RefreshEvery int64
	// TruthLow and TruthHigh bound a campaign's true conversion over the
	// panel: its stated incidence × a uniform draw in [TruthLow, TruthHigh]
	// (default 0.5 and 1.5), at most 0.95.
	TruthLow, TruthHigh float64
	// ProfileContrast is how much a campaign's hidden screener matters: a
	// participant outside it converts at ProfileContrast × the campaign's
	// mean, one inside at the factor that keeps the panel's mean (default
	// 0.3; 1 for no screener).
	ProfileContrast float64
	// PartnerShares are the revenue shares of the supply partners; each
	// participant belongs to partner (id mod len) (default 0.6, 0.5, 0.7).
	PartnerShares []float64
	// WaveAmplitude shapes each partner's daily wave: the hourly visit
	// chance is the participant's daily rate / 24 × (1 + WaveAmplitude ×
	// cos(2π (hour − peak) / 24)), partner j peaking at 8 + 16·j/partners
	// hours UTC (default 0.8).
	WaveAmplitude float64
	// PositionBias is the chance that a participant picks the offer at each
	// position of the list shown, before its length (ChoiceLOI); the rest
	// leaves without entering (default 0.55, 0.25, 0.12: three offers
	// looked at).
	PositionBias []float64
	// ChoiceLOI scales how the length of interview puts participants off:
	// an offer's chance is its position's × exp(−(LOI − 5) / ChoiceLOI)
	// (minutes, default 40).
	ChoiceLOI float64
	// DropLOI scales abandonment: a participant who would complete abandons
	// the session with chance 1 − exp(−LOI / DropLOI) (minutes, default 100).
	DropLOI float64
	// NewCampaignAt is when the probe campaign enters the market (seconds
	// after the start, default one day): stated incidence 20%, true
	// conversion 40% (2× its prior), a broad audience, a target of 40. It is
	// left out of the fill figures.
	NewCampaignAt int64
	// FairWindow is the number of the probe's eligible visits over which
	// its share of offers is compared with its fair share (default 200).
	FairWindow int
}

// ErrReroute is returned by Run for RerouteAttempts outside 0..5 (docs/rules.md §10).
var ErrReroute = errors.New("marketsim: reroute attempts must be 0..5")

func (cfg *Config) defaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&cfg.Campaigns, 60)
	def(&cfg.Participants, 4000)
	def(&cfg.Days, 7)
	def(&cfg.QuotaMin, 5)
	def(&cfg.QuotaMax, 500)
	def(&cfg.FieldMin, 3)
	def(&cfg.FieldMax, 14)
	def(&cfg.FairWindow, 200)
	cfg.QuotaMax = max(cfg.QuotaMax, cfg.QuotaMin)
	cfg.FieldMax = max(cfg.FieldMax, cfg.FieldMin)
	cfg.Arriving = max(cfg.Arriving, 0)
	if cfg.Demand <= 0 {
		cfg.Demand = 1
	}
	if cfg.RefreshEvery <= 0 {
		cfg.RefreshEvery = 6 * 3600
	}
	if cfg.TruthLow <= 0 && cfg.TruthHigh <= 0 {
		cfg.TruthLow, cfg.TruthHigh = 0.5, 1.5
	}
	if cfg.ProfileContrast <= 0 {
		cfg.ProfileContrast = 0.3
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
	if cfg.ChoiceLOI <= 0 {
		cfg.ChoiceLOI = 40
	}
	if cfg.DropLOI <= 0 {
		cfg.DropLOI = 100
	}
	if cfg.NewCampaignAt <= 0 {
		cfg.NewCampaignAt = 86400
	}
}

// choose returns the position of the offer a participant enters among n
// shown for the draw x in [0, 1), or −1 when it leaves: position k takes
// PositionBias[k] × exp(−(LOI − 5) / ChoiceLOI) of the draws.
func (cfg *Config) choose(x float64, n int, loi func(k int) int) int {
	for k := range min(n, len(cfg.PositionBias)) {
		pk := cfg.PositionBias[k] * math.Exp(-max(float64(loi(k))-5, 0)/cfg.ChoiceLOI)
		if x < pk {
			return k
		}
		x -= pk
	}
	return -1
}
