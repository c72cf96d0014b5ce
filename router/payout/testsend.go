package payout

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

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
// fresh tid starting "test-") the way the worker sends a postback (its clients, timeout,
// redirects and egress policy: outbound.get), and reports what the partner's server
// answered. Nothing is stored. It fails only when pub has no postback URL, or a test to pub
// is in flight (ErrTestInFlight).
func (w *Worker) SendTest(ctx context.Context, pub persistence.Publisher, user string) (TestResult, error) {
	if pub.PostbackURL == "" {
		return TestResult{}, ErrNoPostbackURL
	}
	done, err := w.testing(persistence.Destination{PublisherID: pub.ID})
	if err != nil {
		return TestResult{}, err
	}
	defer done()
	var b [8]byte
	_, _ = rand.Read(b[:])
	target := PostbackURL(pub, Fields{TID: "test-" + hex.EncodeToString(b[:]), Status: TestStatus, UserIdentifier: user})
	start := time.Now()
	deadline := start.Add(w.cfg.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	f := w.out.get(target, deadline, maxTestBody)
	r := TestResult{URL: target, Status: f.status, Redirects: f.redirects, DurationMS: time.Since(start).Milliseconds(),
		Body: strings.ToValidUTF8(string(f.body), string(utf8.RuneError))}
	if r.Redirects == nil {
		r.Redirects = []string{}
	}
	if f.err != nil {
		r.Error = reason(0, f.err)
	} else {
		r.Delivered = r.Status >= 200 && r.Status < 300
	}
	return r, nil
}

// ErrNoPostbackURL is returned by SendTest for a publisher without a postback URL.
var ErrNoPostbackURL = errors.New("payout: the publisher has no postback URL")

// ErrTestInFlight is returned by SendTest and SendWebhookTest while the same partner or buyer
// has a test send in flight: one at a time each, so that tests cannot be turned into a flood.
var ErrTestInFlight = errors.New("payout: a test send to this destination is in flight")

// testing marks a test send to d in flight; done unmarks it. It fails with ErrTestInFlight
// when one is already.
func (w *Worker) testing(d persistence.Destination) (done func(), err error) {
	w.testsMu.Lock()
	defer w.testsMu.Unlock()
	if w.tests[d] {
		return nil, ErrTestInFlight
	}
	w.tests[d] = true
	return func() {
		w.testsMu.Lock()
		delete(w.tests, d)
		w.testsMu.Unlock()
	}, nil
}
