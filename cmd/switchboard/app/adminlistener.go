package app

import (
	"errors"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/internal/httpio"
)

// adminWriteTimeout is the least write timeout of the admin listener: a CPU profile or an
// execution trace answers after its ?seconds= (30 s by default for a profile).
const adminWriteTimeout = 2 * time.Minute

// adminMaxConns bounds the admin listener's connections (scrapes, probes, profiles), on top
// of the main listener's share of the file descriptors.
const adminMaxConns = 128

// adminHTTP is the main listener's server configuration with room for profiles and a few
// connections of the operators' tools, from any one address.
func adminHTTP(c httpio.ServerConfig) httpio.ServerConfig {
	c.WriteTimeout = max(c.WriteTimeout, adminWriteTimeout)
	c.MaxConns, c.MaxConnsPerIP = adminMaxConns, -1
	return c
}

// adminHandler serves the operators' listener: the metrics, the health and readiness checks,
// the process snapshot a joining peer starts from (snapshots.go) and Go's profiler (net/http/pprof's handlers on a mux of their own, not on
// http.DefaultServeMux). It sits behind Config.AdminAddr, an address clients do not reach.
// /debug/pprof/cmdline is left out (404): the command line may carry --database-url and
// its password.
func (a *App) adminHandler() fasthttp.RequestHandler {
	pp := http.NewServeMux()
	pp.HandleFunc("/debug/pprof/", pprof.Index) // the index and every named profile (heap, goroutine, …)
	pp.HandleFunc("/debug/pprof/profile", pprof.Profile)
	pp.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	pp.HandleFunc("/debug/pprof/trace", pprof.Trace)
	profiler := fasthttpadaptor.NewFastHTTPHandler(pp)
	return func(ctx *fasthttp.RequestCtx) {
		path := string(ctx.Path())
		switch {
		case path == "/metrics":
			a.Metrics.Handler(ctx)
		case path == "/readyz":
			a.readyz(ctx)
		case path == "/healthz":
			a.healthz(ctx)
		case path == "/admin/snapshot" && ctx.IsGet():
			a.serveSnapshot(ctx)
		case strings.HasPrefix(path, "/debug/pprof/"):
			profiler(ctx)
		default:
			ctx.Error("not found", fasthttp.StatusNotFound)
		}
	}
}

// ServeAdmin answers the operators' requests on ln until Shutdown; it is an error without
// Config.AdminAddr.
func (a *App) ServeAdmin(ln net.Listener) error {
	if a.admin == nil {
		return errors.New("app: ServeAdmin without Config.AdminAddr")
	}
	a.log.Info("serving admin", zap.String("addr", ln.Addr().String()))
	return a.admin.Serve(ln)
}
