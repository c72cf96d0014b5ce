package admin

import (
	"context"
	"crypto/subtle"
	"strings"
	"time"

	"github.com/dgraph-io/ristretto/v2"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

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

// buyerAuthenticator checks a buyer's e-mail and API token (persistence AccountStore).
type buyerAuthenticator interface {
	AuthenticateBuyer(ctx context.Context, email, token, env string) (persistence.Buyer, error)
}

// gate is the one door of every /api/v1 and /insights_api route (wrap): content
// negotiation, credentials, limits, authentication, and the one error answer (fail).
type gate struct {
	buyers       buyerAuthenticator
	once         idempotencyStore // idempotent creates (idempotency.go)
	env          string
	limiter      *httpio.RateLimiter
	authFailures *httpio.AuthFailures
	log          *zap.Logger
	auth         *ristretto.Cache[string, cachedBuyer]
}

// newGate returns the gate of d's buyers.
func newGate(d Deps) *gate {
	cache, err := ristretto.NewCache(&ristretto.Config[string, cachedBuyer]{
		NumCounters: 100_000,
		MaxCost:     10_000,
		BufferItems: 64,
	})
	if err != nil {
		panic("admin: auth cache: " + err.Error()) // only on an invalid static configuration
	}
	return &gate{buyers: d.Buyers, once: d.Idempotency, env: d.Environment, limiter: d.Limiter,
		authFailures: d.AuthFailures, log: d.Log, auth: cache}
}

// handler is a route's logic: it runs for an authenticated buyer and either writes its
// answer or returns an error that wrap writes.
type handler func(ctx *fasthttp.RequestCtx, b persistence.Buyer) error

// wrap applies, in order: content negotiation (406), credentials (401), the per-address
// limit of failed authentications (429, only for credentials not already known good), the
// per-token rate limit (429) and authentication (401), then runs h and writes its error, if
// any.
func (a *gate) wrap(h handler) fasthttp.RequestHandler {
	return a.wrapFor(httpio.AcceptsJSON, "the Accept header must admit application/json", h)
}

// wrapFor is wrap with the content negotiation of accepts, refused with refusal.
func (a *gate) wrapFor(accepts func(*fasthttp.RequestCtx) bool, refusal string, h handler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		if !accepts(ctx) {
			httpio.WriteMessage(ctx, httpio.StyleMessage, fasthttp.StatusNotAcceptable, refusal)
			return
		}
		now := time.Now()
		email, token, ok := httpio.BasicAuth(ctx)
		if !ok {
			a.fail(ctx, a.authFailures.Failed(ctx, now,
				fault.Unauthorized("missing or malformed credentials: use Basic auth with email:api_token")))
			return
		}
		key := persistence.TokenHash(token)
		b, known := a.cached(email, key)
		// Credentials authenticated a moment ago pass; others cost a database look-up, which
		// a client that keeps failing no longer gets.
		if !known {
			if err := a.authFailures.Refuse(ctx, now); err != nil {
				a.fail(ctx, err)
				return
			}
		}
		if allowed, wait := a.limiter.Allow(key, now); !allowed {
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
					a.authFailures.Fail(ctx, now)
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

func (a *gate) fail(ctx *fasthttp.RequestCtx, err error) {
	httpio.WriteError(ctx, a.log, httpio.StyleMessage, err)
}

// cached returns the buyer of a token that authenticated within authTTL with the same
// e-mail, without the database.
func (a *gate) cached(email string, key [32]byte) (persistence.Buyer, bool) {
	if c, ok := a.auth.Get(string(key[:])); ok && subtle.ConstantTimeCompare([]byte(c.email), []byte(strings.ToLower(email))) == 1 {
		return c.buyer, true
	}
	return persistence.Buyer{}, false
}

// authenticate checks email and token against the database and remembers a success for
// authTTL.
func (a *gate) authenticate(ctx *fasthttp.RequestCtx, email, token string, key [32]byte) (persistence.Buyer, error) {
	email = strings.ToLower(email)
	b, err := a.buyers.AuthenticateBuyer(dbContext(ctx), email, token, a.env)
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
