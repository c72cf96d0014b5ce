package httpio

import (
	crand "crypto/rand"
	"encoding/hex"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
)

// RequestIDHeader names a request in both directions: every response carries one, the
// client's own when it sent a sane one (validRequestID), else one the server made up. The
// access log line of the request (when it is written) carries the same id, so that a client
// quoting it lets an operator find the request.
const RequestIDHeader = "X-Request-Id"

var requestIDKey = []byte(RequestIDHeader)

// maxRequestID is the longest client-sent request id echoed.
const maxRequestID = 64

// validRequestID reports whether a client's id is a token worth echoing and logging: 1 to
// 64 bytes of [A-Za-z0-9._-], so that it can carry neither header nor log injection.
func validRequestID(id []byte) bool {
	if len(id) == 0 || len(id) > maxRequestID {
		return false
	}
	for _, c := range id {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// requestIDs makes request ids without allocating: a random prefix drawn once per process
// (ids of different processes differ) and a counter, "<12 hex>-<hex>".
type requestIDs struct {
	prefix [12]byte
	next   atomic.Uint64
}

func newRequestIDs() *requestIDs {
	g := &requestIDs{}
	var b [6]byte
	if _, err := crand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	hex.Encode(g.prefix[:], b[:])
	return g
}

// appendNew appends a new id to dst.
func (g *requestIDs) appendNew(dst []byte) []byte {
	const digits = "0123456789abcdef"
	dst = append(dst, g.prefix[:]...)
	dst = append(dst, '-')
	n := g.next.Add(1)
	var tmp [16]byte
	i := len(tmp)
	for {
		i--
		tmp[i] = digits[n&15]
		n >>= 4
		if n == 0 {
			break
		}
	}
	return append(dst, tmp[i:]...)
}

// setRequestID sets the response's X-Request-Id (the client's, when sane, else a new one)
// and returns it in buf.
func (s *Server) setRequestID(ctx *fasthttp.RequestCtx, buf []byte) []byte {
	id := buf[:0]
	if sent := ctx.Request.Header.PeekBytes(requestIDKey); validRequestID(sent) {
		id = append(id, sent...)
	} else {
		id = s.ids.appendNew(id)
	}
	ctx.Response.Header.SetCanonical(requestIDKey, id)
	return id
}

// accessLogged runs h, gives the response its request id and writes the access line when
// the request is sampled (ServerConfig.AccessLogSample) or answered 5xx. The line has the
// path without its query string: query strings carry signatures and tokens.
func (s *Server) accessLogged(h fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		start := time.Now()
		h(ctx)
		var buf [maxRequestID]byte
		id := s.setRequestID(ctx, buf[:])
		s.logAccess(ctx, id, time.Since(start))
	}
}

// logAccess writes the access line of a request answered in d, if it is to be written. A
// request refused because a dependency is unavailable (MarkUnavailable) is counted in the
// server's incident log instead.
func (s *Server) logAccess(ctx *fasthttp.RequestCtx, id []byte, d time.Duration) {
	status := ctx.Response.StatusCode()
	if status < 500 && !s.sampled() {
		return
	}
	if status == fasthttp.StatusServiceUnavailable {
		if err := unavailable(ctx); err != nil {
			s.unavailable.occurred(func() []zap.Field {
				return []zap.Field{zap.String("method", printable(ctx.Method(), 16)),
					zap.String("path", printable(ctx.Path(), 256)), zap.String("request_id", string(id)), zap.Error(err)}
			})
			return
		}
	}
	size := len(ctx.Response.Body())
	if ctx.Response.IsBodyStream() {
		size = ctx.Response.Header.ContentLength()
	}
	s.log.Info("request", zap.String("method", printable(ctx.Method(), 16)),
		zap.String("path", printable(ctx.Path(), 256)), zap.Int("status", status),
		zap.Duration("duration", d), zap.Int("bytes", size), zap.String("request_id", string(id)))
}

// sampled draws whether a request below 500 gets an access line.
func (s *Server) sampled() bool {
	r := s.cfg.AccessLogSample
	return r >= 1 || (r > 0 && rand.Float64() < r)
}
