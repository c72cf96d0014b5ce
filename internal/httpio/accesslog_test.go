package httpio

import (
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// accessServer serves, on a real listener, 500 on /fail and 200 "ok" elsewhere, with the
// access log sampled at sample; it returns the address and the observed log.
func accessServer(t *testing.T, sample float64) (string, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	s := NewServer(func(ctx *fasthttp.RequestCtx) {
		if string(ctx.Path()) == "/fail" {
			ctx.SetStatusCode(500)
		}
		ctx.SetBodyString("ok")
	}, ServerConfig{AccessLogSample: sample}, zap.New(core))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveUntilCleanup(t, s, ln)
	return ln.Addr().String(), logs
}

// getWithID sends GET url with X-Request-Id sent (unless "") and returns the answer's id.
func getWithID(t *testing.T, url, sent string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if sent != "" {
		req.Header.Set(RequestIDHeader, sent)
	}
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, r.Body) //nolint:errcheck
	r.Body.Close()
	return r.Header.Get(RequestIDHeader)
}

var generatedID = regexp.MustCompile(`^[0-9a-f]{12}-[0-9a-f]{1,16}$`)

// TestRequestID: every response carries X-Request-Id, the client's when it is a sane
// token of at most 64 bytes, else a new one different for each request.
func TestRequestID(t *testing.T) {
	t.Parallel()
	addr, _ := accessServer(t, 0)
	long := strings.Repeat("a", 64)
	cases := []struct {
		sent string
		echo bool
	}{
		{"", false},
		{"abc-123._XYZ", true},
		{long, true},
		{long + "b", false},
		{"has space", false},
		{"<script>", false},
		{"a/b", false},
		{"ü", false},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		got := getWithID(t, "http://"+addr+"/x?token=1", c.sent)
		switch {
		case c.echo && got != c.sent:
			t.Errorf("sent %q: answered %q, want it echoed", c.sent, got)
		case !c.echo && !generatedID.MatchString(got):
			t.Errorf("sent %q: answered %q, want a generated id", c.sent, got)
		case !c.echo && seen[got]:
			t.Errorf("generated id %q twice", got)
		}
		seen[got] = true
	}
	// A request refused before any handler (a bare LF) gets an id too.
	resp, _ := exchange(t, addr, "GET / HTTP/1.1\nHost: x\n\n")
	if !regexp.MustCompile(`(?i)\r\nX-Request-Id: [0-9a-f]{12}-[0-9a-f]+\r\n`).MatchString(resp) {
		t.Errorf("malformed request answered without a request id:\n%s", resp)
	}
}

// TestAccessLog: at sample 1 every request gets one line with method, path without its
// query string, status, duration, bytes and the id the client saw; at sample 0 only 5xx.
func TestAccessLog(t *testing.T) {
	t.Parallel()
	const secret = "sig_SECRET_9d1e"
	cases := []struct {
		sample float64
		path   string
		logged bool
	}{
		{1, "/supply_api/v4/campaigns", true},
		{1, "/fail", true},
		{0, "/supply_api/v4/campaigns", false},
		{0, "/fail", true},
	}
	for _, c := range cases {
		addr, logs := accessServer(t, c.sample)
		id := getWithID(t, "http://"+addr+c.path+"?signature="+secret+"&token="+secret, "client-id-1")
		lines := logs.FilterMessage("request").All()
		if !c.logged {
			if len(lines) != 0 {
				t.Errorf("sample %v %s: %d lines, want none", c.sample, c.path, len(lines))
			}
			continue
		}
		if len(lines) != 1 {
			t.Fatalf("sample %v %s: %d access lines, want 1: %v", c.sample, c.path, len(lines), logs.All())
		}
		f := lines[0].ContextMap()
		wantStatus := int64(200)
		if c.path == "/fail" {
			wantStatus = 500
		}
		if f["method"] != "GET" || f["path"] != c.path || f["status"] != wantStatus || f["bytes"] != int64(2) ||
			f["request_id"] != id || id != "client-id-1" {
			t.Errorf("sample %v %s: line %v (answered id %q)", c.sample, c.path, f, id)
		}
		if d, ok := f["duration"].(time.Duration); !ok || d <= 0 {
			t.Errorf("duration %v", f["duration"])
		}
		for _, e := range logs.All() {
			for k, v := range e.ContextMap() {
				if s, ok := v.(string); ok && (strings.Contains(s, secret) || strings.Contains(s, "?")) {
					t.Errorf("log field %s carries the query string: %q", k, s)
				}
			}
		}
	}
}

// BenchmarkAccessLogged is the cost the access log adds to a request not sampled: an id and
// a header, no allocation.
func BenchmarkAccessLogged(b *testing.B) {
	s := NewServer(func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("ok") }, ServerConfig{}, zap.NewNop())
	var ctx fasthttp.RequestCtx
	for _, sent := range []string{"", "client-id-1"} {
		b.Run("sent="+sent, func(b *testing.B) {
			ctx.Request.Reset()
			ctx.Request.SetRequestURI("/supply_api/v4/campaigns?x=1")
			if sent != "" {
				ctx.Request.Header.Set(RequestIDHeader, sent)
			}
			s.fs.Handler(&ctx)
			b.ReportAllocs()
			for b.Loop() {
				ctx.Response.Reset()
				s.fs.Handler(&ctx)
			}
		})
	}
}
