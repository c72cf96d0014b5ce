package payout

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/persistence"
)

// TestStatus is the status of a test postback: a partner's server must credit nothing for it.
const TestStatus = "test"

// maxTestBody is how much of the partner's answer to a test postback is handed back.
const maxTestBody = 1 << 10

// TestResult is what a partner's server answered to a test postback.
type TestResult struct {
	URL        string   `json:"url"`         // the signed GET sent (the partner's own secret signs it)
	Delivered  bool     `json:"delivered"`   // a 2xx, as the worker counts a delivery
	Status     int      `json:"status"`      // the final answer's status; 0 when none came
	Body       string   `json:"body"`        // the first KiB of the final answer's body
	Redirects  []string `json:"redirects"`   // the Location of every redirect followed or refused
	Error      string   `json:"error"`       // why no answer came, or why a redirect was refused
	DurationMS int64    `json:"duration_ms"` // from the first request to the final answer
}

// SendTest sends pub a signed test postback (status=test, reward=0, payout_usd=0.0000, a
// fresh tid starting "test-") with the worker's client (its timeouts and body limit), and
// reports what the partner's server answered. Nothing is stored. Up to maxRedirects
// redirects are followed like the worker does, but only to the configured URL's own host
// or to hosts whose addresses are all public, so a partner's redirect cannot make this
// request (whose answer is handed back) reach an internal address. It fails only when pub
// has no postback URL.
func (w *Worker) SendTest(ctx context.Context, pub persistence.Publisher, user string) (TestResult, error) {
	if pub.PostbackURL == "" {
		return TestResult{}, ErrNoPostbackURL
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	target := PostbackURL(pub, Fields{TID: "test-" + hex.EncodeToString(b[:]), Status: TestStatus, UserIdentifier: user})
	r := TestResult{URL: target, Redirects: []string{}}
	start := time.Now()
	defer func() { r.DurationMS = time.Since(start).Milliseconds() }()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	origin, _ := url.Parse(pub.PostbackURL)
	next := target
	for hop := 0; ; hop++ {
		req.Reset()
		resp.Reset()
		req.SetRequestURI(next)
		req.Header.SetMethod(fasthttp.MethodGet)
		err := w.cfg.Client.DoTimeout(req, resp, w.cfg.Timeout)
		if errors.Is(err, fasthttp.ErrBodyTooLarge) && resp.StatusCode() != 0 {
			err = nil
		}
		if err != nil {
			r.Error = errorText(err)
			return r, nil
		}
		r.Status = resp.StatusCode()
		body := resp.Body()
		if len(body) > maxTestBody {
			body = body[:maxTestBody]
		}
		r.Body = strings.ToValidUTF8(string(body), string(utf8.RuneError))
		if !fasthttp.StatusCodeIsRedirect(r.Status) {
			r.Delivered = r.Status >= 200 && r.Status < 300
			return r, nil
		}
		loc := string(resp.Header.Peek(fasthttp.HeaderLocation))
		r.Redirects = append(r.Redirects, loc)
		if hop == maxRedirects {
			r.Error = "too many redirects"
			return r, nil
		}
		u, err := url.Parse(next)
		if err == nil {
			u, err = u.Parse(loc)
		}
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			r.Error = "redirect to an invalid URL"
			return r, nil
		}
		if u.Host != origin.Host && !publicHost(ctx, u.Hostname()) {
			r.Error = "redirect to a non-public address refused"
			return r, nil
		}
		next = u.String()
	}
}

// ErrNoPostbackURL is returned by SendTest for a publisher without a postback URL.
var ErrNoPostbackURL = errors.New("payout: the publisher has no postback URL")

// publicHost reports whether every address host resolves to is a public unicast address.
func publicHost(ctx context.Context, host string) bool {
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		ips, err := net.DefaultResolver.LookupNetIP(rctx, "ip", host)
		if err != nil || len(ips) == 0 {
			return false
		}
		addrs = ips
	}
	for _, a := range addrs {
		a = a.Unmap()
		if !a.IsGlobalUnicast() || a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast() {
			return false
		}
	}
	return true
}
