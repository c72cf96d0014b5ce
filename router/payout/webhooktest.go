package payout

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/egress"
	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/persistence"
)

// WebhookTestEvent is the type of the event a buyer's webhook test sends: it announces
// nothing, and a receiver must change nothing for it.
const WebhookTestEvent = "webhook.test"

// WebhookTestResult is what a buyer's server answered to a test event.
type WebhookTestResult struct {
	EventID    string `json:"event_id"`    // the test event's id (also its X-Switchboard-Event-Id)
	URL        string `json:"url"`         // where it was POSTed: the buyer's webhook URL
	Delivered  bool   `json:"delivered"`   // a 2xx, as the worker counts a delivery
	Status     int    `json:"status"`      // the answer's status; 0 when none came
	Body       string `json:"body"`        // the first KiB of the answer's body
	Error      string `json:"error"`       // why no answer came (no address is named)
	DurationMS int64  `json:"duration_ms"` // from the request to the answer
}

// CheckWebhookURL refuses, as delivery would (the egress policy under the worker's
// AllowPrivate), a webhook URL whose host is or resolves only to non-public addresses: a
// fault naming "url". A host that does not resolve passes (its deliveries are retried).
// raw is a URL ValidateWebhookURL accepted.
func (w *Worker) CheckWebhookURL(ctx context.Context, raw string) error {
	return CheckWebhookURL(ctx, egress.Policy{AllowPrivate: w.cfg.AllowPrivate}, raw)
}

// CheckWebhookURL is the worker's check under policy, for whoever sets a webhook URL
// without a worker at hand (the command line), so that every way of setting one refuses
// what delivery would.
func CheckWebhookURL(ctx context.Context, policy egress.Policy, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fault.Invalid("url", "must be an absolute http or https URL")
	}
	lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if policy.Refuses(lctx, u.Hostname()) {
		return fault.Invalid("url", "must reach a public address: its host is or resolves to loopback, private, link-local or other non-public addresses only, where webhooks are never delivered")
	}
	return nil
}

// SendWebhookTest POSTs a signed test event (type WebhookTestEvent, campaign_id 0, empty
// data) to target, the buyer's webhook URL, as a delivery would (the egress policy, the
// signature with secret, the timeout), and reports what the buyer's server answered.
// Nothing is stored. It fails only while a test to the buyer is in flight (ErrTestInFlight).
func (w *Worker) SendWebhookTest(ctx context.Context, buyerID int64, target, secret string) (WebhookTestResult, error) {
	done, err := w.testing(persistence.Destination{BuyerID: buyerID})
	if err != nil {
		return WebhookTestResult{}, err
	}
	defer done()
	var b [12]byte
	_, _ = rand.Read(b[:])
	r := WebhookTestResult{EventID: "evt_test_" + hex.EncodeToString(b[:]), URL: target}
	// The layout of a stored event's body (PostgreSQL's jsonb text: keys by length, then bytes).
	body := []byte(`{"data": {}, "type": "` + WebhookTestEvent + `", "event_id": "` + r.EventID +
		`", "campaign_id": 0, "occurred_at": "` + time.Now().UTC().Format("2006-01-02T15:04:05.000000Z") + `"}`)
	start := time.Now()
	deadline := start.Add(w.cfg.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	status, err := w.out.post(req, resp, target, r.EventID, secret, body, deadline)
	r.DurationMS = time.Since(start).Milliseconds()
	if err != nil {
		r.Error = reason(0, err)
		return r, nil
	}
	r.Status, r.Delivered = status, status >= 200 && status < 300
	answer := resp.Body()
	r.Body = strings.ToValidUTF8(string(answer[:min(len(answer), maxTestBody)]), string(utf8.RuneError))
	return r, nil
}
