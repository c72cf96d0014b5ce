package persistence_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/persistence"
)

// TestBackfillLedger: sessions decided without the ledger (stored with their outcomes and no
// events, as a release before the ledger left them) get their history from BackfillLedger,
// in batches, after which CheckLedger finds no difference, the statements of their month
// hold them, and running it again adds nothing. A live serve process of a release without
// the ledger stops it.
func TestBackfillLedger(t *testing.T) {
	ctx := context.Background()
	db := migratedDB(t)
	buyer := newBuyer(t, db, "history@example.test")
	pub := newPublisher(t, db)
	camp, quota := newActiveCampaign(t, db, buyer, "history", nil)
	var cpi int64
	if err := db.Pool.QueryRow(ctx, `SELECT cpi_cents FROM campaigns WHERE id = $1`, camp).Scan(&cpi); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2025, 11, 3, 12, 0, 0, 0, time.UTC)
	type old struct {
		outcome           string
		payout            float64
		rejected, overage bool
		test              bool
		tid               string
	}
	olds := []*old{
		{outcome: "complete", payout: 0.6},
		{outcome: "complete", payout: 0.6, rejected: true},
		{outcome: "complete", payout: 0.6, overage: true},
		{outcome: "over_quota", payout: 0.05},
		{outcome: "quality_term"},
		{outcome: "complete", payout: 0.6, test: true},
		{outcome: "complete", payout: 0.6}, // rejected with the ledger, below
		{outcome: ""},                      // undecided
	}
	for i, o := range olds {
		o.tid = randomTID()
		if _, err := db.Pool.Exec(ctx, `INSERT INTO sessions (tid, campaign_id, buyer_id, publisher_id, quota_ids, entered_at,
			outcome, outcome_at, payout_usd, reward, rejected, rejected_at, overage, is_test)
			VALUES ($1, $2, $3, $4, ARRAY[$5::bigint], $6::timestamptz, NULLIF($7::text, ''),
				CASE WHEN $7::text <> '' THEN $6::timestamptz + interval '5 minutes' END, $8::numeric, ($8::numeric * 100)::bigint,
				$9::boolean, CASE WHEN $9::boolean THEN $6::timestamptz + interval '1 day' END, $10, $11)`,
			o.tid, camp, buyer, pub, quota, at.Add(time.Duration(i)*time.Hour), o.outcome, o.payout, o.rejected, o.overage, o.test); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Sessions.RejectCompletes(ctx, buyer, camp, []string{olds[6].tid}, persistence.RejectEffects{}); err != nil {
		t.Fatal(err)
	}
	// As the migration finds a database with sessions: nothing looked at yet.
	if _, err := db.Pool.Exec(ctx, `UPDATE ledger_backfill SET next_id = 0, through = (SELECT max(id) FROM sessions)`); err != nil {
		t.Fatal(err)
	}
	check := func() []persistence.LedgerDifference {
		c, err := db.Ledger.CheckLedger(ctx, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		return c.Differences
	}
	if d := check(); len(d) == 0 {
		t.Fatal("ledger check finds no difference before the backfill")
	}
	if _, _, err := db.Ledger.CloseMonth(ctx, at); fault.KindOf(err) != fault.KindInvalid {
		t.Fatalf("closing a month before the backfill: %v, want invalid", err)
	}

	if _, err := db.Pool.Exec(ctx, `INSERT INTO serve_processes (id, addr, version, started_at, campaigns, participants)
		VALUES ('old', 'x:1', 'old', now(), 0, 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Ledger.BackfillLedger(ctx, 3, nil); fault.KindOf(err) != fault.KindConflict {
		t.Fatalf("backfill beside a release without the ledger: %v, want conflict", err)
	}
	if _, err := db.Pool.Exec(ctx, `DELETE FROM serve_processes`); err != nil {
		t.Fatal(err)
	}

	var batches int
	h, err := db.Ledger.BackfillLedger(ctx, 3, func(persistence.LedgerHistory) { batches++ })
	if err != nil {
		t.Fatal(err)
	}
	// Decided, told and not tests: 0–4 and 6; 1 gets its reversal too.
	if !h.Done || h.Sessions != 6 || h.Events != 7 || batches != h.Batches || h.Batches < 2 {
		t.Fatalf("backfill %+v (%d progress calls)", h, batches)
	}
	for _, d := range check() {
		t.Errorf("ledger check after the backfill: %+v", d)
	}
	again, err := db.Ledger.BackfillLedger(ctx, 3, nil)
	if err != nil || again.Events != 0 || !again.Done {
		t.Fatalf("backfill again: %+v %v", again, err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE ledger_backfill SET next_id = 0`); err != nil {
		t.Fatal(err)
	}
	if again, err = db.Ledger.BackfillLedger(ctx, 100, nil); err != nil || again.Events != 0 || again.Sessions != 0 {
		t.Fatalf("backfill from the start again: %+v %v", again, err)
	}

	spend, err := db.Ledger.BuyerStatement(ctx, buyer, at)
	if err != nil {
		t.Fatal(err)
	}
	// November: completes 0, 1 and 6 charged (2 is an overage), 1 refunded.
	if len(spend) != 1 || spend[0] != (persistence.CampaignSpend{CampaignID: camp, Completes: 3, Reversed: 1, Amount: 2 * cpi * 100}) {
		t.Fatalf("November's statement after the backfill: %+v", spend)
	}
	var id0 string
	if err := db.Pool.QueryRow(ctx, `SELECT string_agg(tid || '.' || seq || ':' || kind, ' ' ORDER BY seq) FROM ledger_events WHERE tid = $1`, olds[6].tid).Scan(&id0); err != nil {
		t.Fatal(err)
	}
	if want := olds[6].tid + ".0:complete " + olds[6].tid + ".1:reversal"; id0 != want {
		t.Fatalf("events of a complete decided before the ledger and rejected with it: %s, want %s", id0, want)
	}
	if _, _, err := db.Ledger.CloseMonth(ctx, at); err != nil {
		t.Fatalf("closing a month after the backfill: %v", err)
	}
}
