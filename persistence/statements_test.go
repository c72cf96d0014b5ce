package persistence_test

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/persistence"
)

func TestParseMonth(t *testing.T) {
	for in, want := range map[string]string{"2026-01": "2026-01-01T00:00:00Z", "0001-12": "0001-12-01T00:00:00Z", "9999-09": "9999-09-01T00:00:00Z"} {
		got, err := persistence.ParseMonth(in)
		if err != nil || got.Format(time.RFC3339) != want {
			t.Errorf("ParseMonth(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "2026", "2026-1", "2026-13", "2026-00", "0000-01", "2026/01", "2026-01-01", "+026-01", "2026-0a", " 2026-01", "２026-01"} {
		if _, err := persistence.ParseMonth(in); err == nil {
			t.Errorf("ParseMonth(%q) accepted", in)
		}
	}
}

// FuzzParseMonth: any input either fails or is a month whose YYYY-MM is the input itself.
func FuzzParseMonth(f *testing.F) {
	for _, s := range []string{"2026-01", "2026-13", "", "0001-01", "9999-12", "2026-1", "20260-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := persistence.ParseMonth(s)
		if err != nil {
			return
		}
		if got := fmt.Sprintf("%04d-%02d", m.Year(), int(m.Month())); got != s || m.Day() != 1 || m.Location() != time.UTC || m.Hour() != 0 {
			t.Fatalf("ParseMonth(%q) = %v", s, m)
		}
	})
}

// statementSnapshot is everything a month's statements answer: the buyer's and the
// partner's figures and their CSVs.
type statementSnapshot struct {
	Buyer      []persistence.CampaignSpend
	Partner    persistence.PartnerMonth
	BuyerCSV   string
	PartnerCSV string
}

func snapshotMonth(t *testing.T, db *persistence.DB, buyer, pub int64, month time.Time) statementSnapshot {
	t.Helper()
	ctx := context.Background()
	var s statementSnapshot
	var err error
	if s.Buyer, err = db.Ledger.BuyerStatement(ctx, buyer, month); err != nil {
		t.Fatal(err)
	}
	if s.Partner, err = db.Ledger.PartnerStatement(ctx, pub, month); err != nil {
		t.Fatal(err)
	}
	write := func(open func() (*persistence.CSVExport, error)) string {
		e, err := open()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if _, err := e.WriteCSV(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	s.BuyerCSV = write(func() (*persistence.CSVExport, error) { return db.Ledger.OpenBuyerStatementCSV(ctx, buyer, month) })
	s.PartnerCSV = write(func() (*persistence.CSVExport, error) { return db.Ledger.OpenPartnerStatementCSV(ctx, pub, month) })
	return s
}

// TestClosedMonthNeverChanges: a month's statements, closed, are the same after reversals,
// reconcile acceptances and rejections of its completes, and after an outcome timed inside
// it that commits once it is closed (that event is the current month's).
func TestClosedMonthNeverChanges(t *testing.T) {
	ctx := context.Background()
	db := migratedDB(t)
	buyer := newBuyer(t, db, "closing@example.test")
	pub := newPublisher(t, db)
	camp, quota := newActiveCampaign(t, db, buyer, "closing", nil)
	month := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	in := month.Add(10 * 24 * time.Hour)
	var cpi int64
	if err := db.Pool.QueryRow(ctx, `SELECT cpi_cents FROM campaigns WHERE id = $1`, camp).Scan(&cpi); err != nil {
		t.Fatal(err)
	}
	// A reconcile ends its campaign: the late outcome is of a second campaign.
	camp2, quota2 := newActiveCampaign(t, db, buyer, "closing later", nil)
	if _, err := db.Pool.Exec(ctx, `UPDATE campaigns SET cpi_cents = $2 WHERE id = $1`, camp2, cpi); err != nil {
		t.Fatal(err)
	}
	tids := make([]string, 5)
	for i := range tids {
		tids[i] = randomTID()
		c, q := camp, quota
		if i == 4 {
			c, q = camp2, quota2
		}
		if _, err := db.Pool.Exec(ctx, `INSERT INTO sessions (tid, campaign_id, buyer_id, publisher_id, quota_ids, entered_at)
			VALUES ($1, $2, $3, $4, ARRAY[$5::bigint], $6)`, tids[i], c, buyer, pub, q, in); err != nil {
			t.Fatal(err)
		}
	}
	record := func(tid, o string, at time.Time, pay int64) {
		t.Helper()
		s, err := db.Sessions.SessionByTID(ctx, tid)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := db.Sessions.RecordOutcome(ctx, s, persistence.OutcomeRecord{Outcome: o, At: at, PayoutUSD: pay, Reward: pay / 100}); err != nil || !res.Decided {
			t.Fatalf("record %s: %+v %v", o, res, err)
		}
	}
	complete := cpi * 50
	record(tids[0], "complete", in, complete)
	record(tids[1], "complete", in.Add(time.Minute), complete)
	record(tids[2], "complete", in.Add(2*time.Minute), complete)
	record(tids[3], "over_quota", in.Add(3*time.Minute), 150)

	before := snapshotMonth(t, db, buyer, pub, month)
	if len(before.Buyer) != 1 || before.Buyer[0] != (persistence.CampaignSpend{CampaignID: camp, Completes: 3, Amount: 3 * cpi * 100}) {
		t.Fatalf("buyer statement %+v", before.Buyer)
	}
	if want := (persistence.PartnerMonth{Completes: 3, EarningUSD: 3*complete + 150, Reward: 3*(complete/100) + 1}); before.Partner != want {
		t.Fatalf("partner statement %+v, want %+v", before.Partner, want)
	}
	if n := strings.Count(before.BuyerCSV, "\n"); n != 4 {
		t.Fatalf("buyer CSV has %d lines, want a header and 3 events:\n%s", n, before.BuyerCSV)
	}
	if !strings.HasPrefix(before.PartnerCSV, "event_id,at,kind,transaction_id,payout_usd,reward\n"+tids[0]+".1,2026-01-11T00:00:00.000000Z,complete,") {
		t.Fatalf("partner CSV:\n%s", before.PartnerCSV)
	}

	if _, _, err := db.Ledger.CloseMonth(ctx, time.Now()); fault.KindOf(err) != fault.KindInvalid {
		t.Fatalf("closing the current month: %v, want invalid", err)
	}
	c, created, err := db.Ledger.CloseMonth(ctx, month)
	if err != nil || !created {
		t.Fatalf("close: %v created %v", err, created)
	}
	if want := (persistence.LedgerTotals{Events: 4, Charges: 3 * cpi * 100, Earnings: 3*complete + 150, Margin: 3*cpi*100 - 3*complete - 150}); c.Totals != want {
		t.Fatalf("closed totals %+v, want %+v", c.Totals, want)
	}

	// Later movements of the month's completes, and an outcome timed inside it.
	accept := func(s persistence.Session, _ persistence.Publisher, _ string) (persistence.Accepted, bool, error) {
		return persistence.Accepted{PayoutUSD: complete, Reward: complete / 100}, true, nil
	}
	if _, err := db.Sessions.RejectCompletes(ctx, buyer, camp, tids[:2], persistence.RejectEffects{}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Sessions.Reconcile(ctx, buyer, camp, []string{tids[0], tids[2], tids[3]}, nil, accept, persistence.RejectEffects{}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Sessions.RejectCompletes(ctx, buyer, camp, tids[:1], persistence.RejectEffects{}); err != nil {
		t.Fatal(err)
	}
	record(tids[4], "complete", month.Add(20*24*time.Hour), complete)

	after := snapshotMonth(t, db, buyer, pub, month)
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("the closed month changed:\nbefore %+v\nafter  %+v", before, after)
	}
	again, created, err := db.Ledger.CloseMonth(ctx, month)
	if err != nil || created || again != c {
		t.Fatalf("closing again: %+v created %v %v; want %+v", again, created, err, c)
	}
	// The late outcome is an event of the month it was written in.
	var at time.Time
	if err := db.Pool.QueryRow(ctx, `SELECT at FROM ledger_events WHERE tid = $1`, tids[4]).Scan(&at); err != nil {
		t.Fatal(err)
	}
	if now := time.Now(); at.Year() != now.Year() || at.Month() != now.Month() {
		t.Fatalf("the late outcome is dated %v, want this month", at)
	}
	cur, err := db.Ledger.BuyerStatement(ctx, buyer, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// This month: rejections of 0 and 1, acceptances of 0 and 3 (2 was accepted already),
	// the rejection of 0 again; and the late complete, of the second campaign.
	if len(cur) != 2 || cur[0] != (persistence.CampaignSpend{CampaignID: camp, Completes: 2, Reversed: 3, Amount: -cpi * 100}) ||
		cur[1] != (persistence.CampaignSpend{CampaignID: camp2, Completes: 1, Amount: cpi * 100}) {
		t.Fatalf("this month's statement %+v", cur)
	}
	check, err := db.Ledger.CheckLedger(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range check.Differences {
		t.Errorf("ledger check: %+v", d)
	}

	// An event slipped into the closed month behind the triggers: ledger check names it.
	if _, err := db.Pool.Exec(ctx, `ALTER TABLE ledger_events DISABLE TRIGGER ledger_events_open_month`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO ledger_events (session_id, seq, tid, kind, campaign_id, buyer_id, charge_usd, earning_usd, margin_usd, reward, at)
		VALUES (999999, 1, 'forged', 'screenout', $1, $2, 0, 0, 0, 0, $3)`, camp, buyer, in); err != nil {
		t.Fatal(err)
	}
	if check, err = db.Ledger.CheckLedger(ctx, month); err != nil {
		t.Fatal(err)
	}
	if d := check.Differences; len(d) != 1 || d[0] != (persistence.LedgerDifference{TID: "2026-01", What: "closed month events", Ledger: 4, Outcomes: 5}) {
		t.Fatalf("ledger check of a changed closed month: %+v", d)
	}
}

// TestStatementCSVQuoting: a field holding a comma, a quote or a line break is quoted as RFC
// 4180 says in the statements' CSVs, which the database writes line by line.
func TestStatementCSVQuoting(t *testing.T) {
	ctx := context.Background()
	db := migratedDB(t)
	buyer := newBuyer(t, db, "quoting@example.test")
	pub := newPublisher(t, db)
	if _, err := db.Pool.Exec(ctx, `INSERT INTO ledger_events (session_id, seq, tid, kind, campaign_id, buyer_id, publisher_id,
		charge_usd, earning_usd, margin_usd, reward, at) VALUES (1, 1, E'a,"b"\nc', 'complete', 3, $1, $2, 10000, 6000, 4000, 60, '2026-02-03T04:05:06.5Z')`,
		buyer, pub); err != nil {
		t.Fatal(err)
	}
	s := snapshotMonth(t, db, buyer, pub, time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC))
	const tid = "\"a,\"\"b\"\"\nc\""
	if want := "event_id,at,kind,campaign_id,transaction_id,amount_usd\n\"a,\"\"b\"\"\nc.1\",2026-02-03T04:05:06.500000Z,complete,3," + tid + ",1.0000\n"; s.BuyerCSV != want {
		t.Errorf("buyer CSV:\n%q\nwant\n%q", s.BuyerCSV, want)
	}
	if want := "event_id,at,kind,transaction_id,payout_usd,reward\n\"a,\"\"b\"\"\nc.1\",2026-02-03T04:05:06.500000Z,complete," + tid + ",0.6000,60\n"; s.PartnerCSV != want {
		t.Errorf("partner CSV:\n%q\nwant\n%q", s.PartnerCSV, want)
	}
}
