package admin

import (
	"context"
	"crypto/sha256"
	"errors"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
)

// idempotencyStore runs a create once per idempotency key (persistence DB).
type idempotencyStore interface {
	CreateOnce(ctx context.Context, buyerID int64, route, key string, sum []byte,
		create func(ctx context.Context) (persistence.IdempotentAnswer, error)) (persistence.IdempotencyState, persistence.IdempotentAnswer, error)
}

// IdempotencyHeader names the request header that makes a create safe to retry: the same
// key and body within persistence.IdempotencyTTL get the first 2xx answer again.
const IdempotencyHeader = "Idempotency-Key"

// maxIdempotencyKey is the longest key accepted.
const maxIdempotencyKey = 255

// idempotent wraps a create handler: without the header it runs h unchanged; with one it
// replays the stored answer of the same key and body, refuses the key with another body
// (422), and otherwise runs h in one transaction with the key and h's 2xx answer
// (persistence.CreateOnce), so that a key maps to at most one created resource whatever
// crashes. A request with a key whose first request still runs waits for it and replays its
// answer. An error or a non-2xx answer of h keeps no key.
func (a *gate) idempotent(h handler) handler {
	return func(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
		raw := ctx.Request.Header.Peek(IdempotencyHeader)
		if raw == nil {
			return h(ctx, b)
		}
		if err := validIdempotencyKey(raw); err != nil {
			return err
		}
		key, route := string(raw), string(ctx.Path())
		sum := sha256.Sum256(ctx.PostBody())
		outer := dbContext(ctx)
		state, ans, err := a.once.CreateOnce(outer, b.ID, route, key, sum[:], func(tx context.Context) (persistence.IdempotentAnswer, error) {
			// h's reads and writes join the transaction through its database context.
			ctx.SetUserValue(dbContextKey, tx)
			defer ctx.SetUserValue(dbContextKey, outer)
			if err := h(ctx, b); err != nil {
				return persistence.IdempotentAnswer{}, err
			}
			status := ctx.Response.StatusCode()
			if status < 200 || status > 299 {
				return persistence.IdempotentAnswer{}, errNotStored
			}
			return persistence.IdempotentAnswer{Status: status, Body: append([]byte(nil), ctx.Response.Body()...)}, nil
		})
		switch {
		case errors.Is(err, errNotStored):
			return nil // h's own answer, already written
		case err != nil:
			return err
		}
		switch state {
		case persistence.IdempotencyReplay:
			ctx.SetStatusCode(ans.Status)
			ctx.SetContentType(httpio.ContentTypeJSON)
			ctx.Response.SetBody(ans.Body)
		case persistence.IdempotencyMismatch:
			return fault.Invalid(IdempotencyHeader, "was used with a different body")
		case persistence.IdempotencyInProgress:
			return fault.Conflict("request with this Idempotency-Key is in progress")
		}
		return nil
	}
}

// errNotStored rolls back an idempotent create whose handler answered without a 2xx.
var errNotStored = errors.New("admin: create answered without 2xx")

// validIdempotencyKey accepts 1 to 255 printable ASCII characters.
func validIdempotencyKey(k []byte) error {
	if len(k) == 0 || len(k) > maxIdempotencyKey {
		return fault.Invalid(IdempotencyHeader, "must be 1 to %d printable ASCII characters", maxIdempotencyKey)
	}
	for _, c := range k {
		if c < 0x20 || c > 0x7e {
			return fault.Invalid(IdempotencyHeader, "must be 1 to %d printable ASCII characters", maxIdempotencyKey)
		}
	}
	return nil
}
