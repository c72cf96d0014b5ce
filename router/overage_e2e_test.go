package router_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router"
)

// enterSilently admits each of ps into campaign camp through its offer link, with a survey
// that sends no callback, and returns their tids in order.
func (w *world) enterSilently(base string, camp int64, ps []int64) []string {
	w.t.Helper()
	w.survey.outcome = func(string) string { return "" }
	tids := make([]string, len(ps))
	for i, p := range ps {
		// Until admitted: on a busy machine the engine may learn of a participant late (a
		// refused entry stores nothing).
		waitFor(w.t, "an admitted entry", 10*time.Second, func() bool {
			w.get(w.client, w.entryURL(base, p, camp))
			return w.count(`SELECT count(*) FROM sessions WHERE campaign_id = $1 AND participant_id = $2`, camp, p) > 0
		})
		if err := w.db.Pool.QueryRow(context.Background(), `SELECT tid FROM sessions WHERE campaign_id = $1 AND participant_id = $2`,
			camp, p).Scan(&tids[i]); err != nil {
			w.t.Fatal(err)
		}
	}
	return tids
}

// completeAll sends the buyer's complete callback of every tid at once, and returns the
// partner redirect each was answered with (its query).
func (w *world) completeAll(tids []string) []url.Values {
	w.t.Helper()
	out := make([]url.Values, len(tids))
	var wg sync.WaitGroup
	for i, tid := range tids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := w.noFollow.Get(w.callbackURL("complete", tid, w.buyer.APISecret))
			if err != nil {
				w.t.Errorf("complete %s: %v", tid, err)
				return
			}
			resp.Body.Close()
			loc, _ := url.Parse(resp.Header.Get("Location"))
			if resp.StatusCode != 302 || loc == nil {
				w.t.Errorf("complete %s: %d, want a 302", tid, resp.StatusCode)
				return
			}
			out[i] = loc.Query()
		}()
	}
	wg.Wait()
	return out
}

// quotaCounts are a quota's completes and in_progress.
func (w *world) quotaCounts(quota int64) (completes, inProgress int64) {
	w.t.Helper()
	if err := w.db.Pool.QueryRow(context.Background(), `SELECT completes, in_progress FROM campaign_quotas WHERE id = $1`,
		quota).Scan(&completes, &inProgress); err != nil {
		w.t.Fatal(err)
	}
	return completes, inProgress
}

