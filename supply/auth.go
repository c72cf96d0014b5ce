package supply

import (
	"crypto/sha256"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/supply/partners"
)

var (
	errNoToken     = fault.Unauthorized("missing X-Api-Token header")
	errBadToken    = fault.Unauthorized("invalid api token")
	errRateLimited = fault.RateLimited()
)

// authenticate returns the publisher of the request's X-Api-Token, within the publisher's
// rate limit. A token not in memory costs a reload at most once a second; a client address
// that keeps presenting such tokens is refused 429 before that (httpio.AuthFailures). A
// known token never meets the failure limit, so a partner sharing an address with a
// guesser is not slowed.
func (a *API) authenticate(ctx *fasthttp.RequestCtx) (*partners.Publisher, error) {
	now := time.Now()
	tok := ctx.Request.Header.Peek("X-Api-Token")
	if len(tok) == 0 {
		return nil, a.authFailures.Failed(ctx, now, errNoToken)
	}
	h := sha256.Sum256(tok)
	p := a.partners.Known(h)
	if p == nil {
		if err := a.authFailures.Refuse(ctx, now); err != nil {
			return nil, err
		}
		if p = a.partners.Lookup(h); p == nil {
			return nil, a.authFailures.Failed(ctx, now, errBadToken)
		}
	}
	if ok, wait := p.Limit.Allow(now); !ok {
		httpio.SetRetryAfter(ctx, wait)
		return nil, errRateLimited
	}
	return p, nil
}
