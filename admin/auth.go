package admin

import (
	"context"
	"crypto/subtle"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
)

// authTTL bounds how long a successful authentication is reused without the database.
const authTTL = 30 * time.Second

// cachedBuyer is an authentication remembered under the SHA-256 of its token (never the
// token itself) together with the e-mail it was presented with.
type cachedBuyer struct {
	buyer persistence.Buyer
	email string
}

// handler is a route's logic: it runs for an authenticated buyer and either writes its
// answer or returns an error that wrap writes.
type handler func(ctx *fasthttp.RequestCtx, b persistence.Buyer) error

// wrap applies, in order: content negotiation (406), credentials (401), the per-address
// limit of failed authentications (429, only for credentials not already known good), the
// per-token rate limit (429) and authentication (401), then runs h and writes its error, if
// any.
func (a *API) wrap(h handler) fasthttp.RequestHandler {
	return a.wrapFor(httpio.AcceptsJSON, "the Accept header must admit application/json", h)
}

// wrapFor is wrap with the content negotiation of accepts, refused with refusal.
func (a *API) wrapFor(accepts func(*fasthttp.RequestCtx) bool, refusal string, h handler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		if !accepts(ctx) {
			httpio.WriteMessage(ctx, httpio.StyleMessage, fasthttp.StatusNotAcceptable, refusal)
			return
		}
		now := time.Now()
		email, token, ok := httpio.BasicAuth(ctx)
		if !ok {
			a.fail(ctx, a.d.AuthFailures.Failed(ctx, now,
				fault.Unauthorized("missing or malformed credentials: use Basic auth with email:api_token")))
			return
		}
		key := persistence.TokenHash(token)
		b, known := a.cached(email, key)
		// Credentials authenticated a moment ago pass; others cost a database look-up, which
		// a client that keeps failing no longer gets.
		if !known {
			if err := a.d.AuthFailures.Refuse(ctx, now); err != nil {
				a.fail(ctx, err)
				return
			}
		}
		if allowed, wait := a.d.Limiter.Allow(key, now); !allowed {
			httpio.SetRetryAfter(ctx, wait)
			a.fail(ctx, fault.RateLimited())
			return
		}
		// The database gets a context of its own: a RequestCtx is recycled after the handler
		// returns and its Done channel is swapped by Server.Shutdown, so it must not reach pgx.
		dbc, cancel := httpio.DBContext(requestTimeout)
		defer cancel()
		ctx.SetUserValue(dbContextKey, dbc)
		if !known {
			var err error
			if b, err = a.authenticate(ctx, email, token, key); err != nil {
				if f := fault.As(err); f != nil && f.Kind == fault.KindUnauthorized {
					a.d.AuthFailures.Fail(ctx, now)
				}
				a.fail(ctx, err)
				return
			}
		}
		if err := h(ctx, b); err != nil {
			a.fail(ctx, err)
		}
	}
}

// writeRoute wraps the handler of a route that writes (Route.Writes): a buyer authenticated
// with a read token gets 403 naming the scope, and h does not run.
func writeRoute(r Route, h handler) handler {
	refusal := "this token's scope is read: it cannot " + r.Method + " " + r.Pattern + " (use a write token)"
	return func(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
		if b.Scope != persistence.ScopeWrite {
			return fault.Forbidden(refusal)
		}
		return h(ctx, b)
	}
}

func (a *API) fail(ctx *fasthttp.RequestCtx, err error) {
	httpio.WriteError(ctx, a.d.Log, httpio.StyleMessage, err)
}

// cached returns the buyer of a token that authenticated within authTTL with the same
// e-mail, without the database.
func (a *API) cached(email string, key [32]byte) (persistence.Buyer, bool) {
	if c, ok := a.auth.Get(string(key[:])); ok && subtle.ConstantTimeCompare([]byte(c.email), []byte(strings.ToLower(email))) == 1 {
		return c.buyer, true
	}
	return persistence.Buyer{}, false
}

// authenticate checks email and token against the database and remembers a success for
// authTTL.
func (a *API) authenticate(ctx *fasthttp.RequestCtx, email, token string, key [32]byte) (persistence.Buyer, error) {
	email = strings.ToLower(email)
	b, err := a.d.DB.AuthenticateBuyer(dbContext(ctx), email, token, a.d.Environment)
	if err != nil {
		return persistence.Buyer{}, err
	}
	a.auth.SetWithTTL(string(key[:]), cachedBuyer{buyer: b, email: email}, 1, authTTL)
	return b, nil
}

// requestTimeout bounds the database work of one buyer request.
const requestTimeout = 30 * time.Second

// dbContextKey holds a request's database context among its user values.
const dbContextKey = "admin.dbctx"

// dbContext returns the database context wrap made for this request.
func dbContext(ctx *fasthttp.RequestCtx) context.Context {
	if c, ok := ctx.UserValue(dbContextKey).(context.Context); ok {
		return c
	}
	return context.Background()
}
