package router_test

import (
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
)

// TestCallbackBadTextOverHTTP: callbacks whose tid is NUL or not UTF-8, signed or not, are
// refused with 403 or 404 and log no error (they were 500s with a stack trace, with no
// credentials needed: 200 requests wrote 266 KB of log).
func TestCallbackBadTextOverHTTP(t *testing.T) {
	w := newWorld(t, "")
	core, logs := observer.New(zapcore.WarnLevel)
	s := apptest.Start(t, apptest.Options{DatabaseURL: w.dbURL, RateLimit: -1, Log: zap.New(core)})
	w.publicURL = s.PublicURL
	base := "/router/customers/" + w.buyer.CustomerID + "/cps/complete"
	signed := func(q string) string {
		return base + "?" + q + "&tr_sech=" + hmacSHA1(w.buyer.APISecret, w.publicURL+base+"?"+q)
	}
	for _, c := range []struct {
		uri    string
		status int
	}{
		{base + "?tid=%00", 403},
		{base + "?tid=%ff", 403},
		{base + "?tid=a%00b&tr_sech=bad", 403},
		{base + "?tid=%ff&tr_sech=" + strings.Repeat("0", 40), 403},
		{signed("tid=%00"), 404},
		{signed("tid=%ff"), 404},
		{signed("tid=%C3%28"), 404},
		{"/router/customers/c%00/cps/complete?tid=1&tr_sech=" + strings.Repeat("0", 40), 404},
		{"/router/customers/%ff/cps/complete?tid=1&tr_sech=" + strings.Repeat("0", 40), 404},
	} {
		for i := 0; i < 3; i++ {
			resp, body := w.get(w.noFollow, s.URL+c.uri)
			if resp.StatusCode != c.status {
				t.Errorf("GET %s: %d %s, want %d", c.uri, resp.StatusCode, body, c.status)
				break
			}
		}
	}
	if n := logs.Len(); n > 0 {
		t.Errorf("%d warnings or errors logged, first: %s %v", n, logs.All()[0].Message, logs.All()[0].ContextMap())
	}
}
