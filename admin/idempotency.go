package admin

import (
	"crypto/sha256"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
)

// IdempotencyHeader names the request header that makes a create safe to retry: the same
// key and body within persistence.IdempotencyTTL get the first 2xx answer again.
const IdempotencyHeader = "Idempotency-Key"

// maxIdempotencyKey is the longest key accepted.
const maxIdempotencyKey = 255

// idempotent wraps a create handler: without the header it runs h unchanged; with one it
// replays the stored answer of the same key and body, refuses the key with another body
// (422) or while its first request still runs (409), and otherwise runs h and stores a 2xx
// answer for replay.
func (a *API) idempotent(h handler) handler {
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
		db := a.d.DB
		state, ans, err := db.ClaimIdempotencyKey(dbContext(ctx), b.ID, route, key, sum[:])
		if err != nil {
			return err
		}
		switch state {
		case persistence.IdempotencyReplay:
			ctx.SetStatusCode(ans.Status)
			ctx.SetContentType(httpio.ContentTypeJSON)
			ctx.Response.SetBody(ans.Body)
			return nil
		case persistence.IdempotencyMismatch:
			return fault.Invalid(IdempotencyHeader, "was used with a different body")
		case persistence.IdempotencyInProgress:
			return fault.Conflict("request with this Idempotency-Key is in progress")
		}
		err = h(ctx, b)
		status := ctx.Response.StatusCode()
		if err != nil || status < 200 || status > 299 {
			if rerr := db.ReleaseIdempotencyKey(dbContext(ctx), b.ID, route, key); rerr != nil {
				a.d.Log.Warn("release idempotency key", zap.Error(rerr))
			}
			return err
		}
		body := append([]byte(nil), ctx.Response.Body()...)
		if serr := db.StoreIdempotentAnswer(dbContext(ctx), b.ID, route, key, persistence.IdempotentAnswer{Status: status, Body: body}); serr != nil {
			// The create succeeded; answer it. A retry sees the claim and gets 409.
			a.d.Log.Warn("store idempotent answer", zap.Error(serr))
		}
		return nil
	}
}

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
