package payout

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/switchboard/switchboard/internal/outcome"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestPay(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) Session { return Session{EnteredAt: t0, OutcomeAt: t0.Add(d)} }
	with := func(s Session, outcome string, cpi int64, test bool) Session {
		s.Outcome, s.CPICents, s.IsTest = outcome, cpi, test
		return s
	}
	def := DefaultRules()
	cases := []struct {
		name          string
		rules         Rules
		s             Session
		share, rate   float64
		wantUSD       string
		wantReward    int64
		wantUSDAmount USD
	}{
		{"complete 2.35 × 0.6", def, with(at(7*time.Minute), outcome.Complete, 235, false), 0.6, 100, "1.4100", 141, 14100},
		{"complete share rounds half up to 0.0001", def, with(at(time.Minute), outcome.Complete, 235, false), 0.6543, 1000, "1.5376", 1538, 15376},
		{"complete tiny share rounds up", def, with(at(time.Minute), outcome.Complete, 1, false), 0.005, 1, "0.0001", 0, 1},
		{"complete full share", def, with(at(time.Minute), outcome.Complete, 1000, false), 1, 2.5, "10.0000", 25, 100000},
		{"complete pays regardless of time", def, with(at(-time.Minute), outcome.Complete, 100, false), 0.5, 10, "0.5000", 5, 5000},
		{"over_quota 30 s", def, with(at(30*time.Second), outcome.OverQuota, 500, false), 0.6, 100, "0.0050", 1, 50},
		{"disqualified 90 s", def, with(at(90*time.Second), outcome.Disqualified, 500, false), 0.6, 100, "0.0150", 2, 150},
		{"disqualified rounds time down", def, with(at(5999*time.Millisecond), outcome.Disqualified, 500, false), 0.6, 10000, "0.0009", 9, 9},
		{"over_quota capped", def, with(at(15*time.Minute), outcome.OverQuota, 500, false), 0.6, 100, "0.1000", 10, 1000},
		{"over_quota exactly at cap", def, with(at(10*time.Minute), outcome.OverQuota, 500, false), 0.6, 100, "0.1000", 10, 1000},
		{"over_quota a year", def, with(at(365*24*time.Hour), outcome.OverQuota, 500, false), 0.6, 100, "0.1000", 10, 1000},
		{"over_quota clock skew", def, with(at(-time.Second), outcome.OverQuota, 500, false), 0.6, 100, "0.0000", 0, 0},
		{"quality_term pays nothing", def, with(at(15*time.Minute), outcome.QualityTerm, 500, false), 0.6, 100, "0.0000", 0, 0},
		{"unknown outcome pays nothing", def, with(at(15*time.Minute), "bogus", 500, false), 0.6, 100, "0.0000", 0, 0},
		{"test complete pays nothing", def, with(at(time.Minute), outcome.Complete, 500, true), 0.6, 100, "0.0000", 0, 0},
		{"test over_quota pays nothing", def, with(at(time.Minute), outcome.OverQuota, 500, true), 0.6, 100, "0.0000", 0, 0},
		{"custom rate and cap", Rules{PerMinute: 200, Cap: 500}, with(at(2*time.Minute), outcome.Disqualified, 500, false), 0.6, 100, "0.0400", 4, 400},
		{"custom cap", Rules{PerMinute: 200, Cap: 500}, with(at(20*time.Minute), outcome.Disqualified, 500, false), 0.6, 100, "0.0500", 5, 500},
		{"zero rate", Rules{}, with(at(20*time.Minute), outcome.Disqualified, 500, false), 0.6, 100, "0.0000", 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := c.rules.Pay(c.s, c.share, c.rate)
			if p.USD != c.wantUSDAmount || p.USD.String() != c.wantUSD || p.Reward != c.wantReward {
				t.Fatalf("Pay = {%d %s reward %d}, want {%d %s reward %d}",
					p.USD, p.USD, p.Reward, c.wantUSDAmount, c.wantUSD, c.wantReward)
			}
		})
	}
}

