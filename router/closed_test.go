package router_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router"
)

// TestCallbacksAfterReconcile: once a campaign is reconciled its accepted completes are
// final (docs/rules.md §8). A session that had no outcome then takes none (410, as after 7 days):
// it counts toward nothing and pays nobody, also when the reconcile commits between the
// callback's read of the session and its write. Sessions with an outcome answer as before.
func TestCallbacksAfterReconcile(t *testing.T) {
	w := newWorld(t, "")
	s := w.startInProcess()
	w.runWorker()
	base := s.URL
	camp, quota := w.campaign(base, campaignOpts{quota: 10})
	ps := w.participants(3)
	w.settle()
	w.survey.outcome = func(string) string { return "" } // respondents still in the survey
	tids := make([]string, len(ps))
	for i, p := range ps {
		w.get(w.client, w.entryURL(base, p, camp))
		if err := w.db.Pool.QueryRow(context.Background(), `SELECT tid FROM sessions WHERE campaign_id = $1 AND participant_id = $2`,
			camp, p).Scan(&tids[i]); err != nil {
			t.Fatal(err)
		}
	}
	// Read before the reconcile, written after it: the write must see the campaign closed.
	stale, err := w.db.Sessions.SessionByTID(context.Background(), tids[2])
	if err != nil || stale.Closed() {
		t.Fatalf("session before reconcile: %+v, %v", stale, err)
	}

	ops := &router.BuyerOps{Verdicts: w.db.Sessions, Campaigns: w.db.Campaigns, Feed: w.db.Feed, PublicURL: w.publicURL}
	if _, err := ops.Reconcile(context.Background(), w.buyer, camp, []byte(`{"accepted_ids":["`+tids[0]+`"]}`)); err != nil {
		t.Fatal(err)
	}
	completes := func() int64 { return w.count(`SELECT completes FROM campaign_quotas WHERE id = $1`, quota) }
	if c := completes(); c != 1 {
		t.Fatalf("completes after reconcile %d, want 1", c)
	}

	for _, c := range []struct {
		name, outcome, tid string
		want               int
	}{
		{"unlisted session, complete", "complete", tids[1], 410},
		{"unlisted session, disqualified", "disqualified", tids[1], 410},
		{"reconciled complete, same outcome", "complete", tids[0], 302},
		{"reconciled complete, another outcome", "over_quota", tids[0], 409},
	} {
		resp, _ := w.get(w.noFollow, w.callbackURL(c.outcome, c.tid, w.buyer.APISecret))
		if resp.StatusCode != c.want {
			t.Errorf("%s: %d, want %d", c.name, resp.StatusCode, c.want)
		}
	}
	res, err := w.db.Sessions.RecordOutcome(context.Background(), stale, persistence.OutcomeRecord{Outcome: "complete", At: time.Now(),
		Postback: persistence.Postback{TID: stale.TID, Kind: persistence.PostbackOutcome, PublisherID: w.pub.ID, URL: "https://partner.example/pb"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Decided || res.Stored.Outcome != "" || !res.Stored.Closed() {
		t.Errorf("outcome written after the reconcile: decided %v, stored %+v", res.Decided, res.Stored)
	}
	if c := completes(); c != 1 {
		t.Errorf("completes %d after callbacks on a reconciled campaign, want 1", c)
	}
	if n := w.count(`SELECT count(*) FROM sessions WHERE campaign_id = $1 AND outcome IS NOT NULL`, camp); n != 1 {
		t.Errorf("%d sessions with an outcome, want 1 (the reconciled complete)", n)
	}
	if n := w.count(`SELECT count(*) FROM postback_outbox WHERE tid = ANY($1) AND kind = 'outcome'`, tids[1:]); n != 0 {
		t.Errorf("%d outcome postbacks for sessions of a reconciled campaign", n)
	}
}
