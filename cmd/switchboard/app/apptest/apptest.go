// Package apptest runs a whole Switchboard server for tests: a fresh migrated database from
// pgtest, the app on a real listener at 127.0.0.1:0, buyers with real tokens, and a real
// HTTP client. Test binaries that use it call pgtest.Main from TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
//	func TestX(t *testing.T) {
//		s := apptest.Start(t, apptest.Options{})
//		b := s.NewBuyer(t)
//		r := b.Do(t, "POST", "/api/v1/campaigns", map[string]any{"name": "x", ...})
//		r.Expect(t, 201)
//	}
package apptest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/cmd/switchboard/app"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// Options adjust the server; the zero value is a staging server with the default rate
// limit whose public URL is its listener's.
type Options struct {
	Environment string  // staging (default) or live
	PublicURL   string  // default http://<listener address>
	RateLimit   float64 // per-token requests a second; 0: the default; < 0: unlimited
	RateBurst   int     // 0: the default
	// AuthFailRate and AuthFailBurst limit failed authentications per client address. Every
	// test client shares 127.0.0.1, so 0 here means off (unlike app.Config, whose 0 is
	// the default); tests of the limit set it.
	AuthFailRate  float64
	AuthFailBurst int
	DatabaseURL   string      // default: a fresh database from pgtest.URL
	Log           *zap.Logger // default: none, or development logging when APPTEST_LOG is set
	// Configure, when set, adjusts the app's Config before it starts (supply, router and
	// quality settings).
	Configure func(*app.Config)
}

// Server is a running app.
type Server struct {
	App       *app.App
	DB        *persistence.DB // the app's own pool
	URL       string          // http://127.0.0.1:<port>, where requests go
	PublicURL string          // the base of URLs the app hands out
	Env       string
	Client    *http.Client
}