// exportStatuses is export_demographics' status of each session of camp, by tid.
func (w *world) exportStatuses(base string, camp int64) map[string]string {
	w.t.Helper()
	code, body := w.api(base, "POST", fmt.Sprintf("/api/v1/campaigns/%d/export_demographics", camp), map[string]any{})
	if code != 200 {
		w.t.Fatalf("export_demographics: %d %s", code, body)
	}
	recs, err := csv.NewReader(strings.NewReader(string(body))).ReadAll()
	if err != nil {
		w.t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range recs[1:] {
		out[r[0]] = r[2]
	}
	return out
}

// releasedWorld starts a world whose sweeper sweeps only when the test calls Sweep, with an
// active campaign of one quota of num places and LOI 1, people participants, and the first
// silent of them entered with no callback and released by the sweeper once their callback
// window (2 × LOI + 10 minutes) has passed: the quota holds no place.
func releasedWorld(t *testing.T, num, people, silent int) (w *world, base string, camp, quota int64, ps []int64, late []string) {
	t.Helper()
	w = newWorld(t, "")
	s := w.startSweepingEvery(time.Hour)
	base = s.URL
	camp, quota = w.campaign(base, campaignOpts{quota: num, extra: map[string]any{"length_of_interview": 1}})
	ps = w.participants(people)
	w.settle()
	late = w.enterSilently(base, camp, ps[:silent])
	w.age(camp, "13 minutes")
	s.App.Maintenance.Sweep(context.Background())
	if c, ip := w.quotaCounts(quota); c != 0 || ip != 0 {
		t.Fatalf("after the sweep: completes %d in_progress %d, want 0 0", c, ip)
	}
	w.settle()
	return w, base, camp, quota, ps, late
}

// TestLateCompletesNoOverDelivery: quota 5, LOI 1. Five participants enter and send no
// callback; the sweeper releases their sessions after 2 × LOI + 10 minutes (in_progress 0);
// five more are admitted into the places given back; then all ten complete at once. Every
// callback is answered with the partner's complete redirect and its postback (the partner is
// paid for each participant's completed survey), but the quota counts 5 completes and the
// buyer is charged for 5: the late completes its quota had no room for are overages
// (docs/rules.md §5), counted nowhere and exported as such, and the operator's marketplace
// figures show them as the exchange's cost.
func TestLateCompletesNoOverDelivery(t *testing.T) {
	w, base, camp, quota, ps, late := releasedWorld(t, 5, 10, 5)
	w.runWorker()
	held := w.enterSilently(base, camp, ps[5:])
	if c, ip := w.quotaCounts(quota); c != 0 || ip != 5 {
		t.Fatalf("after five more entries: completes %d in_progress %d, want 0 5", c, ip)
	}
	all := append(append([]string{}, late...), held...)
	for i, q := range w.completeAll(all) {
		if q.Get("status") != "complete" || q.Get("tid") != all[i] || q.Get("reward") != "100" {
			t.Errorf("redirect of %s: %v, want status=complete reward=100", all[i], q)
		}
	}
	if c, ip := w.quotaCounts(quota); c != 5 || ip != 0 {
		t.Errorf("after ten completes: quota completes %d in_progress %d, want 5 0 (num_respondents 5)", c, ip)
	}
	if n := w.count(`SELECT count(*) FROM sessions WHERE campaign_id = $1 AND outcome = 'complete' AND overage`, camp); n != 5 {
		t.Errorf("%d overages, want 5", n)
	}
	if n := w.count(`SELECT COALESCE(sum(completes), 0) FROM campaign_daily_counts WHERE campaign_id = $1`, camp); n != 5 {
		t.Errorf("the day's completes %d, want 5", n)
	}
	// The buyer sees 5 completes, is charged for 5, and sees the others as overages.
	c := w.mustAPI(base, "GET", fmt.Sprintf("/api/v1/campaigns/%d", camp), nil, 200)
	if st, _ := c["stats"].(map[string]any); st == nil || st["completes"] != float64(5) {
		t.Errorf("campaign stats %v, want completes 5", c["stats"])
	}
	statuses := w.exportStatuses(base, camp)
	counts := map[string]int{}
	for _, st := range statuses {
		counts[st]++
	}
	if counts[persistence.ResultComplete] != 5 || counts[persistence.ResultOverage] != 5 {
		t.Errorf("export statuses %v, want 5 %s and 5 %s", counts, persistence.ResultComplete, persistence.ResultOverage)
	}
	days, err := w.db.Insights.MarketDays(context.Background(), time.Now().Add(-48*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var billed, overages int64
	var overUSD string
	for _, d := range days {
		billed, overages, overUSD = billed+int64(d.Revenue), overages+d.Overages, d.OveragePayoutUSD
	}
	if billed != 5*200 || overages != 5 || overUSD != "5.0000" {
		t.Errorf("market figures: revenue %d cents, %d overages paying %s USD; want 1000, 5, 5.0000", billed, overages, overUSD)
	}
	// The partner is paid for every participant's complete.
	waitFor(t, "ten complete postbacks", 10*time.Second, func() bool {
		for _, tid := range all {
			if _, ok := w.partner.postback(tid, "complete"); !ok {
				return false
			}
		}
		return true
	})
	// A replay answers the same: the overage's complete redirect again, nothing counted twice.
	if q := w.completeAll(late[:1])[0]; q.Get("status") != "complete" {
		t.Errorf("replayed overage: %v", q)
	}
	if c, _ := w.quotaCounts(quota); c != 5 {
		t.Errorf("after a replay: completes %d, want 5", c)
	}

	// A rejected overage: its partner's pay is reversed; no quota count moves (it had none).
	var overage []string
	for _, tid := range late {
		if statuses[tid] == persistence.ResultOverage {
			overage = append(overage, tid)
		}
	}
	if len(overage) < 3 {
		t.Fatalf("%d of the late completes are overages, want at least 3", len(overage))
	}
	ops := &router.BuyerOps{Verdicts: w.db.Sessions, Campaigns: w.db.Campaigns, Feed: w.db.Feed, PublicURL: w.publicURL}
	out, err := ops.RejectCompletes(context.Background(), w.buyer, camp, []byte(`{"transaction_ids":["`+overage[0]+`"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if rej := out.(persistence.Rejection); len(rej.RejectedTransactionIDs) != 1 {
		t.Errorf("reject of an overage: %+v", rej)
	}
	if c, _ := w.quotaCounts(quota); c != 5 {
		t.Errorf("after rejecting an overage: completes %d, want 5", c)
	}
	waitFor(t, "the overage's reversal", 10*time.Second, func() bool { _, ok := w.partner.postback(overage[0], "reversed"); return ok })
	// Reconcile: a listed overage becomes an accepted complete (the buyer takes and pays for
	// it); unlisted overages stay overages, neither rejected nor reversed.
	accepted := append([]string{overage[1]}, held...)
	body := `{"accepted_ids":["` + strings.Join(accepted, `","`) + `"]}`
	out, err = ops.Reconcile(context.Background(), w.buyer, camp, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if rec := out.(persistence.Reconciliation); rec.AcceptedCount != 6 || rec.RejectedCount != 0 {
		t.Errorf("reconcile: %+v, want 6 accepted and 0 rejected", rec)
	}
	if c, _ := w.quotaCounts(quota); c != 6 {
		t.Errorf("after reconcile: completes %d, want 6", c)
	}
	after := w.exportStatuses(base, camp)
	if after[overage[1]] != persistence.ResultComplete || after[overage[0]] != persistence.ResultRejected ||
		after[overage[2]] != persistence.ResultOverage {
		t.Errorf("after reconcile: statuses %s %s %s, want Complete Rejected Overage",
			after[overage[1]], after[overage[0]], after[overage[2]])
	}
	time.Sleep(200 * time.Millisecond)
	for _, tid := range overage[2:] {
		if _, ok := w.partner.postback(tid, "reversed"); ok {
			t.Errorf("unlisted overage %s reversed", tid)
		}
	}
	checkLedger(t, w.db) // the ledger agrees with the outcomes and postbacks (docs/payouts.md, "Ledger")
}

// TestLateCompletesRace: one place left and two late completes at once: exactly one counts.
// Quota 2, LOI 1: two participants enter and send nothing, the sweeper releases them, a
// third enters and completes (1 complete, none in progress: room for one); then both late
// completes arrive together.
func TestLateCompletesRace(t *testing.T) {
	w, base, camp, quota, ps, late := releasedWorld(t, 2, 3, 2)
	third := w.enterSilently(base, camp, ps[2:])
	w.completeAll(third)
	if c, ip := w.quotaCounts(quota); c != 1 || ip != 0 {
		t.Fatalf("before the late completes: completes %d in_progress %d, want 1 0", c, ip)
	}
	for i, q := range w.completeAll(late) {
		if q.Get("status") != "complete" {
			t.Errorf("late complete %s: %v", late[i], q)
		}
	}
	if c, _ := w.quotaCounts(quota); c != 2 {
		t.Errorf("quota completes %d, want 2", c)
	}
	if n := w.count(`SELECT count(*) FROM sessions WHERE campaign_id = $1 AND overage`, camp); n != 1 {
		t.Errorf("%d overages, want 1", n)
	}
	checkLedger(t, w.db) // the ledger agrees with the outcomes and postbacks (docs/payouts.md, "Ledger")
}

// TestLateCompletesDailyCap: a late complete counts only while the day's completes are below
// max_daily_completes, as an entry would need (docs/rules.md §5); beyond, it is an overage
// like one its quotas had no room for. Quota 10 (room for all), max_daily_completes 2, LOI 1:
// three participants enter and send nothing, the sweeper releases them, then their three
// completes arrive at once: each is answered with the partner's complete redirect, two
// count (the quota's and the day's completes are 2) and one is an overage.
func TestLateCompletesDailyCap(t *testing.T) {
	w := newWorld(t, "")
	s := w.startSweepingEvery(time.Hour)
	camp, quota := w.campaign(s.URL, campaignOpts{quota: 10, extra: map[string]any{"length_of_interview": 1, "max_daily_completes": 2}})
	ps := w.participants(3)
	w.settle()
	late := w.enterSilently(s.URL, camp, ps)
	w.age(camp, "13 minutes")
	s.App.Maintenance.Sweep(context.Background())
	if c, ip := w.quotaCounts(quota); c != 0 || ip != 0 {
		t.Fatalf("after the sweep: completes %d in_progress %d, want 0 0", c, ip)
	}
	w.settle()
	for i, q := range w.completeAll(late) {
		if q.Get("status") != "complete" || q.Get("tid") != late[i] {
			t.Errorf("late complete %s: %v, want the complete redirect", late[i], q)
		}
	}
	if c, _ := w.quotaCounts(quota); c != 2 {
		t.Errorf("quota completes %d, want 2 (max_daily_completes 2)", c)
	}
	if n := w.count(`SELECT COALESCE(sum(completes), 0) FROM campaign_daily_counts WHERE campaign_id = $1`, camp); n != 2 {
		t.Errorf("the day's completes %d, want 2 (max_daily_completes 2)", n)
	}
	if n := w.count(`SELECT count(*) FROM sessions WHERE campaign_id = $1 AND outcome = 'complete' AND overage`, camp); n != 1 {
		t.Errorf("%d overages, want 1", n)
	}
	checkLedger(t, w.db) // the ledger agrees with the outcomes and postbacks (docs/payouts.md, "Ledger")
}

// TestRejectedCompleteReplay: the buyer's end link of a complete replayed after the buyer
// rejected that complete is answered with the session's state now (409: rejected), not a
// freshly signed complete redirect the partner could credit again (docs/rules.md §7); a
// replay before the rejection is the same redirect again.
func TestRejectedCompleteReplay(t *testing.T) {
	w := newWorld(t, "")
	s := w.startInProcess()
	base := s.URL
	camp, _ := w.campaign(base, campaignOpts{quota: 10})
	ps := w.participants(1)
	w.settle()
	tid := w.enterSilently(base, camp, ps)[0]
	end := w.callbackURL("complete", tid, w.buyer.APISecret)
	first := w.completeAll([]string{tid})[0]
	if again := w.completeAll([]string{tid})[0]; again.Encode() != first.Encode() || first.Get("status") != "complete" {
		t.Fatalf("replay before the rejection: %v, first %v", again, first)
	}
	ops := &router.BuyerOps{Verdicts: w.db.Sessions, Campaigns: w.db.Campaigns, Feed: w.db.Feed, PublicURL: w.publicURL}
	if _, err := ops.RejectCompletes(context.Background(), w.buyer, camp, []byte(`{"transaction_ids":["`+tid+`"]}`)); err != nil {
		t.Fatal(err)
	}
	w.settle()
	resp, body := w.get(w.noFollow, end)
	if resp.StatusCode != 409 || resp.Header.Get("Location") != "" || !strings.Contains(body, "rejected") {
		t.Errorf("replay after the rejection: %d %q Location %q, want a 409 saying rejected and no redirect",
			resp.StatusCode, body, resp.Header.Get("Location"))
	}
}

// TestLateCompleteOfARerouteHop: a re-routing chain's hop follows the rule of every session
// (docs/rules.md §5, §10). A participant screened out at A is re-routed to B (one place,
// LOI 1) and sends no callback; the sweeper releases the hop, another participant takes B's
// place; the hop's late complete then ends the chain with the partner's complete redirect
// (attempts=2) and postback, but as an overage: B counts only the complete of the place's
// holder.
func TestLateCompleteOfARerouteHop(t *testing.T) {
	w := newWorld(t, "")
	w.setReroute(1)
	s := w.startSweepingEvery(time.Hour)
	w.runWorker()
	a, _ := w.campaign(s.URL, campaignOpts{quota: 100, extra: map[string]any{"cpi": "5.00"}})
	b, bq := w.campaign(s.URL, campaignOpts{quota: 1, extra: map[string]any{"cpi": "4.00", "length_of_interview": 1}})
	ps := w.participants(2)
	w.settle()
	w.outcomesByCampaign(map[int64]string{a: "disqualified"})
	waitFor(t, "the re-routed hop into B", 10*time.Second, func() bool {
		w.get(w.client, w.entryURL(s.URL, ps[0], a))
		return len(w.hops(ps[0])) == 2
	})
	hop := w.hops(ps[0])[1]
	if hop.camp != b || hop.hop != 2 {
		t.Fatalf("hop %+v, want hop 2 into campaign %d", hop, b)
	}
	w.age(b, "13 minutes")
	s.App.Maintenance.Sweep(context.Background())
	w.settle()
	holder := w.enterSilently(s.URL, b, ps[1:])
	if c, ip := w.quotaCounts(bq); c != 0 || ip != 1 {
		t.Fatalf("B after the release and a new entry: completes %d in_progress %d, want 0 1", c, ip)
	}
	q := w.completeAll([]string{hop.tid})[0]
	if q.Get("status") != "complete" || q.Get("tid") != hop.tid || q.Get("attempts") != "2" || q.Get("reward") != "200" {
		t.Errorf("the hop's late complete: %v, want the chain's complete redirect (attempts 2, reward 200)", q)
	}
	w.completeAll(holder)
	if c, _ := w.quotaCounts(bq); c != 1 {
		t.Errorf("B's completes %d, want 1 (num_respondents 1)", c)
	}
	if n := w.count(`SELECT count(*) FROM sessions WHERE campaign_id = $1 AND overage`, b); n != 1 {
		t.Errorf("%d overages in B, want 1 (the hop)", n)
	}
	waitFor(t, "the chain's complete postback", 10*time.Second, func() bool { _, ok := w.partner.postback(hop.tid, "complete"); return ok })
	checkLedger(t, w.db) // the ledger agrees with the outcomes and postbacks (docs/payouts.md, "Ledger")
}
