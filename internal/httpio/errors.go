// Package httpio is the HTTP plumbing every interface shares: the one mapping from the fault
// vocabulary to statuses and bodies, JSON decoding and encoding, content negotiation, the
// route multiplexer with its metrics, rate limits (per token, per publisher, failed
// authentications per client address) and the server itself, which bounds read times and
// keeps request contents out of the log (docs/operations.md).
package httpio

import (
	"strconv"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/internal/fault"
)

// Style selects the error body shape: the buyer API says {"message"}, the supply API
// {"error"}.
type Style uint8

// Error body styles.
const (
	StyleMessage Style = iota
	StyleError
)

// Status is the single place where a fault kind becomes an HTTP status.
func Status(k fault.Kind) int {
	switch k {
	case fault.KindBadRequest:
		return fasthttp.StatusBadRequest
	case fault.KindUnauthorized:
		return fasthttp.StatusUnauthorized
	case fault.KindForbidden:
		return fasthttp.StatusForbidden
	case fault.KindNotFound:
		return fasthttp.StatusNotFound
	case fault.KindConflict:
		return fasthttp.StatusConflict
	case fault.KindGone:
		return fasthttp.StatusGone
	case fault.KindInvalid:
		return fasthttp.StatusUnprocessableEntity
	case fault.KindTooLarge:
		return fasthttp.StatusRequestEntityTooLarge
	case fault.KindRateLimited:
		return fasthttp.StatusTooManyRequests
	case fault.KindUnavailable:
		return fasthttp.StatusServiceUnavailable
	case fault.KindNotImplemented:
		return fasthttp.StatusNotImplemented
	default:
		return fasthttp.StatusInternalServerError
	}
}

// WriteError answers err in the given style. Internal errors are logged here, once, with
// their cause; unavailable ones are marked for the server's incident log (MarkUnavailable).
// Clients only ever see the fault's safe message.
func WriteError(ctx *fasthttp.RequestCtx, log *zap.Logger, style Style, err error) {
	f := fault.As(err)
	if f == nil {
		f = fault.Internal(err).(*fault.Error)
	}
	status := Status(f.Kind)
	switch f.Kind {
	case fault.KindInternal:
		log.Error("request failed", zap.ByteString("method", ctx.Method()),
			zap.ByteString("path", ctx.Path()), zap.Error(err))
	case fault.KindUnavailable:
		MarkUnavailable(ctx, err)
		ctx.Response.Header.Set("Retry-After", "1")
	case fault.KindUnauthorized:
		if style == StyleMessage {
			ctx.Response.Header.Set("WWW-Authenticate", `Basic realm="switchboard"`)
		}
	case fault.KindRateLimited:
		if ctx.Response.Header.Peek("Retry-After") == nil {
			ctx.Response.Header.Set("Retry-After", "1")
		}
	}
	WriteMessage(ctx, style, status, f.Message)
}

// WriteMessage writes a JSON error body with the given status.
func WriteMessage(ctx *fasthttp.RequestCtx, style Style, status int, msg string) {
	ctx.SetStatusCode(status)
	ctx.SetContentType(ContentTypeJSON)
	key := `{"message":`
	if style == StyleError {
		key = `{"error":`
	}
	b := make([]byte, 0, len(key)+len(msg)+8)
	b = append(b, key...)
	b = strconv.AppendQuote(b, msg)
	b = append(b, '}')
	ctx.Response.SetBodyRaw(b)
}

// unavailableKey is the request user value that MarkUnavailable sets.
type unavailableKey struct{}

// MarkUnavailable records that the request of ctx is answered 503 because a dependency (the
// database) is unavailable, with err the cause. The server logs such refusals as one incident
// (its start with the first cause, a count per interval, its end) instead of a line and an
// access line each (docs/operations.md, "A database outage in the log"); every handler that
// answers an unavailable fault calls this rather than logging it.
func MarkUnavailable(ctx *fasthttp.RequestCtx, err error) {
	ctx.SetUserValue(unavailableKey{}, err)
}

// unavailable returns the cause MarkUnavailable recorded on ctx, if any.
func unavailable(ctx *fasthttp.RequestCtx) error {
	err, _ := ctx.UserValue(unavailableKey{}).(error)
	return err
}