// Start runs a server for tb and stops it when tb ends.
func Start(tb testing.TB, o Options) *Server {
	tb.Helper()
	if o.Environment == "" {
		o.Environment = persistence.EnvStaging
	}
	if o.DatabaseURL == "" {
		o.DatabaseURL = pgtest.URL(tb)
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
		if os.Getenv("APPTEST_LOG") != "" {
			o.Log, _ = zap.NewDevelopment()
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("apptest: listen: %v", err)
	}
	addr := ln.Addr().String()
	if o.PublicURL == "" {
		o.PublicURL = "http://" + addr
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := app.Config{Addr: addr, DatabaseURL: o.DatabaseURL, PublicURL: o.PublicURL,
		Environment: o.Environment, RateLimit: o.RateLimit, RateBurst: o.RateBurst,
		AuthFailRate: o.AuthFailRate, AuthFailBurst: o.AuthFailBurst}
	if cfg.AuthFailRate == 0 {
		cfg.AuthFailRate = -1
	}
	if o.Configure != nil {
		o.Configure(&cfg)
	}
	a, err := app.New(ctx, cfg, o.Log)
	if err != nil {
		ln.Close()
		tb.Fatalf("apptest: start app: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Serve(ln) }()
	transport := &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute}
	s := &Server{App: a, DB: a.DB, URL: "http://" + addr, PublicURL: strings.TrimRight(o.PublicURL, "/"),
		Env: o.Environment, Client: &http.Client{Transport: transport, Timeout: 30 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	tb.Cleanup(func() {
		transport.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.Shutdown(ctx); err != nil {
			tb.Errorf("apptest: shutdown: %v", err)
		}
		if err := <-done; err != nil {
			tb.Errorf("apptest: serve: %v", err)
		}
	})
	// Tests start from a ready process (what /readyz reports): panel and counters loaded,
	// the allocation's first weights in.
	for _, loaded := range []<-chan struct{}{a.Supply.Loaded(), a.Router.CountsLoaded(), a.Weighted()} {
		select {
		case <-loaded:
		case <-time.After(30 * time.Second):
			tb.Fatal("apptest: panel, counters or allocation weights not loaded after 30s")
		}
	}
	return s
}

// Buyer is a registered buyer with a plain token.
type Buyer struct {
	ID         int64
	CustomerID string
	Email      string
	Token      string
	Secret     string
	Env        string
	s          *Server
}

var buyerSeq atomic.Int64

// NewBuyer registers a buyer with a token of the server's environment.
func (s *Server) NewBuyer(tb testing.TB) *Buyer { return s.NewBuyerIn(tb, s.Env) }

// NewBuyerIn registers a buyer with a token of environment env.
func (s *Server) NewBuyerIn(tb testing.TB, env string) *Buyer {
	tb.Helper()
	email := fmt.Sprintf("buyer%d@example.test", buyerSeq.Add(1))
	b, token, err := s.DB.Accounts.CreateBuyer(context.Background(), email, "Buyer "+email, env)
	if err != nil {
		tb.Fatalf("apptest: create buyer: %v", err)
	}
	return &Buyer{ID: b.ID, CustomerID: b.CustomerID, Email: b.Email, Token: token, Secret: b.APISecret, Env: env, s: s}
}

// Response is a complete answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Decode unmarshals the body into v, failing tb when it is not JSON.
func (r Response) Decode(tb testing.TB, v any) {
	tb.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		tb.Fatalf("apptest: decode %d response %q: %v", r.Status, r.Body, err)
	}
}

// JSON returns the body decoded into a generic value.
func (r Response) JSON(tb testing.TB) any {
	tb.Helper()
	var v any
	r.Decode(tb, &v)
	return v
}

// Object returns the body decoded as a JSON object.
func (r Response) Object(tb testing.TB) map[string]any {
	tb.Helper()
	var v map[string]any
	r.Decode(tb, &v)
	return v
}

// Expect fails tb unless the status is want, showing the body.
func (r Response) Expect(tb testing.TB, want int) Response {
	tb.Helper()
	if r.Status != want {
		tb.Fatalf("apptest: status %d, want %d; body %s", r.Status, want, r.Body)
	}
	return r
}

// Message returns the "message" of an error body.
func (r Response) Message(tb testing.TB) string {
	tb.Helper()
	var e struct {
		Message *string `json:"message"`
	}
	r.Decode(tb, &e)
	if e.Message == nil {
		tb.Fatalf("apptest: no message in %d body %s", r.Status, r.Body)
	}
	return *e.Message
}

// Body turns a request body argument into bytes: nil is no body, []byte and string are sent
// as they are, anything else is encoded as JSON.
func Body(tb testing.TB, body any) []byte {
	tb.Helper()
	switch v := body.(type) {
	case nil:
		return nil
	case []byte:
		return v
	case string:
		return []byte(v)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			tb.Fatalf("apptest: encode body: %v", err)
		}
		return b
	}
}

// NewRequest builds a request to the server (path relative to its URL) without credentials.
func (s *Server) NewRequest(tb testing.TB, method, path string, body any) *http.Request {
	tb.Helper()
	var rd io.Reader
	if b := Body(tb, body); b != nil {
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		tb.Fatalf("apptest: request: %v", err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	return req
}

// Send performs req and reads the whole answer.
func (s *Server) Send(tb testing.TB, req *http.Request) Response {
	tb.Helper()
	r, err := s.Try(req)
	if err != nil {
		tb.Fatalf("apptest: %s %s: %v", req.Method, req.URL.Path, err)
	}
	return r
}

// Try performs req and reads the whole answer; usable from any goroutine.
func (s *Server) Try(req *http.Request) (Response, error) {
	resp, err := s.Client.Do(req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return Response{}, err
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// Request builds a request carrying the buyer's Basic credentials.
func (b *Buyer) Request(tb testing.TB, method, path string, body any) *http.Request {
	tb.Helper()
	req := b.s.NewRequest(tb, method, path, body)
	req.SetBasicAuth(b.Email, b.Token)
	return req
}

// Do performs an authenticated request with a JSON body (see Body) and reads the answer.
func (b *Buyer) Do(tb testing.TB, method, path string, body any) Response {
	tb.Helper()
	return b.s.Send(tb, b.Request(tb, method, path, body))
}

// Server returns the server the buyer is registered on.
func (b *Buyer) Server() *Server { return b.s }