func TestReward(t *testing.T) {
	cases := []struct {
		usd  USD
		rate float64
		want int64
	}{
		{150, 100, 2},     // 1.5 rounds half up
		{149, 100, 1},     // 1.49
		{14100, 100, 141}, // 1.41 × 100
		{14100, 0.5, 1},   // 0.705
		{14100, 0.0001, 0},
		{10000, 1234.5678, 1235},
		{-150, 100, -2}, // half away from zero
		{0, 100, 0},
		{100, 0, 0},
		{100, math.NaN(), 0},
		{math.MaxInt64, 1e10, math.MaxInt64},   // saturates, no panic
		{99_990_000, 1e9, 9_999_000_000_000},   // 9999 USD at 1e9 units per USD
		{100_000_000, 1e9, 10_000_000_000_000}, // the money bounds' largest (docs/rules.md §7)
	}
	for _, c := range cases {
		if got := Reward(c.usd, c.rate); got != c.want {
			t.Errorf("Reward(%s, %v) = %d, want %d", c.usd, c.rate, got, c.want)
		}
	}
}

func TestUSDString(t *testing.T) {
	for v, want := range map[USD]string{
		0: "0.0000", 5: "0.0005", 100: "0.0100", 10000: "1.0000", 123456789: "12345.6789",
		-100: "-0.0100", -123456: "-12.3456",
	} {
		if got := v.String(); got != want {
			t.Errorf("USD(%d) = %q, want %q", int64(v), got, want)
		}
	}
	if got := USDFromCents(235).String(); got != "2.3500" {
		t.Errorf("USDFromCents(235) = %q", got)
	}
	if got := CompletePayout(235, 0.6); got != 14100 {
		t.Errorf("CompletePayout(235, 0.6) = %d", got)
	}
	if got := CompletePayout(999_900, 1); got != 99_990_000 {
		t.Errorf("CompletePayout(999900, 1) = %d", got)
	}
	if got := CompletePayout(math.MaxInt64, 1); got != math.MaxInt64 {
		t.Errorf("CompletePayout(MaxInt64, 1) = %d, want it saturated, not negative", got)
	}
}

// TestLargestRewardFitsSessions: the reward and payout of a complete at every bound at once
// (cpi 10,000 USD, revenue share 1, 1e9 units per USD) are what the sessions table stores:
// 1e13 units and 10000.0000 USD.
func TestLargestRewardFitsSessions(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	usd := CompletePayout(persistence.MaxCPICents, persistence.MaxRevenueShare)
	reward := Reward(usd, persistence.MaxExchangeRate)
	if usd.String() != "10000.0000" || reward != 10_000_000_000_000 {
		t.Fatalf("largest payout %s reward %d, want 10000.0000 10000000000000", usd, reward)
	}
	// The columns take those values: the session's own types, and the values cast to them.
	var rewardType, payoutType, storedUSD string
	var storedReward int64
	if err := db.Pool.QueryRow(ctx, `SELECT format_type(r.atttypid, r.atttypmod), format_type(p.atttypid, p.atttypmod),
		$1::bigint, ($2::bigint::numeric / 10000)::numeric(14,4)::text
		FROM pg_attribute r, pg_attribute p WHERE r.attrelid = 'sessions'::regclass AND r.attname = 'reward'
		AND p.attrelid = 'sessions'::regclass AND p.attname = 'payout_usd'`, reward, int64(usd)).
		Scan(&rewardType, &payoutType, &storedReward, &storedUSD); err != nil {
		t.Fatal(err)
	}
	if rewardType != "bigint" || payoutType != "numeric(14,4)" || storedReward != reward || storedUSD != "10000.0000" {
		t.Errorf("sessions.reward %s payout_usd %s take %d %s, want bigint numeric(14,4) %d 10000.0000",
			rewardType, payoutType, storedReward, storedUSD, reward)
	}
}
