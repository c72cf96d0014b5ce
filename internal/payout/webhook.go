package payout

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

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

// post sends one webhook: a POST of c.Body, application/json, signed now; redirects are not
// followed (the body would have to be sent again to a place the buyer did not register).
func (w *Worker) post(c persistence.ClaimedPostback) (int, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(c.URL)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	ts := time.Now().Unix()
	req.Header.Set(WebhookTimestampHeader, strconv.FormatInt(ts, 10))
	req.Header.Set(WebhookSignatureHeader, SignWebhook(c.BuyerSecret, ts, c.Body))
	req.Header.Set(WebhookEventHeader, c.TID)
	req.SetBody(c.Body)
	err := w.cfg.WebhookClient.Do(req, resp)
	if errors.Is(err, fasthttp.ErrBodyTooLarge) && resp.StatusCode() != 0 {
		err = nil
	}
	if err != nil {
		return 0, err
	}
	return resp.StatusCode(), nil
}

// errNotPublic is the failure of a webhook whose host resolves to an address it may not
// reach (recorded as its last_error; the delivery is retried, then dead-lettered).
var errNotPublic = errors.New("webhook host resolves to a non-public address")

// publicDial dials addr only when every address its host resolves to is public: not
// loopback, private, link-local, unspecified or multicast. Checking every address, and
// dialing the checked address itself, leaves no room for a second resolution to answer
// differently.
func publicDial(timeout time.Duration) func(addr string) (net.Conn, error) {
	return func(addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
		if err != nil {
			return nil, err
		}
		if len(ips) == 0 {
			return nil, errNotPublic
		}
		for _, ip := range ips {
			if !publicIP(ip.IP) {
				return nil, errNotPublic
			}
		}
		return fasthttp.DialTimeout(net.JoinHostPort(ips[0].IP.String(), port), timeout)
	}
}

// publicIP reports whether ip is a unicast address of the public internet.
func publicIP(ip net.IP) bool {
	return !(ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() || cgnat.Contains(ip))
}

// cgnat is the shared address space of carrier-grade NAT (RFC 6598), private in effect.
var cgnat = &net.IPNet{IP: net.IPv4(100, 64, 0, 0), Mask: net.CIDRMask(10, 32)}
