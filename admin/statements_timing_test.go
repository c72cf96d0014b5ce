package admin_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
)

// TestStatementTiming answers the statement of a month of many ledger events (1,000,000 by
// default, besides 200,000 in the months around it) over real HTTP, as JSON (the median of
// 5) and as a streamed CSV, and reports the time and the memory growth of the process
// (server and client are both in it): the targets are 2 s and 50 MiB (docs/payouts.md,
// "Statements"). It needs SWITCHBOARD_EXPORT_TIMING=1 (make test skips it);
// SWITCHBOARD_EXPORT_ROWS changes the number of events.
//
//	SWITCHBOARD_EXPORT_TIMING=1 go test ./admin -run TestStatementTiming -v -count=1
func TestStatementTiming(t *testing.T) {
	if os.Getenv("SWITCHBOARD_EXPORT_TIMING") == "" || testing.Short() {
		t.Skip("set SWITCHBOARD_EXPORT_TIMING=1 to answer the statement of a 1,000,000-event month")
	}
	n := exportRows(t)
	s := apptest.Start(t, apptest.Options{RateLimit: -1})
	b := s.NewBuyer(t)
	pub := publisher(t, s)
	ctx := context.Background()
	month := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	start := time.Now()
	// The month's events in time order, spread over it, over 50 campaigns: 90% completes,
	// 5% reversals, 5% screen-outs; and 100,000 events the month before and after.
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO ledger_events (session_id, seq, tid, kind, campaign_id, buyer_id, publisher_id, charge_usd, earning_usd, margin_usd, reward, at)
			SELECT g, 1, 'ld-' || g, k.kind, 1 + g % 50, $1, $2, k.charge, k.earning, k.charge - k.earning, k.earning / 100,
				$3::timestamptz - interval '1 month' + (g * (2678400.0 / 100000)) * interval '1 second'
			FROM generate_series(1, 100000) g, LATERAL (SELECT 'complete' AS kind, 15000::bigint AS charge, 9000::bigint AS earning) k`,
			[]any{b.ID, pub, month}},
		{`INSERT INTO ledger_events (session_id, seq, tid, kind, campaign_id, buyer_id, publisher_id, charge_usd, earning_usd, margin_usd, reward, at)
			SELECT 1000000000 + g, 1, 'lm-' || g, k.kind, 1 + g % 50, $1, $2, k.charge, k.earning, k.charge - k.earning, k.earning / 100,
				$3::timestamptz + (g * (2678400.0 / $4)) * interval '1 second'
			FROM generate_series(1, $4::int) g, LATERAL (SELECT CASE WHEN g % 20 = 0 THEN 'reversal' WHEN g % 20 = 1 THEN 'screenout' ELSE 'complete' END AS kind) c,
				LATERAL (SELECT c.kind, CASE c.kind WHEN 'reversal' THEN -15000 WHEN 'screenout' THEN 0 ELSE 15000 END::bigint AS charge,
					CASE c.kind WHEN 'reversal' THEN -9000 WHEN 'screenout' THEN 500 ELSE 9000 END::bigint AS earning) k`,
			[]any{b.ID, pub, month, n}},
		{`INSERT INTO ledger_events (session_id, seq, tid, kind, campaign_id, buyer_id, publisher_id, charge_usd, earning_usd, margin_usd, reward, at)
			SELECT 2000000000 + g, 1, 'la-' || g, 'complete', 1 + g % 50, $1, $2, 15000, 9000, 6000, 90,
				$3::timestamptz + interval '1 month' + (g * (2419200.0 / 100000)) * interval '1 second'
			FROM generate_series(1, 100000) g`, []any{b.ID, pub, month}},
		{`ANALYZE ledger_events`, nil},
	} {
		st := time.Now()
		if _, err := s.DB.Pool.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
		t.Logf("%v", time.Since(st).Round(time.Millisecond))
	}
	t.Logf("seeded %d events in the month in %v", n, time.Since(start).Round(time.Millisecond))

	var json, partner []time.Duration
	for range 5 {
		st := time.Now()
		b.Do(t, "GET", "/api/v1/statements?month=2026-01", nil).Expect(t, 200)
		json = append(json, time.Since(st))
		st = time.Now()
		if _, err := s.DB.Ledger.PartnerStatement(ctx, pub, month); err != nil {
			t.Fatal(err)
		}
		partner = append(partner, time.Since(st))
	}
	slices.Sort(json)
	slices.Sort(partner)
	t.Logf("buyer statement (HTTP, JSON): median %v, max %v; partner statement (query): median %v, max %v",
		json[2].Round(time.Millisecond), json[4].Round(time.Millisecond), partner[2].Round(time.Millisecond), partner[4].Round(time.Millisecond))
	if json[2] > 2*time.Second {
		t.Errorf("the buyer's statement answers in %v (median), want ≤ 2 s", json[2])
	}
	if partner[2] > 2*time.Second {
		t.Errorf("the partner's statement sums in %v (median), want ≤ 2 s", partner[2])
	}
	// Screen-outs charge the buyer nothing and are not its events.
	measureExport(t, b, "GET", "/api/v1/statements?month=2026-01", nil, n-(n+19)/20, 6)
}
