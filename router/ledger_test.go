package router_test

import (
	"context"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router"
)

// checkLedger fails t on any difference between the ledger and the outcomes and postbacks
// (persistence.CheckLedger, what `switchboard ledger check` runs).
func checkLedger(t testing.TB, db *persistence.DB) persistence.LedgerCheck {
	t.Helper()
	c, err := db.Ledger.CheckLedger(context.Background(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range c.Differences {
		t.Errorf("ledger difference: %+v", d)
	}
	return c
}

// partnerNet is what the partner holds for tid by the postbacks it received (one per
// event_id), in ten-thousandths of a USD: completes add, reversals subtract.
func partnerNet(t testing.TB, w *world, tid string) (int64, []string) {
	t.Helper()
	var net int64
	var statuses []string
	for _, q := range w.partner.told(tid) {
		r, ok := new(big.Rat).SetString(q.Get("payout_usd"))
		if !ok {
			t.Fatalf("postback payout_usd %q", q.Get("payout_usd"))
		}
		amount := new(big.Rat).Mul(r, big.NewRat(10000, 1)).Num().Int64()
		switch q.Get("status") {
		case "reversed":
			net -= amount
		default:
			net += amount
		}
		statuses = append(statuses, q.Get("status"))
	}
	return net, statuses
}

// completes starts a world with its postback worker and a campaign, and completes n
// sessions of it by callbacks; it returns their tids.
func completes(t *testing.T, n int) (*world, int64, []string) {
	t.Helper()
	w := newWorld(t, "")
	s := w.startInProcess()
	w.runWorker()
	camp, _ := w.campaign(s.URL, campaignOpts{quota: 20})
	ps := w.participants(n)
	w.settle()
	w.survey.outcome = func(string) string { return "complete" }
	tids := make([]string, n)
	for i, p := range ps {
		w.get(w.client, w.entryURL(s.URL, p, camp))
		if err := w.db.Pool.QueryRow(context.Background(), `SELECT tid FROM sessions WHERE campaign_id = $1 AND participant_id = $2`,
			camp, p).Scan(&tids[i]); err != nil {
			t.Fatal(err)
		}
	}
	return w, camp, tids
}

// TestRejectAcceptFlipsTellThePartner: complete → reject → reconcile-accept →
// reconcile-unlist → reconcile-accept → reject leaves the session rejected, and the partner,
// told of every flip by its own event, holds nothing for it.
func TestRejectAcceptFlipsTellThePartner(t *testing.T) {
	w, camp, tids := completes(t, 2)
	ctx := context.Background()
	a, b := tids[0], tids[1]
	waitFor(t, "the complete's postback", 10*time.Second, func() bool { return len(w.partner.told(a)) == 1 })
	ops := &router.BuyerOps{Verdicts: w.db.Sessions, Campaigns: w.db.Campaigns, Feed: w.db.Feed, PublicURL: w.publicURL}
	reject := func() {
		t.Helper()
		if _, err := ops.RejectCompletes(ctx, w.buyer, camp, []byte(`{"transaction_ids":["`+a+`"]}`)); err != nil {
			t.Fatal(err)
		}
	}
	reconcile := func(ids ...string) {
		t.Helper()
		if _, err := ops.Reconcile(ctx, w.buyer, camp, []byte(`{"accepted_ids":["`+strings.Join(ids, `","`)+`"]}`)); err != nil {
			t.Fatal(err)
		}
	}
	reject()
	reconcile(a, b)
	reconcile(b)
	reconcile(a, b)
	reject()
	want := []string{"complete", "reversed", "complete", "reversed", "complete", "reversed"}
	waitFor(t, "six postbacks", 10*time.Second, func() bool { return len(w.partner.told(a)) >= len(want) })
	time.Sleep(200 * time.Millisecond) // none beyond them
	net, statuses := partnerNet(t, w, a)
	if strings.Join(statuses, ",") != strings.Join(want, ",") || net != 0 {
		t.Errorf("partner told %v, holding %d; want %v, holding 0 for a rejected complete", statuses, net, want)
	}
	if w.count(`SELECT count(*) FROM sessions WHERE tid = $1 AND rejected`, a) != 1 {
		t.Error("session not rejected")
	}
	if n := w.count(`SELECT COALESCE(sum(earning_usd), 0) FROM ledger_events WHERE tid = $1`, a); n != 0 {
		t.Errorf("ledger: partner earns %d for the rejected complete, want 0", n)
	}
	if n := w.count(`SELECT COALESCE(sum(charge_usd), 0) FROM ledger_events WHERE tid = $1`, a); n != 0 {
		t.Errorf("ledger: buyer charged %d for the rejected complete, want 0", n)
	}
	checkLedger(t, w.db)
}

// TestConcurrentReconciles: six reconciles of one campaign at once, each listing another
// part of its completes, are serialized: each answer counts the state it produced, the
// campaign ends in one of them, and the ledger and the partner agree with it.
func TestConcurrentReconciles(t *testing.T) {
	w, camp, tids := completes(t, 6)
	ctx := context.Background()
	ops := &router.BuyerOps{Verdicts: w.db.Sessions, Campaigns: w.db.Campaigns, Feed: w.db.Feed, PublicURL: w.publicURL}
	type answer struct {
		listed int
		rec    persistence.Reconciliation
		err    error
	}
	answers := make([]answer, 6)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			listed := tids[:i+1] // reconcile i lists i+1 completes
			out, err := ops.Reconcile(ctx, w.buyer, camp, []byte(`{"accepted_ids":["`+strings.Join(listed, `","`)+`"]}`))
			answers[i] = answer{listed: len(listed), err: err}
			if err == nil {
				answers[i].rec = out.(persistence.Reconciliation)
			}
		}(i)
	}
	wg.Wait()
	last, lastID := -1, int64(0)
	for i, a := range answers {
		if a.err != nil {
			t.Fatalf("reconcile %d: %v", i, a.err)
		}
		if a.rec.AcceptedCount != int64(a.listed) || a.rec.RejectedCount != int64(len(tids)-a.listed) {
			t.Errorf("reconcile %d listing %d: answered %+v, want %d accepted, %d rejected", i, a.listed, a.rec, a.listed, len(tids)-a.listed)
		}
		if a.rec.ID > lastID {
			last, lastID = i, a.rec.ID
		}
	}
	if n := w.count(`SELECT count(*) FROM sessions WHERE campaign_id = $1 AND outcome = 'complete' AND NOT rejected`, camp); n != int64(answers[last].listed) {
		t.Errorf("%d accepted completes after the reconciles; the last (id %d) listed %d", n, lastID, answers[last].listed)
	}
	checkLedger(t, w.db)
	// The partner ends holding the payout of the last reconcile's completes only.
	waitFor(t, "postbacks delivered", 10*time.Second, func() bool {
		return w.count(`SELECT count(*) FROM postback_outbox WHERE delivered_at IS NULL AND publisher_id IS NOT NULL`) == 0
	})
	for i, tid := range tids {
		net, statuses := partnerNet(t, w, tid)
		held := w.count(`SELECT COALESCE(sum(earning_usd), 0) FROM ledger_events WHERE tid = $1`, tid)
		if net != held || (i < answers[last].listed) != (net > 0) {
			t.Errorf("session %d: partner holds %d (%v), ledger %d", i, net, statuses, held)
		}
	}
}
