package app_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/switchboard/switchboard/cmd/switchboard/app"
	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
	"github.com/switchboard/switchboard/supply"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// clientFrom is an HTTP client whose connections leave from the loopback address ip, so
// that one test can play clients at different addresses (127.0.0.0/8 is all loopback).
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
}

// call sends method path with the given headers from client c and returns the status and
// the Retry-After header.
func call(t *testing.T, c *http.Client, s *apptest.Server, path string, headers map[string]string, basic ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", s.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if len(basic) == 2 {
		req.SetBasicAuth(basic[0], basic[1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body) //nolint:errcheck
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

// Failed authentications are limited per client address across the buyer, insights and
// supply routes; good credentials, from the same address or another, keep working.
func TestFailedAuthenticationsAreLimitedPerAddress(t *testing.T) {
	const burst = 5
	s := apptest.Start(t, apptest.Options{AuthFailRate: 0.2, AuthFailBurst: burst})
	buyer := s.NewBuyer(t)
	pub, pubToken, err := s.DB.Accounts.CreatePublisher(context.Background(), persistence.NewPublisher{Name: "P", CurrencyName: "Coins",
		ExchangeRate: 100, RevenueShare: 0.5, RedirectURL: "https://partner.test/back", Environment: s.Env})
	if err != nil {
		t.Fatal(err)
	}
	_ = pub
	if err := s.App.Supply.ReloadPublishers(context.Background()); err != nil {
		t.Fatal(err)
	}
	const buyerPath, insightsPath, supplyPath = "/api/v1/campaigns", "/insights_api/projects", supply.Prefix + "/countries"

	for _, tc := range []struct {
		name string
		ip   string
		bad  func(c *http.Client, i int) (int, string)
		good func(c *http.Client) (int, string)
	}{
		{"buyer", "127.0.0.2",
			func(c *http.Client, i int) (int, string) {
				return call(t, c, s, buyerPath, nil, buyer.Email, "wrong-token-"+strconv.Itoa(i))
			},
			func(c *http.Client) (int, string) { return call(t, c, s, buyerPath, nil, buyer.Email, buyer.Token) }},
		{"insights", "127.0.0.3",
			func(c *http.Client, i int) (int, string) {
				return call(t, c, s, insightsPath, nil, buyer.Email, "wrong-token-"+strconv.Itoa(i))
			},
			func(c *http.Client) (int, string) { return call(t, c, s, insightsPath, nil, buyer.Email, buyer.Token) }},
		{"supply", "127.0.0.4",
			func(c *http.Client, i int) (int, string) {
				if i%2 == 0 {
					return call(t, c, s, supplyPath, nil) // no token at all counts too
				}
				return call(t, c, s, supplyPath, map[string]string{"X-Api-Token": "wrong-token-" + strconv.Itoa(i)})
			},
			func(c *http.Client) (int, string) {
				return call(t, c, s, supplyPath, map[string]string{"X-Api-Token": pubToken})
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attacker, other := clientFrom(tc.ip), clientFrom("127.0.0.9")
			if st, _ := tc.good(attacker); st != 200 {
				t.Fatalf("good credentials before any failure: %d", st)
			}
			for i := range burst {
				if st, _ := tc.bad(attacker, i); st != 401 {
					t.Fatalf("failure %d: %d, want 401", i+1, st)
				}
			}
			for i := burst; i < burst+20; i++ {
				st, retry := tc.bad(attacker, i)
				if st != 429 {
					t.Fatalf("failure %d past the burst: %d, want 429", i+1, st)
				}
				if secs, err := strconv.Atoi(retry); err != nil || secs < 1 || secs > 10 {
					t.Fatalf("Retry-After %q, want 1..10 seconds", retry)
				}
			}
			if st, _ := tc.good(attacker); st != 200 {
				t.Errorf("good credentials from the limited address: %d, want 200", st)
			}
			if st, _ := tc.good(other); st != 200 {
				t.Errorf("good credentials from another address: %d, want 200", st)
			}
			if st, _ := tc.bad(other, 0); st != 401 {
				t.Errorf("a first failure from another address: %d, want 401", st)
			}
		})
	}
}

// The supply API limits each publisher's requests per process.
func TestPublisherRateLimit(t *testing.T) {
	const burst = 5
	s := apptest.Start(t, apptest.Options{Configure: func(c *app.Config) {
		c.Partners.PublisherRateLimit, c.Partners.PublisherRateBurst = 0.5, burst
	}})
	ctx := context.Background()
	tokens := make([]string, 2)
	for i := range tokens {
		_, tok, err := s.DB.Accounts.CreatePublisher(ctx, persistence.NewPublisher{Name: "P" + strconv.Itoa(i), CurrencyName: "Coins",
			ExchangeRate: 100, RevenueShare: 0.5, RedirectURL: "https://partner.test/back", Environment: s.Env})
		if err != nil {
			t.Fatal(err)
		}
		tokens[i] = tok
	}
	if err := s.App.Supply.ReloadPublishers(ctx); err != nil {
		t.Fatal(err)
	}
	path := supply.Prefix + "/countries"
	for i := range burst {
		if st, _ := call(t, s.Client, s, path, map[string]string{"X-Api-Token": tokens[0]}); st != 200 {
			t.Fatalf("request %d within the burst: %d", i+1, st)
		}
	}
	// A reload of the publishers must not hand out a fresh burst.
	if err := s.App.Supply.ReloadPublishers(ctx); err != nil {
		t.Fatal(err)
	}
	st, retry := call(t, s.Client, s, path, map[string]string{"X-Api-Token": tokens[0]})
	if st != 429 || retry == "" {
		t.Fatalf("request past the burst: %d Retry-After %q, want 429 with Retry-After", st, retry)
	}
	if st, _ := call(t, s.Client, s, path, map[string]string{"X-Api-Token": tokens[1]}); st != 200 {
		t.Errorf("another publisher: %d, want 200", st)
	}
}

// The app's server is the hardened one: a malformed request carrying credentials is answered
// 400 at once and logged without them; a Content-Length beyond the body is given up within
// the header timeout plus the body's time, not after 30 s.
func TestMalformedRequestsThroughTheApp(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	s := apptest.Start(t, apptest.Options{Log: zap.New(core), Configure: func(c *app.Config) {
		c.HTTP.HeaderTimeout = time.Second
	}})
	const token = "tok_SECRET_in_a_bad_request"
	for _, tc := range []struct {
		name, raw, status string
		within            time.Duration
	}{
		{"content-length list", "POST /supply_api/v4/players/impanel HTTP/1.1\r\nHost: a\r\nX-Api-Token: " + token +
			"\r\nContent-Length: 2, 2\r\n\r\nab", "400", 500 * time.Millisecond},
		{"NUL in a header", "GET /api/v1/campaigns HTTP/1.1\r\nHost: a\r\nAuthorization: Basic " + token + "\r\nX: \x00\r\n\r\n", "400", 500 * time.Millisecond},
		{"bare LF", "GET /api/v1/campaigns HTTP/1.1\nHost: a\nAuthorization: Basic " + token + "\n\n", "400", 500 * time.Millisecond},
		{"content-length beyond the body", "POST /api/v1/campaigns HTTP/1.1\r\nHost: a\r\nAuthorization: Basic " + token +
			"\r\nContent-Length: 500\r\n\r\n{}", "408", 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			start := time.Now()
			io.WriteString(c, tc.raw)                           //nolint:errcheck
			c.SetReadDeadline(time.Now().Add(10 * time.Second)) //nolint:errcheck
			got, _ := io.ReadAll(c)
			if took := time.Since(start); took > tc.within {
				t.Errorf("closed after %v, want within %v", took, tc.within)
			}
			if !strings.HasPrefix(string(got), "HTTP/1.1 "+tc.status+" ") {
				t.Errorf("answered %q, want %s", got, tc.status)
			}
		})
	}
	if logs.FilterMessage("malformed request").Len() == 0 {
		t.Error("no malformed request was logged")
	}
	for _, e := range logs.All() {
		line := e.Message
		for k, v := range e.ContextMap() {
			line += fmt.Sprintf(" %s=%v", k, v)
		}
		if strings.Contains(line, "SECRET") {
			t.Errorf("log line carries the token: %s", line)
		}
	}
}
