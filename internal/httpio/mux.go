package httpio

import (
	"strings"
	"time"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
)

// Mux routes requests, records per-route metrics, accepts paths with one trailing slash,
// and answers unknown routes (404) and wrong methods (405 with Allow) in JSON.
type Mux struct {
	r       *router.Router
	metrics *Metrics
	log     *zap.Logger
	other   *routeStats
}

// NewMux returns an empty multiplexer that records into metrics.
func NewMux(metrics *Metrics, log *zap.Logger) *Mux {
	m := &Mux{r: router.New(), metrics: metrics, log: log}
	m.other = metrics.route("ANY", "unmatched")
	m.r.RedirectTrailingSlash = false
	m.r.RedirectFixedPath = false
	m.r.HandleOPTIONS = false
	m.r.HandleMethodNotAllowed = true
	m.r.NotFound = func(ctx *fasthttp.RequestCtx) {
		WriteMessage(ctx, styleFor(ctx), fasthttp.StatusNotFound, "not found")
		m.other.observe(fasthttp.StatusNotFound, 0)
	}
	m.r.MethodNotAllowed = func(ctx *fasthttp.RequestCtx) {
		allow := string(ctx.Response.Header.Peek("Allow"))
		allow = strings.ReplaceAll(strings.ReplaceAll(allow, ", OPTIONS", ""), "OPTIONS, ", "")
		ctx.Response.Header.Set("Allow", allow)
		WriteMessage(ctx, styleFor(ctx), fasthttp.StatusMethodNotAllowed, "method not allowed")
		m.other.observe(fasthttp.StatusMethodNotAllowed, 0)
	}
	m.r.PanicHandler = func(ctx *fasthttp.RequestCtx, v any) {
		log.Error("handler panicked", zap.ByteString("path", ctx.Path()), zap.Any("panic", v), zap.Stack("stack"))
		WriteMessage(ctx, styleFor(ctx), fasthttp.StatusInternalServerError, "internal error")
	}
	return m
}

// styleFor picks the error body shape by interface: supply routes answer {"error"}.
func styleFor(ctx *fasthttp.RequestCtx) Style {
	if strings.HasPrefix(string(ctx.Path()), "/supply_api/") {
		return StyleError
	}
	return StyleMessage
}

// Handle registers h for method and pattern (fasthttp/router syntax, e.g. /campaigns/{id}).
func (m *Mux) Handle(method, pattern string, h fasthttp.RequestHandler) {
	stats := m.metrics.route(method, pattern)
	m.r.Handle(method, pattern, func(ctx *fasthttp.RequestCtx) {
		start := time.Now()
		h(ctx)
		stats.observe(ctx.Response.StatusCode(), time.Since(start))
	})
}

// Handler is the server's entry point.
func (m *Mux) Handler(ctx *fasthttp.RequestCtx) {
	p := ctx.Request.URI().PathOriginal()
	if n := len(p); n > 1 && p[n-1] == '/' {
		ctx.Request.URI().SetPathBytes(p[:n-1])
	}
	m.r.Handler(ctx)
}
