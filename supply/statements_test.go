package supply_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
)

// TestStatement: GET /statements answers the partner's month, as JSON and as a CSV of the
// events it was told of, only its own; a malformed month is a 400 {"error"}.
func TestStatement(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	p, other := newPartner(t, s), newPartner(t, s)
	b := s.NewBuyer(t)
	jan := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	event := func(session int64, seq int, pub int64, kind string, charge, earning, reward int64, at time.Time) {
		t.Helper()
		if _, err := s.DB.Pool.Exec(context.Background(), `INSERT INTO ledger_events (session_id, seq, tid, kind, campaign_id, buyer_id, publisher_id,
			charge_usd, earning_usd, margin_usd, reward, at) VALUES ($1, $2, 'tid' || $1::bigint, $3, 7, $4, $5, $6::bigint, $7::bigint, $6::bigint - $7::bigint, $8, $9)`,
			session, seq, kind, b.ID, pub, charge, earning, reward, at); err != nil {
			t.Fatal(err)
		}
	}
	event(1, 1, p.ID, "complete", 12000, 6001, 60, jan)
	event(2, 1, p.ID, "complete", 12000, 6001, 60, jan.Add(time.Hour))
	event(3, 1, p.ID, "screenout", 0, 500, 5, jan.Add(2*time.Hour))
	event(2, 2, p.ID, "reversal", -12000, -6001, -60, jan.Add(3*time.Hour))
	event(4, 1, p.ID, "acceptance", 3400, 0, 0, jan.Add(4*time.Hour)) // paid already: not told
	event(5, 1, p.ID, "acceptance", 3400, 1700, 17, jan.Add(5*time.Hour))
	event(6, 1, other.ID, "complete", 12000, 6000, 60, jan)

	r := p.do(t, "GET", "/supply_api/v4/statements?month=2026-01", nil, nil).Expect(t, 200)
	const want = `{"month":"2026-01","currency_name":"Gems \"blue\"","completes":3,"reversed":1,"total_usd":"0.8201","total_currency":82}`
	if string(r.Body) != want {
		t.Fatalf("statement:\n%s\nwant\n%s", r.Body, want)
	}
	r = p.do(t, "GET", "/supply_api/v4/statements?month=2026-01", map[string]string{"Accept": "text/csv"}, nil).Expect(t, 200)
	const wantCSV = "event_id,at,kind,transaction_id,payout_usd,reward\n" +
		"tid1.1,2026-01-05T10:00:00.000000Z,complete,tid1,0.6001,60\n" +
		"tid2.1,2026-01-05T11:00:00.000000Z,complete,tid2,0.6001,60\n" +
		"tid3.1,2026-01-05T12:00:00.000000Z,screenout,tid3,0.0500,5\n" +
		"tid2.2,2026-01-05T13:00:00.000000Z,reversal,tid2,-0.6001,-60\n" +
		"tid5.1,2026-01-05T15:00:00.000000Z,acceptance,tid5,0.1700,17\n"
	if string(r.Body) != wantCSV || r.Header.Get("Content-Type") != "text/csv; charset=utf-8" {
		t.Fatalf("CSV (%s):\n%s\nwant\n%s", r.Header.Get("Content-Type"), r.Body, wantCSV)
	}
	r = p.do(t, "GET", "/supply_api/v4/statements/?month=2030-02", nil, nil).Expect(t, 200)
	if got := string(r.Body); got != `{"month":"2030-02","currency_name":"Gems \"blue\"","completes":0,"reversed":0,"total_usd":"0.0000","total_currency":0}` {
		t.Fatalf("an empty month: %s", got)
	}
	for _, m := range []string{"", "2026-1", "2026-13", "2026-01-01"} {
		expectError(t, p.do(t, "GET", "/supply_api/v4/statements?month="+m, nil, nil), 400, "month")
	}
	expectError(t, p.do(t, "GET", "/supply_api/v4/statements?month=2026-01", map[string]string{"Accept": "text/html"}, nil), 406, "Accept")
	expectError(t, p.do(t, "GET", "/supply_api/v4/statements?month=2026-01", map[string]string{"X-Api-Token": "nope"}, nil), 401, "")
}
