// Package payout settles what a supply partner earns for a session and tells the partner:
// the payout rules (docs/rules.md §7), the signed redirect and postback URLs, and the durable
// postback outbox's worker. docs/payouts.md describes the rules, units and rounding.
package payout

import (
	"math"
	"math/bits"
	"strconv"
	"time"

	"github.com/switchboard/switchboard/internal/outcome"
)

// USD is an amount of US dollars in ten-thousandths (0.0001 USD): the precision of
// sessions.payout_usd (numeric(14,4)) and of a postback's payout_usd. Integer arithmetic
// keeps payouts free of float drift; USD(16450) is 1.6450 dollars.
type USD int64

// USDFromCents converts whole cents (a campaign's cpi_cents).
func USDFromCents(cents int64) USD { return USD(cents * 100) }

// String formats u with exactly four decimals ("1.6450", "-0.0100").
func (u USD) String() string {
	sign := ""
	v := int64(u)
	if v < 0 {
		sign, v = "-", -v
	}
	frac := strconv.FormatInt(v%10000, 10)
	for len(frac) < 4 {
		frac = "0" + frac
	}
	return sign + strconv.FormatInt(v/10000, 10) + "." + frac
}

// Rules prices sessions. The zero value is not useful: start from DefaultRules.
type Rules struct {
	// PerMinute is what an over_quota or disqualified session pays per minute spent between
	// entry and callback, pro rata to the millisecond.
	PerMinute USD
	// Cap is the most an over_quota or disqualified session pays.
	Cap USD
}

// DefaultRules is docs/rules.md §7: 0.01 USD a minute, capped at 0.10 USD.
func DefaultRules() Rules { return Rules{PerMinute: 100, Cap: 1000} }

// Session is what the rules need to know of one session.
type Session struct {
	Outcome   string // outcome.Complete, outcome.OverQuota, outcome.QualityTerm or outcome.Disqualified
	IsTest    bool   // test sessions pay nothing
	CPICents  int64  // the campaign's cpi
	EnteredAt time.Time
	OutcomeAt time.Time // when the deciding callback arrived
}

// Payout is what a partner earns for one session.
type Payout struct {
	USD    USD   // rounded half up to 0.0001 USD
	Reward int64 // in-app currency: Reward(USD, exchange rate)
}

// Pay prices s for a publisher paid revenueShare (a fraction in (0, 1]) of cpi on a
// complete, with exchangeRate in-app currency units per USD.
func (r Rules) Pay(s Session, revenueShare, exchangeRate float64) Payout {
	usd := r.USD(s, revenueShare)
	return Payout{USD: usd, Reward: Reward(usd, exchangeRate)}
}

// USD is the dollar payout of s (see Pay).
func (r Rules) USD(s Session, revenueShare float64) USD {
	if s.IsTest {
		return 0
	}
	switch s.Outcome {
	case outcome.Complete:
		return CompletePayout(s.CPICents, revenueShare)
	case outcome.OverQuota, outcome.Disqualified:
		return r.timePayout(s.OutcomeAt.Sub(s.EnteredAt))
	default: // quality_term, and anything unknown
		return 0
	}
}

// CompletePayout is cpi × revenue share: the partner's payout per complete, also the basis
// of an offer's epc and reward_amount (docs/rules.md §6). The share is taken to four decimals
// (publishers.revenue_share is numeric(6,4)); the product is rounded half up to 0.0001 USD.
func CompletePayout(cpiCents int64, revenueShare float64) USD {
	if cpiCents <= 0 || !(revenueShare > 0) {
		return 0
	}
	shareBP := int64(math.Round(revenueShare * 10000)) // basis points: 0.6 → 6000
	// cents × basis points = micro-dollars; /100 = ten-thousandths of a dollar. The cpi is
	// bounded (persistence.MaxCPICents) far below where this saturates; beyond, it stays positive.
	return USD(min(mulDivRound(uint64(cpiCents), uint64(shareBP), 100), math.MaxInt64))
}

// timePayout pays spent at r.PerMinute pro rata (rounded down to 0.0001 USD), capped.
// A negative time (clock skew) pays nothing.
func (r Rules) timePayout(spent time.Duration) USD {
	if spent <= 0 || r.PerMinute <= 0 {
		return 0
	}
	cap := uint64(max(r.Cap, 0))
	ms := uint64(spent.Milliseconds())
	hi, lo := bits.Mul64(uint64(r.PerMinute), ms)
	if hi >= 60000 {
		return USD(cap)
	}
	v, _ := bits.Div64(hi, lo, 60000)
	return USD(min(v, cap))
}

// Reward converts a dollar payout into in-app currency: round(usd × exchangeRate), half away
// from zero. The rate is taken to four decimals (publishers.exchange_rate is numeric(14,4)),
// so the reward is exactly what a partner computes from the payout_usd it receives.
func Reward(usd USD, exchangeRate float64) int64 {
	if usd == 0 || !(exchangeRate > 0) {
		return 0
	}
	rateE4 := uint64(math.Round(exchangeRate * 10000))
	neg := usd < 0
	a := uint64(usd)
	if neg {
		a = uint64(-usd)
	}
	// usd is in 1e-4 dollars and the rate in 1e-4 units per dollar.
	v := int64(min(mulDivRound(a, rateE4, 100_000_000), math.MaxInt64))
	if neg {
		return -v
	}
	return v
}

// mulDivRound is round(a × b / d), half up, in 128-bit arithmetic; it saturates at the
// largest uint64.
func mulDivRound(a, b, d uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	var carry uint64
	lo, carry = bits.Add64(lo, d/2, 0)
	hi += carry
	if hi >= d {
		return math.MaxUint64
	}
	q, _ := bits.Div64(hi, lo, d)
	return q
}
