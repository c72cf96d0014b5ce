package admin_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app"
	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router/payout"
)

// quickWebhooks makes the delivery worker claim and retry within a test's patience.
func quickWebhooks(allowPrivate bool) func(*app.Config) {
	return func(c *app.Config) {
		c.Postbacks.Poll, c.Postbacks.BaseBackoff, c.Postbacks.MaxBackoff = 50*time.Millisecond, 50*time.Millisecond, 100*time.Millisecond
		c.Postbacks.Timeout = 2 * time.Second
		c.Postbacks.AllowPrivate = allowPrivate
	}
}

// activate creates a campaign with a quota and activates it: one campaign.status_changed
// event for the buyer's webhook.
func activate(t *testing.T, b *apptest.Buyer) int64 {
	t.Helper()
	id := createCampaign(t, b, nil)
	createQuota(t, b, id, nil)
	b.Do(t, "PUT", path("/api/v1/campaigns/%d", id), map[string]any{"status": 2}).Expect(t, 200)
	return id
}

// deliveries is the answer of GET /api/v1/webhook/deliveries.
type deliveries struct {
	Deliveries []struct {
		ID         int64   `json:"id"`
		EventID    string  `json:"event_id"`
		Type       string  `json:"type"`
		CampaignID int64   `json:"campaign_id"`
		URL        string  `json:"url"`
		Status     string  `json:"status"`
		Attempts   int     `json:"attempts"`
		LastError  *string `json:"last_error"`
	} `json:"deliveries"`
	NextBeforeID int64 `json:"next_before_id"`
}

func listDeliveries(t *testing.T, b *apptest.Buyer, query string) deliveries {
	t.Helper()
	var d deliveries
	b.Do(t, "GET", "/api/v1/webhook/deliveries"+query, nil).Expect(t, 200).Decode(t, &d)
	return d
}

// TestWebhookURLRefusedAsDeliveryWould: PUT /api/v1/webhook refuses, 422 naming url, a URL
// whose host is or resolves only to non-public addresses, which delivery would refuse; with
// private addresses allowed (tests, one-host setups) it accepts them, as delivery would.
func TestWebhookURLRefusedAsDeliveryWould(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	b := s.NewBuyer(t)
	for _, u := range []string{"http://127.0.0.1:9/hooks", "http://localhost:8080/hooks", "http://[::1]/hooks",
		"http://169.254.169.254/latest/meta-data/", "https://10.0.0.7/hooks", "http://[::ffff:192.168.0.1]/hooks"} {
		r := b.Do(t, "PUT", "/api/v1/webhook", map[string]any{"url": u}).Expect(t, 422)
		if !strings.Contains(string(r.Body), `"url must reach a public address`) {
			t.Errorf("%s: %s", u, r.Body)
		}
	}
	var got struct{ URL *string }
	b.Do(t, "GET", "/api/v1/webhook", nil).Expect(t, 200).Decode(t, &got)
	if got.URL != nil {
		t.Fatalf("a refused URL was stored: %s", *got.URL)
	}
	// A public address, and a name that does not resolve yet (its deliveries are retried).
	for _, u := range []string{"https://8.8.8.8/hooks", "https://hooks.example.invalid/events"} {
		b.Do(t, "PUT", "/api/v1/webhook", map[string]any{"url": u}).Expect(t, 200)
	}
	local := apptest.Start(t, apptest.Options{Configure: func(c *app.Config) { c.Postbacks.AllowPrivate = true }})
	local.NewBuyer(t).Do(t, "PUT", "/api/v1/webhook", map[string]any{"url": "http://127.0.0.1:9/hooks"}).Expect(t, 200)
}

