package admin

import (
	"context"
	"crypto/subtle"
	"math"
	"strconv"
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

// wrap applies, in order: content negotiation (406), credentials (401), the per-token rate
// limit (429) and authentication (401), then runs h and writes its error, if any.
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
		email, token, ok := httpio.BasicAuth(ctx)
		if !ok {
			a.fail(ctx, fault.Unauthorized("missing or malformed credentials: use Basic auth with email:api_token"))
			return
		}
		key := persistence.TokenHash(token)
		if allowed, wait := a.d.Limiter.Allow(key, time.Now()); !allowed {
			secs := int(math.Ceil(wait.Seconds()))
			if secs < 1 {
				secs = 1
			}
			ctx.Response.Header.Set("Retry-After", strconv.Itoa(secs))
			a.fail(ctx, fault.RateLimited())
			return
		}
		// The database gets a context of its own: a RequestCtx is recycled after the handler
		// returns and its Done channel is swapped by Server.Shutdown, so it must not reach pgx.
		dbc, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		ctx.SetUserValue(dbContextKey, dbc)
		b, err := a.authenticate(ctx, email, token, key)
		if err != nil {
			a.fail(ctx, err)
			return
		}
		if err := h(ctx, b); err != nil {
			a.fail(ctx, err)
		}
	}
}

func (a *API) fail(ctx *fasthttp.RequestCtx, err error) {
	httpio.WriteError(ctx, a.d.Log, httpio.StyleMessage, err)
}

// authenticate returns the buyer holding token, from the cache when it authenticated within
// authTTL with the same e-mail.
func (a *API) authenticate(ctx *fasthttp.RequestCtx, email, token string, key [32]byte) (persistence.Buyer, error) {
	email = strings.ToLower(email)
	k := string(key[:])
	if c, ok := a.auth.Get(k); ok && subtle.ConstantTimeCompare([]byte(c.email), []byte(email)) == 1 {
		return c.buyer, nil
	}
	b, err := a.d.DB.AuthenticateBuyer(dbContext(ctx), email, token, a.d.Environment)
	if err != nil {
		return persistence.Buyer{}, err
	}
	a.auth.SetWithTTL(k, cachedBuyer{buyer: b, email: email}, 1, authTTL)
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
