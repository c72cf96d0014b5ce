package router_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app"
	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router/payout"
)

// hookEvent is a webhook body as a buyer's receiver parses it.
type hookEvent struct {
	EventID    string         `json:"event_id"`
	Type       string         `json:"type"`
	OccurredAt time.Time      `json:"occurred_at"`
	CampaignID int64          `json:"campaign_id"`
	Data       map[string]any `json:"data"`
}

// receiver is a buyer's webhook endpoint on a real listener: it verifies every delivery's
// signature with the buyer's secret, answers 503 to the first failFirst deliveries (and to
// every one while down), and keeps each event once by event_id, counting duplicates.
type receiver struct {
	srv       *httptest.Server
	secret    string
	failFirst atomic.Int64
	down      atomic.Bool
	attempts  atomic.Int64
	badSig    atomic.Int64
	mu        sync.Mutex
	events    map[string]hookEvent
	order     []string
	dupes     int
}

func newReceiver(t *testing.T, secret string) *receiver {
	r := &receiver{secret: secret, events: map[string]hookEvent{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(rw http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.attempts.Add(1)
	if r.down.Load() || r.failFirst.Add(-1) >= 0 {
		rw.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	if req.Method != "POST" || req.Header.Get("Content-Type") != "application/json" ||
		!payout.VerifyWebhook(r.secret, req.Header.Get(payout.WebhookTimestampHeader),
			req.Header.Get(payout.WebhookSignatureHeader), body, time.Now(), 5*time.Minute) {
		r.badSig.Add(1)
		rw.WriteHeader(http.StatusUnauthorized)
		return
	}
	var e hookEvent
	if err := json.Unmarshal(body, &e); err != nil || e.EventID == "" || e.EventID != req.Header.Get(payout.WebhookEventHeader) {
		r.badSig.Add(1)
		rw.WriteHeader(http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	if _, ok := r.events[e.EventID]; ok {
		r.dupes++
	} else {
		r.events[e.EventID] = e
		r.order = append(r.order, e.EventID)
	}
	r.mu.Unlock()
	rw.WriteHeader(http.StatusNoContent)
}

// find returns the events of campaign c of type typ received so far, in arrival order.
func (r *receiver) find(c int64, typ string) []hookEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []hookEvent
	for _, id := range r.order {
		if e := r.events[id]; e.CampaignID == c && e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// wait waits for an event of campaign c of type typ matching ok, and returns it.
func (r *receiver) wait(t *testing.T, c int64, typ string, ok func(hookEvent) bool) hookEvent {
	t.Helper()
	var got hookEvent
	waitFor(t, fmt.Sprintf("%s of campaign %d", typ, c), 30*time.Second, func() bool {
		for _, e := range r.find(c, typ) {
			if ok == nil || ok(e) {
				got = e
				return true
			}
		}
		return false
	})
	return got
}

func statusIs(old, to float64) func(hookEvent) bool {
	return func(e hookEvent) bool { return e.Data["old_status"] == old && e.Data["new_status"] == to }
}

// fastRetries makes the postback worker retry within a test's patience.
func fastRetries(c *app.Config) {
	c.Postbacks.BaseBackoff = 50 * time.Millisecond
	c.Postbacks.MaxBackoff = 200 * time.Millisecond
	c.Postbacks.Poll = 50 * time.Millisecond
	c.Postbacks.AllowPrivate = true // the receivers listen on 127.0.0.1
}

func TestWebhooks(t *testing.T) {
	w := newWorld(t, "")
	s := apptest.Start(t, apptest.Options{DatabaseURL: w.dbURL, RateLimit: -1, Configure: fastRetries})
	w.publicURL = s.PublicURL
	base := s.URL
	rcv := newReceiver(t, w.buyer.APISecret)
	first, firstToken := w.buyer, w.token

	// Registration: bad URLs are refused naming url; a good one is stored and shown.
	for _, bad := range []any{"ftp://x.test/h", "/relative", "https://user:pw@x.test/h", "https://x.test/h#f",
		"https://x.test/" + strings.Repeat("a", 2048), " https://x.test/h", nil, 5} {
		code, out := w.api(base, "PUT", "/api/v1/webhook", map[string]any{"url": bad})
		if code != 422 || !strings.Contains(string(out), `"url`) {
			t.Errorf("PUT webhook %v: %d %s, want 422 naming url", bad, code, out)
		}
	}
	if got := w.mustAPI(base, "GET", "/api/v1/webhook", nil, 200); got["url"] != nil {
		t.Errorf("webhook before any: %v", got)
	}
	w.mustAPI(base, "PUT", "/api/v1/webhook", map[string]any{"url": rcv.srv.URL + "/hooks?k=1"}, 200)
	if got := w.mustAPI(base, "GET", "/api/v1/webhook", nil, 200); got["url"] != rcv.srv.URL+"/hooks?k=1" {
		t.Errorf("webhook after PUT: %v", got)
	}

	// A status change by the buyer (5 Paused → 2 Active on creation's activation), then a
	// quota filled by completes, which completes the campaign.
	camp, quota := w.campaign(base, campaignOpts{quota: 2})
	act := rcv.wait(t, camp, "campaign.status_changed", statusIs(5, 2))
	if _, ok := act.Data["reason"]; ok || act.OccurredAt.IsZero() || !strings.HasPrefix(act.EventID, "evt_") {
		t.Errorf("activation event: %+v", act)
	}
	ps := w.participants(8)
	w.settle()
	for _, p := range ps[:2] {
		w.get(w.client, w.entryURL(base, p, camp))
	}
	filled := rcv.wait(t, camp, "quota.filled", nil)
	if filled.Data["quota_id"] != float64(quota) || filled.Data["completes"] != float64(2) || filled.Data["num_respondents"] != float64(2) {
		t.Errorf("quota.filled: %+v", filled)
	}
	done := rcv.wait(t, camp, "campaign.status_changed", statusIs(2, 3))
	if done.Data["reason"] != "quotas_full" {
		t.Errorf("auto-complete event: %+v", done)
	}
	if c := rcv.wait(t, camp, "campaign.completed", nil); c.Data["reason"] != "quotas_full" {
		t.Errorf("campaign.completed: %+v", c)
	}
	w.mustAPI(base, "POST", fmt.Sprintf("/api/v1/campaigns/%d/reconcile", camp), map[string]any{"accepted_ids": []string{}}, 200)
	if e := rcv.wait(t, camp, "campaign.status_changed", statusIs(3, 6)); e.Data["reason"] != nil {
		t.Errorf("reconcile event: %+v", e)
	}

	// The sweeper's system pause of a broken end link, with its reason.
	broken, _ := w.campaign(base, campaignOpts{quota: 1000})
	w.settle()
	w.survey.outcome = func(string) string { return "" }
	for _, p := range ps[2:8] {
		w.get(w.client, w.entryURL(base, p, broken))
	}
	ctx := context.Background()
	if _, err := w.db.Pool.Exec(ctx, `UPDATE sessions SET entered_at = now() - interval '31 minutes' WHERE campaign_id = $1`, broken); err != nil {
		t.Fatal(err)
	}
	if _, err := w.db.Pool.Exec(ctx, `UPDATE campaigns SET status_changed_at = now() - interval '1 hour' WHERE id = $1`, broken); err != nil {
		t.Fatal(err)
	}
	if ids, err := w.db.Maintenance.PauseBrokenLinks(ctx, 6, persistence.BrokenLinkScope{All: true}); err != nil || len(ids) != 1 || ids[0] != broken {
		t.Fatalf("PauseBrokenLinks: %v %v", ids, err)
	}
	if e := rcv.wait(t, broken, "campaign.status_changed", statusIs(2, 7)); e.Data["reason"] != "no_callbacks" {
		t.Errorf("system pause event: %+v", e)
	}

	// A quota filled by reconcile accepting a session that had no callback.
	acc, accQuota := w.campaign(base, campaignOpts{quota: 1})
	w.settle()
	w.get(w.client, w.entryURL(base, ps[0], acc))
	var tid string
	if err := w.db.Pool.QueryRow(ctx, `SELECT tid FROM sessions WHERE campaign_id = $1`, acc).Scan(&tid); err != nil {
		t.Fatal(err)
	}
	w.mustAPI(base, "POST", fmt.Sprintf("/api/v1/campaigns/%d/reconcile", acc), map[string]any{"accepted_ids": []string{tid}}, 200)
	if e := rcv.wait(t, acc, "quota.filled", nil); e.Data["quota_id"] != float64(accQuota) || e.Data["completes"] != float64(1) {
		t.Errorf("quota.filled by reconcile: %+v", e)
	}
	rcv.wait(t, acc, "campaign.status_changed", statusIs(2, 6))

	// A buyer without a URL gets nothing stored; removing the URL stops further events.
	other, otherToken, err := w.db.Accounts.CreateBuyer(ctx, fmt.Sprintf("other%d@example.test", time.Now().UnixNano()), "Other", "staging")
	if err != nil {
		t.Fatal(err)
	}
	before := w.count(`SELECT COALESCE(max(id), 0) FROM postback_outbox`)
	w.buyer, w.token = other, otherToken
	w.campaign(base, campaignOpts{quota: 5}) // created and activated by the other buyer
	if n := w.count(`SELECT count(*) FROM postback_outbox WHERE buyer_id = $1`, other.ID); n != 0 {
		t.Errorf("%d events stored for a buyer without a webhook URL", n)
	}
	w.buyer, w.token = first, firstToken
	w.mustAPI(base, "PUT", "/api/v1/webhook", map[string]any{"url": ""}, 200)
	w.mustAPI(base, "PUT", fmt.Sprintf("/api/v1/campaigns/%d", broken), map[string]any{"status": 5}, 200)
	if n := w.count(`SELECT count(*) FROM postback_outbox WHERE id > $1`, before); n != 0 {
		t.Errorf("%d events stored after the URL was removed or for the other buyer", n)
	}

	time.Sleep(300 * time.Millisecond) // any late duplicate
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if rcv.dupes != 0 || rcv.badSig.Load() != 0 {
		t.Errorf("duplicates %d, bad signatures %d", rcv.dupes, rcv.badSig.Load())
	}
	for _, e := range rcv.events {
		if e.CampaignID != camp && e.CampaignID != broken && e.CampaignID != acc {
			t.Errorf("event of another campaign: %+v", e)
		}
	}
}

func TestWebhookRetries(t *testing.T) {
	w := newWorld(t, "")
	s := apptest.Start(t, apptest.Options{DatabaseURL: w.dbURL, RateLimit: -1, Configure: fastRetries})
	w.publicURL = s.PublicURL
	rcv := newReceiver(t, w.buyer.APISecret)
	rcv.failFirst.Store(3)
	w.mustAPI(s.URL, "PUT", "/api/v1/webhook", map[string]any{"url": rcv.srv.URL}, 200)
	camp, _ := w.campaign(s.URL, campaignOpts{quota: 5})
	e := rcv.wait(t, camp, "campaign.status_changed", statusIs(5, 2))
	if n := rcv.attempts.Load(); n != 4 {
		t.Errorf("%d attempts, want 3 failures then a delivery", n)
	}
	// The worker records the delivery after the receiver has answered: wait for it.
	waitFor(t, "the delivery recorded", 10*time.Second, func() bool {
		return w.count(`SELECT count(*) FROM postback_outbox WHERE tid = $1 AND delivered_at IS NOT NULL`, e.EventID) == 1
	})
	if n := w.count(`SELECT attempts FROM postback_outbox WHERE tid = $1 AND delivered_at IS NOT NULL`, e.EventID); n != 4 {
		t.Errorf("stored attempts %d, want 4", n)
	}
	// This process's totals, and the backlog gauges (refreshed every 5 s): nothing pending.
	waitFor(t, "the webhook metrics", 15*time.Second, func() bool {
		_, body := w.get(w.client, s.URL+"/metrics")
		for _, want := range []string{"switchboard_webhooks_delivered_total 1\n", "switchboard_webhooks_failures_total 3\n",
			"switchboard_webhooks_dead_lettered_total 0\n", "switchboard_webhooks_pending 0\n", "switchboard_webhooks_dead 0\n",
			"switchboard_postbacks_delivered_total 0\n"} {
			if !strings.Contains(body, want) {
				return false
			}
		}
		return true
	})
}

// TestWebhookKill9 stores an event while the receiver is down, kills the serve process
// (kill -9) before any delivery succeeds, and restarts it: the event is delivered.
func TestWebhookKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs serve processes")
	}
	w := newWorld(t, "")
	addr := freeAddr(t)
	w.publicURL = "http://" + addr
	rcv := newReceiver(t, w.buyer.APISecret)
	rcv.down.Store(true)
	t.Setenv("SWITCHBOARD_WEBHOOK_ALLOW_PRIVATE", "true") // the receiver listens on 127.0.0.1
	p := w.serve(addr)
	w.mustAPI(w.publicURL, "PUT", "/api/v1/webhook", map[string]any{"url": rcv.srv.URL}, 200)
	camp, _ := w.campaign(w.publicURL, campaignOpts{quota: 5})
	waitFor(t, "a failed attempt", 30*time.Second, func() bool {
		return w.count(`SELECT count(*) FROM postback_outbox o JOIN campaigns c ON c.buyer_id = o.buyer_id
			WHERE c.id = $1 AND o.last_error IS NOT NULL AND o.delivered_at IS NULL`, camp) == 1
	})
	p.kill()
	rcv.down.Store(false)
	w.serve(addr)
	rcv.wait(t, camp, "campaign.status_changed", statusIs(5, 2))
	waitFor(t, "the delivery recorded", 30*time.Second, func() bool {
		return w.count(`SELECT count(*) FROM postback_outbox WHERE buyer_id = $1 AND delivered_at IS NULL`, w.buyer.ID) == 0
	})
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.events) != 1 || rcv.badSig.Load() != 0 {
		t.Errorf("events %d (want 1), bad signatures %d", len(rcv.events), rcv.badSig.Load())
	}
}
