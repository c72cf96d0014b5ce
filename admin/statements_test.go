package admin_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
)

// ledgerEvent stores one ledger event as the outcomes' transactions do (campaign, buyer,
// partner, kind, charge and earning in ten-thousandths of a USD, reward, time).
func ledgerEvent(t *testing.T, s *apptest.Server, session int64, seq int, camp, buyer int64, pub any, kind string, charge, earning, reward int64, at time.Time) {
	t.Helper()
	if _, err := s.DB.Pool.Exec(context.Background(), `INSERT INTO ledger_events (session_id, seq, tid, kind, campaign_id, buyer_id, publisher_id,
		charge_usd, earning_usd, margin_usd, reward, at) VALUES ($1, $2, 'tid' || $1::bigint, $3, $4, $5, $6::bigint, $7::bigint, $8::bigint, $7::bigint - $8::bigint, $9, $10)`,
		session, seq, kind, camp, buyer, pub, charge, earning, reward, at); err != nil {
		t.Fatal(err)
	}
}

// TestStatement: GET /statements answers the buyer's month per campaign, as JSON and as a
// CSV of its events, only its own; a malformed month is a 422 naming month; a closed
// month's answers are the same bytes after later reversals and a late outcome.
func TestStatement(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	b, other := s.NewBuyer(t), s.NewBuyer(t)
	jan := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	ledgerEvent(t, s, 1, 1, 7, b.ID, nil, "complete", 12000, 6000, 600, jan)
	ledgerEvent(t, s, 2, 1, 7, b.ID, nil, "complete", 12000, 6000, 600, jan.Add(time.Hour))
	ledgerEvent(t, s, 3, 1, 9, b.ID, nil, "screenout", 0, 500, 5, jan.Add(2*time.Hour))
	ledgerEvent(t, s, 2, 2, 7, b.ID, nil, "reversal", -12000, -6000, -600, jan.Add(3*time.Hour))
	ledgerEvent(t, s, 4, 1, 9, b.ID, nil, "acceptance", 3400, 1700, 170, jan.Add(4*time.Hour))
	ledgerEvent(t, s, 5, 1, 11, other.ID, nil, "complete", 99900, 0, 0, jan)
	ledgerEvent(t, s, 6, 1, 7, b.ID, nil, "complete", 12000, 6000, 600, jan.AddDate(0, 1, 0)) // February

	const want = `{"month":"2026-01","currency":"USD","campaigns":[{"campaign_id":7,"completes":2,"reversed":1,"amount":"1.2000"},` +
		`{"campaign_id":9,"completes":1,"reversed":0,"amount":"0.3400"}],"total":"1.5400"}`
	r := b.Do(t, "GET", "/api/v1/statements?month=2026-01", nil).Expect(t, 200)
	if string(r.Body) != want {
		t.Fatalf("statement:\n%s\nwant\n%s", r.Body, want)
	}
	r = b.Do(t, "GET", "/api/v1/statements/?month=2025-12", nil).Expect(t, 200)
	if got := string(r.Body); got != `{"month":"2025-12","currency":"USD","campaigns":[],"total":"0.0000"}` {
		t.Fatalf("an empty month: %s", got)
	}
	csvOf := func() string {
		req := b.Request(t, "GET", "/api/v1/statements?month=2026-01", nil)
		req.Header.Set("Accept", "text/csv")
		r := s.Send(t, req).Expect(t, 200)
		if ct := r.Header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
			t.Fatalf("CSV content type %q", ct)
		}
		return string(r.Body)
	}
	const wantCSV = "event_id,at,kind,campaign_id,transaction_id,amount_usd\n" +
		"tid1.1,2026-01-05T10:00:00.000000Z,complete,7,tid1,1.2000\n" +
		"tid2.1,2026-01-05T11:00:00.000000Z,complete,7,tid2,1.2000\n" +
		"tid2.2,2026-01-05T13:00:00.000000Z,reversal,7,tid2,-1.2000\n" +
		"tid4.1,2026-01-05T14:00:00.000000Z,acceptance,9,tid4,0.3400\n"
	if got := csvOf(); got != wantCSV {
		t.Fatalf("CSV:\n%s\nwant\n%s", got, wantCSV)
	}
	for _, m := range []string{"", "2026-1", "2026-13", "26-01", "2026-01-01", "x"} {
		r := b.Do(t, "GET", "/api/v1/statements?month="+m, nil).Expect(t, 422)
		if msg := r.Message(t); !strings.HasPrefix(msg, "month ") {
			t.Errorf("month %q: %q does not name month", m, msg)
		}
	}

	if _, _, err := s.DB.Ledger.CloseMonth(context.Background(), jan); err != nil {
		t.Fatal(err)
	}
	ledgerEvent(t, s, 1, 2, 7, b.ID, nil, "reversal", -12000, -6000, -600, time.Now())
	ledgerEvent(t, s, 8, 1, 9, b.ID, nil, "complete", 3400, 1700, 170, jan.Add(24*time.Hour)) // committed after the close
	if r := b.Do(t, "GET", "/api/v1/statements?month=2026-01", nil).Expect(t, 200); string(r.Body) != want {
		t.Fatalf("the closed month changed:\n%s\nwant\n%s", r.Body, want)
	}
	if got := csvOf(); got != wantCSV {
		t.Fatalf("the closed month's CSV changed:\n%s\nwant\n%s", got, wantCSV)
	}
}
