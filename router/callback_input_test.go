package router

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/internal/outcome"
	"github.com/switchboard/switchboard/persistence"
)

const (
	offlinePublic   = "http://h"
	offlineCustomer = "c1"
	offlineSecret   = "s3cret"
)

// offlineRouter is a Router whose database cannot be reached: any lookup it makes fails
// with a 5xx. Only the buyer of offlineCustomer is known, from its cache. A callback it
// refuses with a 4xx was therefore refused without database work.
func offlineRouter(t testing.TB) *Router {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	db := persistence.NewDB(pool, nil)
	r := &Router{sessionIO: sessionIO{sessions: db.Sessions, userOf: db.Participants}, log: zap.NewNop(), cfg: Config{PublicURL: offlinePublic, SessionMaxAge: time.Hour}}
	r.lookups.init(Deps{Accounts: db.Accounts, Campaigns: db.Campaigns, Participants: db.Participants})
	r.buyers.ttl = time.Hour
	if _, err := r.buyers.get(offlineCustomer, func() (persistence.Buyer, error) {
		return persistence.Buyer{ID: 1, CustomerID: offlineCustomer, APISecret: offlineSecret}, nil
	}); err != nil {
		t.Fatal(err)
	}
	return r
}

// serveCallback runs the real callback handler on a request for uri (path and raw query),
// with the path parameters the mux would give it.
func serveCallback(r *Router, customerID, outcome, uri string) *fasthttp.RequestCtx {
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod("GET")
	ctx.Request.SetRequestURI(uri)
	ctx.SetUserValue("customer_id", customerID)
	ctx.SetUserValue("outcome", outcome)
	r.callback(&ctx)
	return &ctx
}

func signCallback(uri string) string {
	return uri + "&tr_sech=" + hmacSHA1(offlineSecret, offlinePublic+uri)
}

// TestCallbackBadInputWithoutDatabase: a tid with NUL or invalid UTF-8, a customer id the
// same, or a tr_sech of the wrong shape is refused (403 / 404) before any database work
// (it was a 500 with a stack trace: the session was looked up with a tid PostgreSQL
// refuses, before tr_sech was checked).
func TestCallbackBadInputWithoutDatabase(t *testing.T) {
	r := offlineRouter(t)
	base := "/router/customers/" + offlineCustomer + "/cps/complete"
	zeros := strings.Repeat("0", 40)
	for _, c := range []struct {
		name, customer, uri string
		status              int
	}{
		{"unsigned nul tid", offlineCustomer, base + "?tid=%00", 403},
		{"unsigned invalid utf-8 tid", offlineCustomer, base + "?tid=%ff", 403},
		{"unsigned valid tid", offlineCustomer, base + "?tid=abc", 403},
		{"short tr_sech", offlineCustomer, base + "?tid=abc&tr_sech=bad", 403},
		{"upper-case tr_sech", offlineCustomer, base + "?tid=abc&tr_sech=" + strings.Repeat("A", 40), 403},
		{"non-hex tr_sech", offlineCustomer, base + "?tid=abc&tr_sech=" + strings.Repeat("g", 40), 403},
		{"tr_sech not last", offlineCustomer, base + "?tid=abc&tr_sech=" + zeros + "&x=1", 403},
		{"nul tid, wrong hash", offlineCustomer, base + "?tid=%00&tr_sech=" + zeros, 403},
		{"invalid tid, wrong hash", offlineCustomer, base + "?tid=%ff&tr_sech=" + zeros, 403},
		{"nul tid, signed", offlineCustomer, signCallback(base + "?tid=%00"), 404},
		{"invalid tid, signed", offlineCustomer, signCallback(base + "?tid=%ff%fe"), 404},
		{"nul in tid, signed", offlineCustomer, signCallback(base + "?tid=ab%00cd"), 404},
		{"nul customer id", "c\x00", "/router/customers/c%00/cps/complete?tid=a&tr_sech=" + zeros, 404},
		{"invalid customer id", "c\xff", "/router/customers/c%ff/cps/complete?tid=a&tr_sech=" + zeros, 404},
		{"unknown outcome", offlineCustomer, "/router/customers/c1/cps/x?tid=%00", 404},
	} {
		t.Run(c.name, func(t *testing.T) {
			outcome := "complete"
			if strings.Contains(c.uri, "/cps/x") {
				outcome = "x"
			}
			ctx := serveCallback(r, c.customer, outcome, c.uri)
			if got := ctx.Response.StatusCode(); got != c.status {
				t.Errorf("%s: %d %s, want %d", c.uri, got, ctx.Response.Body(), c.status)
			}
		})
	}
	// The control: a well-formed signed callback does reach the (unreachable) database.
	ctx := serveCallback(r, offlineCustomer, "complete", signCallback(base+"?tid=abc"))
	if got := ctx.Response.StatusCode(); got < 500 {
		t.Errorf("a signed callback answered %d without the database: the offline router proves nothing", got)
	}
}

// FuzzCallbackHandler drives the real callback handler with any path parameters and query:
// it never panics, and answers a 5xx only when the request needed the database (unreachable
// here): a tr_sech of the right shape and a tid of valid text. Seeds hold NUL, %ff and
// huge or odd values.
func FuzzCallbackHandler(f *testing.F) {
	for _, s := range []struct {
		customer, outcome, query string
		sign                     bool
	}{
		{"c1", "complete", "tid=%00", false},
		{"c1", "complete", "tid=%ff", true},
		{"c1", "over_quota", "tid=%00&tr_sech=" + strings.Repeat("0", 40), false},
		{"c\x00", "complete", "tid=1", true},
		{"c1", "complete", "tid=99999999999999999999999&x=%C3%28", true},
		{"c1", "quality_term", "tid=a&tid=%00", true},
		{"c1", "complete", "", true},
		{"\xff", "disqualified", "tr_sech=", false},
	} {
		f.Add(s.customer, s.outcome, s.query, s.sign)
	}
	r := offlineRouter(f)
	f.Fuzz(func(t *testing.T, customer, result, query string, sign bool) {
		if httpio.ValidText(customer) {
			customer = offlineCustomer // any other valid customer would be looked up
		}
		uri := "/router/customers/c/cps/o?" + query
		if sign {
			uri = signCallback(uri)
		}
		ctx := serveCallback(r, customer, result, uri)
		status := ctx.Response.StatusCode()
		if status < 500 {
			return
		}
		tid := string(ctx.QueryArgs().Peek("tid"))
		needsDB := outcome.Valid(result) && sechShaped(string(ctx.Request.Header.RequestURI())) &&
			httpio.ValidText(tid) && tid != ""
		if !needsDB {
			t.Fatalf("customer %q outcome %q %q: %d %s without needing the database", customer, result, uri, status, ctx.Response.Body())
		}
	})
}
