package persistence

// Money bounds (docs/rules.md §7, "Money bounds"). A partner's reward for a complete is
// cpi × revenue share × exchange rate; every input is bounded where it is configured so
// that the largest product, MaxCPICents/100 × MaxRevenueShare × MaxExchangeRate =
// 10,000 × 1 × 1e9 = 1e13 in-app units, fits sessions.reward (bigint, migration 0015) and
// an int64 many times over, and the largest payout, 10,000.0000 USD, fits
// sessions.payout_usd. Payouts are computed in integers (router/payout), and 1e9 × 1e4
// (the rate in ten-thousandths) is below 2^53, so reading the rate as a float64 is exact.
const (
	// MaxCPICents is the largest cpi a campaign may bid: 10,000.00 USD.
	MaxCPICents = 1_000_000
	// MinExchangeRate is the smallest exchange rate: publishers.exchange_rate keeps four
	// decimals, and a smaller rate would be stored as 0.
	MinExchangeRate = 0.0001
	// MaxExchangeRate is the largest exchange rate: 1e9 in-app units per USD.
	MaxExchangeRate = 1_000_000_000
	// MinRevenueShare is the smallest revenue share (publishers.revenue_share keeps four
	// decimals); the largest is 1, the whole cpi.
	MinRevenueShare = 0.0001
	// MaxRevenueShare is the largest revenue share: the partner gets the whole cpi.
	MaxRevenueShare = 1
)
