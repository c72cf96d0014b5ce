package router_test

import (
	"context"
	"testing"
	"time"
)

// TestCallbackParticipantNotInPanel: a callback's postback names the participant by the
// partner's user identifier whether the answering process's panel holds the participant
// or not (one inactive for longer than the panel keeps, answered by a process started
// since): the session reader leaves the identifier to the panel, and the database is asked
// for one the panel lacks.
func TestCallbackParticipantNotInPanel(t *testing.T) {
	w := newWorld(t, "")
	s1 := w.startInProcess()
	w.runWorker()
	ctx := context.Background()
	camp, _ := w.campaign(s1.URL, campaignOpts{quota: 10})
	ps := w.participants(2)
	w.settle()
	w.survey.outcome = func(string) string { return "" } // the callbacks come below, to the second process
	tids, users := make([]string, len(ps)), make([]string, len(ps))
	for i, p := range ps {
		w.get(w.client, w.entryURL(s1.URL, p, camp))
		if err := w.db.Pool.QueryRow(ctx, `SELECT s.tid, u.user_identifier FROM sessions s JOIN participants u ON u.id = s.participant_id
			WHERE s.campaign_id = $1 AND s.participant_id = $2`, camp, p).Scan(&tids[i], &users[i]); err != nil {
			t.Fatalf("session of participant %d: %v", i, err)
		}
	}
	if _, err := w.db.Pool.Exec(ctx, `UPDATE participants SET last_active_at = now() - interval '60 days' WHERE id = $1`, ps[1]); err != nil {
		t.Fatal(err)
	}
	s2 := w.startInProcess() // callbackURL now names it
	if _, _, ok := s2.App.Panel.UserOf(ps[0]); !ok {
		t.Fatal("the second process's panel lacks the active participant")
	}
	if _, _, ok := s2.App.Panel.UserOf(ps[1]); ok {
		t.Fatal("the second process's panel holds the inactive participant: the test proves nothing")
	}
	for i, tid := range tids {
		w.get(w.client, w.callbackURL("complete", tid, w.buyer.APISecret))
		waitFor(t, "the complete's postback", 10*time.Second, func() bool { _, ok := w.partner.postback(tid, "complete"); return ok })
		if pb, _ := w.partner.postback(tid, "complete"); pb.Get("user_identifier") != users[i] {
			t.Errorf("participant %d: postback user_identifier %q, want %q", i, pb.Get("user_identifier"), users[i])
		}
	}
}
