package payout

import (
	"errors"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/egress"
)

// maxPostbackBody is how much of a partner's answer is read: its status is what counts.
const maxPostbackBody = 64 << 10

// maxRedirects is how many redirects a postback follows.
const maxRedirects = 3

// Failures of a postback's redirects, recorded as last_error and shown to the partner.
var (
	errTooManyRedirects = errors.New("too many redirects")
	errBadRedirect      = errors.New("redirect to an invalid URL")
	errRedirectRefused  = errors.New("redirect to a non-public address refused")
)

// errWebhookRefused is the failure of a webhook whose host resolves to no public address.
var errWebhookRefused = errors.New("webhook host resolves to a non-public address")

// outbound holds the worker's HTTP clients. Every destination a partner or a buyer chooses
// is reached through public, whose dialer applies the egress policy at connect time: buyer
// webhooks, and a postback's redirects to any other host and port than its URL's. A
// partner's postback URL itself, entered by an operator (switchboard publisher), is reached
// through origin, as are redirects back to its own host and port.
type outbound struct {
	origin, public *fasthttp.Client
	timeout        time.Duration
}

func newOutbound(cfg WorkerConfig) outbound {
	client := func(name string, dial fasthttp.DialFuncWithTimeout) *fasthttp.Client {
		// fasthttp rather than net/http: at thousands of postbacks a second, net/http's
		// goroutines and allocations per request cost more CPU than the callbacks that
		// caused them.
		return &fasthttp.Client{
			Name:                name,
			ReadTimeout:         cfg.Timeout,
			WriteTimeout:        cfg.Timeout,
			MaxConnWaitTimeout:  cfg.Timeout,
			MaxConnsPerHost:     cfg.PerDestination,
			MaxResponseBodySize: maxPostbackBody,
			DialTimeout:         dial,
		}
	}
	policy := egress.Policy{AllowPrivate: cfg.AllowPrivate}
	return outbound{
		origin:  client("switchboard-postback/1", fasthttp.DialTimeout),
		public:  client("switchboard-postback/1", policy.Dial),
		timeout: cfg.Timeout,
	}
}

// fetched is what a postback GET came to.
type fetched struct {
	status    int      // the final answer's status; 0 when none came
	body      []byte   // the start of the final answer's body (as much as get was asked to keep)
	redirects []string // the Location of every redirect followed or refused
	err       error    // why no final answer came
}

// get sends a GET of target, a partner's signed postback URL, and follows up to maxRedirects
// redirects (outbound), all of it by deadline. keep is how much of the final answer's body
// to hand back. An answer larger than maxPostbackBody still counts by its status.
func (o outbound) get(target string, deadline time.Time, keep int) fetched {
	var f fetched
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	origin := hostPort(target)
	next := target
	for hop := 0; ; hop++ {
		req.Reset()
		resp.Reset()
		req.SetRequestURI(next)
		req.Header.SetMethod(fasthttp.MethodGet)
		c := o.public
		if hostPort(next) == origin {
			c = o.origin
		}
		err := c.DoDeadline(req, resp, deadline)
		if errors.Is(err, fasthttp.ErrBodyTooLarge) && resp.StatusCode() != 0 {
			err = nil
		}
		if err != nil {
			if hop > 0 && errors.Is(err, egress.ErrNotPublic) {
				err = errRedirectRefused
			}
			f.err = err
			return f
		}
		f.status = resp.StatusCode()
		if b := resp.Body(); keep > 0 {
			f.body = append(f.body[:0], b[:min(len(b), keep)]...)
		}
		if !fasthttp.StatusCodeIsRedirect(f.status) {
			return f
		}
		loc := string(resp.Header.Peek(fasthttp.HeaderLocation))
		f.redirects = append(f.redirects, loc)
		if hop == maxRedirects {
			f.err = errTooManyRedirects
			return f
		}
		u, err := url.Parse(next)
		if err == nil {
			u, err = u.Parse(loc)
		}
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			f.err = errBadRedirect
			return f
		}
		next = u.String()
	}
}

// hostPort is the host and port a URL's request goes to, the port spelled out ("" when
// raw is not a URL).
func hostPort(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// reason is the failure of an attempt as last_error, logs and test sends give it: status
// answers as "status N", the worker's own failures by their text, network failures in the
// egress package's words (never an address).
func reason(status int, err error) string {
	switch {
	case err == nil:
		return "status " + strconv.Itoa(status)
	case errors.Is(err, errTooManyRedirects), errors.Is(err, errBadRedirect), errors.Is(err, errRedirectRefused),
		errors.Is(err, errWebhookRefused):
		return err.Error()
	}
	return egress.Reason(err)
}

// permanent reports whether an attempt's failure would fail every retry alike: the egress
// policy refused the destination. Such a row is dead-lettered at once.
func permanent(err error) bool {
	return errors.Is(err, egress.ErrNotPublic) || errors.Is(err, errRedirectRefused) || errors.Is(err, errWebhookRefused)
}
