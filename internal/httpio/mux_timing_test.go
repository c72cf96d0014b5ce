package httpio

import (
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
)

// BenchmarkMux measures what the mux adds to every request: the route lookup, the clock
// read around the handler, and the request counter and latency histogram it records into
// (the handler itself only sets the status). "parallel" is the same on every CPU at once,
// where the counters' cache lines move between cores; "observe" is the recording alone.
func BenchmarkMux(b *testing.B) {
	m := NewMetrics()
	mux := NewMux(m, zap.NewNop())
	mux.Handle(fasthttp.MethodGet, "/supply_api/v4/campaigns", func(ctx *fasthttp.RequestCtx) { ctx.SetStatusCode(200) })
	request := func(ctx *fasthttp.RequestCtx) {
		ctx.Request.SetRequestURI("/supply_api/v4/campaigns")
		ctx.Request.Header.SetMethod(fasthttp.MethodGet)
	}
	b.Run("serial", func(b *testing.B) {
		var ctx fasthttp.RequestCtx
		request(&ctx)
		b.ReportAllocs()
		for b.Loop() {
			mux.Handler(&ctx)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var ctx fasthttp.RequestCtx
			request(&ctx)
			for pb.Next() {
				mux.Handler(&ctx)
			}
		})
	})
	b.Run("observe", func(b *testing.B) {
		s := m.route(fasthttp.MethodGet, "/supply_api/v4/campaigns")
		b.ReportAllocs()
		for b.Loop() {
			s.observe(200, 1500*time.Nanosecond)
		}
	})
}