// TestWebhookRefusedDeadAtOnce: an event whose webhook URL delivery refuses (stored before
// the check, or by an operator) is dead-lettered at its first attempt, not retried for a
// day, and the buyer sees it, with why, in GET /api/v1/webhook/deliveries; a test send to
// that URL says the same and reaches nothing.
func TestWebhookRefusedDeadAtOnce(t *testing.T) {
	t.Parallel()
	var hits sync.Map
	internal := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { hits.Store(r.URL.Path, true) }))
	defer internal.Close()
	s := apptest.Start(t, apptest.Options{RateLimit: -1, Configure: quickWebhooks(false)})
	b, other := s.NewBuyer(t), s.NewBuyer(t)
	ctx := context.Background()
	if err := s.DB.Accounts.SetBuyerWebhook(ctx, b.ID, internal.URL+"/hooks"); err != nil {
		t.Fatal(err)
	}
	camps := []int64{activate(t, b), activate(t, b)}
	var dead deliveries
	deadline := time.Now().Add(10 * time.Second)
	for len(dead.Deliveries) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no two dead deliveries: %+v", listDeliveries(t, b, ""))
		}
		time.Sleep(50 * time.Millisecond)
		dead = listDeliveries(t, b, "?status=dead")
	}
	time.Sleep(300 * time.Millisecond) // several backoffs: a retry would show
	for i, d := range listDeliveries(t, b, "?status=failed").Deliveries {
		if d.Status != "dead" || d.Attempts != 1 || d.LastError == nil || *d.LastError != "webhook host resolves to a non-public address" ||
			d.Type != persistence.EventStatusChanged || d.CampaignID != camps[1-i] || d.URL != internal.URL+"/hooks" || !strings.HasPrefix(d.EventID, "evt_") {
			t.Errorf("delivery %+v (last error %v)", d, d.LastError)
		}
	}
	if _, ok := hits.Load("/hooks"); ok {
		t.Fatal("the refused address was reached")
	}
	// Listing: every status, newest first, in pages; another buyer sees none of it.
	if all := listDeliveries(t, b, ""); len(all.Deliveries) != 2 || all.NextBeforeID != 0 {
		t.Fatalf("all deliveries %+v", all)
	}
	page := listDeliveries(t, b, "?limit=1")
	if len(page.Deliveries) != 1 || page.NextBeforeID != page.Deliveries[0].ID || page.Deliveries[0].CampaignID != camps[1] {
		t.Fatalf("first page %+v", page)
	}
	if next := listDeliveries(t, b, path("?limit=1&before_id=%d", page.NextBeforeID)); len(next.Deliveries) != 1 || next.Deliveries[0].CampaignID != camps[0] {
		t.Fatalf("second page %+v", next)
	}
	for _, q := range []string{"?status=delivered", "?status=pending", "?status=pending,delivered"} {
		if d := listDeliveries(t, b, q); len(d.Deliveries) != 0 {
			t.Errorf("%s: %+v", q, d)
		}
	}
	if d := listDeliveries(t, other, ""); len(d.Deliveries) != 0 {
		t.Errorf("another buyer sees %+v", d)
	}
	for q, field := range map[string]string{"?status=sent": "status", "?limit=0": "limit", "?limit=1001": "limit", "?before_id=x": "before_id"} {
		r := b.Do(t, "GET", "/api/v1/webhook/deliveries"+q, nil).Expect(t, 400)
		if !strings.Contains(string(r.Body), "query parameter "+field) {
			t.Errorf("%s: %s", q, r.Body)
		}
	}
	// A test send says why, and reaches nothing either; without a URL there is nothing to test.
	var r payout.WebhookTestResult
	b.Do(t, "POST", "/api/v1/webhook/test", nil).Expect(t, 200).Decode(t, &r)
	if r.Delivered || r.Status != 0 || r.Error != "webhook host resolves to a non-public address" || r.URL != internal.URL+"/hooks" {
		t.Errorf("test send %+v", r)
	}
	if _, ok := hits.Load("/hooks"); ok {
		t.Fatal("the test send reached the refused address")
	}
	if r := other.Do(t, "POST", "/api/v1/webhook/test", nil).Expect(t, 409); !strings.Contains(string(r.Body), "no webhook URL") {
		t.Errorf("test without a URL: %s", r.Body)
	}
}

// TestWebhookTestSend: POST /api/v1/webhook/test POSTs a signed webhook.test event to the
// buyer's URL and answers what its server replied; nothing is stored. Delivered events are
// listed as such.
func TestWebhookTestSend(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{RateLimit: -1, Configure: quickWebhooks(true)})
	b := s.NewBuyer(t)
	type received struct {
		header http.Header
		body   []byte
	}
	got := make(chan received, 10)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- received{r.Header, body}
		_, _ = w.Write([]byte("thanks"))
	}))
	defer rcv.Close()
	b.Do(t, "PUT", "/api/v1/webhook", map[string]any{"url": rcv.URL + "/events"}).Expect(t, 200)
	var r payout.WebhookTestResult
	b.Do(t, "POST", "/api/v1/webhook/test", map[string]any{}).Expect(t, 200).Decode(t, &r)
	if !r.Delivered || r.Status != 200 || r.Body != "thanks" || r.Error != "" || r.URL != rcv.URL+"/events" || !strings.HasPrefix(r.EventID, "evt_test_") {
		t.Fatalf("test send %+v", r)
	}
	h := <-got
	if !payout.VerifyWebhook(b.Secret, h.header.Get(payout.WebhookTimestampHeader), h.header.Get(payout.WebhookSignatureHeader), h.body, time.Now(), time.Minute) {
		t.Fatalf("test event not signed with the buyer's secret: %s", h.body)
	}
	var e struct {
		EventID    string         `json:"event_id"`
		Type       string         `json:"type"`
		CampaignID int64          `json:"campaign_id"`
		OccurredAt time.Time      `json:"occurred_at"`
		Data       map[string]any `json:"data"`
	}
	if err := json.Unmarshal(h.body, &e); err != nil || e.EventID != r.EventID || e.Type != payout.WebhookTestEvent ||
		e.CampaignID != 0 || len(e.Data) != 0 || time.Since(e.OccurredAt) > time.Minute || h.header.Get(payout.WebhookEventHeader) != r.EventID {
		t.Fatalf("test event %s: %v", h.body, err)
	}
	if d := listDeliveries(t, b, ""); len(d.Deliveries) != 0 {
		t.Fatalf("a test event was stored: %+v", d)
	}
	b.Do(t, "POST", "/api/v1/webhook/test", json.RawMessage(`[1]`)).Expect(t, 400)
	camp := activate(t, b)
	<-got
	waitDelivered := time.Now().Add(10 * time.Second)
	for {
		d := listDeliveries(t, b, "?status=delivered")
		if len(d.Deliveries) == 1 && d.Deliveries[0].CampaignID == camp && d.Deliveries[0].Attempts == 1 && d.Deliveries[0].LastError == nil {
			break
		}
		if time.Now().After(waitDelivered) {
			t.Fatalf("delivered events %+v", d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
