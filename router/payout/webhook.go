package payout

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/egress"
	"github.com/switchboard/switchboard/persistence"
)

// Headers of a buyer webhook POST (docs/buyer-integration.md, "Webhooks").
const (
	// WebhookTimestampHeader carries the delivery attempt's Unix time in seconds.
	WebhookTimestampHeader = "X-Switchboard-Timestamp"
	// WebhookSignatureHeader carries SignWebhook of the timestamp and the body.
	WebhookSignatureHeader = "X-Switchboard-Signature"
	// WebhookEventHeader repeats the body's event_id, for receivers that dedupe before parsing.
	WebhookEventHeader = "X-Switchboard-Event-Id"
)

// SignWebhook is the signature of a webhook body sent at Unix time ts: lower-case hex
// HMAC-SHA256, keyed with the buyer's api_secret, of the decimal timestamp, ".", and the
// exact body bytes. Signing the time lets a receiver refuse a replayed old delivery; signing
// the bytes (not a re-encoding) lets it verify before parsing.
func SignWebhook(secret string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(strconv.AppendInt(nil, ts, 10))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// VerifyWebhook is what a receiver runs: it reports whether signature (the
// WebhookSignatureHeader) is SignWebhook of timestamp (the WebhookTimestampHeader) and body,
// compared in constant time, and whether the timestamp lies within tolerance of now.
func VerifyWebhook(secret, timestamp, signature string, body []byte, now time.Time, tolerance time.Duration) bool {
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return false
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return false
	}
	got, err := hex.DecodeString(signature)
	if err != nil || len(got) != sha256.Size {
		return false
	}
	want, _ := hex.DecodeString(SignWebhook(secret, ts, body))
	return hmac.Equal(got, want)
}

// post sends one webhook: a POST of c.Body, application/json, signed now, through the
// client that applies the egress policy (a buyer chooses the URL); redirects are not followed
// (the body would have to be sent again to a place the buyer did not register).
func (w *Worker) post(c persistence.ClaimedPostback, deadline time.Time) (int, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	return w.out.post(req, resp, c.URL, c.TID, c.BuyerSecret, c.Body, deadline)
}

// post sends body to target as a webhook signed with secret, event id eventID, by deadline,
// and returns the answer's status; resp holds the answer.
func (o outbound) post(req *fasthttp.Request, resp *fasthttp.Response, target, eventID, secret string, body []byte, deadline time.Time) (int, error) {
	req.SetRequestURI(target)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	ts := time.Now().Unix()
	req.Header.Set(WebhookTimestampHeader, strconv.FormatInt(ts, 10))
	req.Header.Set(WebhookSignatureHeader, SignWebhook(secret, ts, body))
	req.Header.Set(WebhookEventHeader, eventID)
	req.SetBody(body)
	err := o.public.DoDeadline(req, resp, deadline)
	if errors.Is(err, fasthttp.ErrBodyTooLarge) && resp.StatusCode() != 0 {
		err = nil
	}
	if errors.Is(err, egress.ErrNotPublic) {
		err = errWebhookRefused
	}
	if err != nil {
		return 0, err
	}
	return resp.StatusCode(), nil
}
