package bench

import (
	"bytes"
	"net"
	"time"

	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/valyala/fasthttp"
)

// FloorBody is a fixed JSON body of n bytes shaped like an offers answer.
func FloorBody(n int) []byte {
	head := []byte(`{"surveys":[],"player_eligibility":{"is_eligible":true,"reason":0,"comment":"`)
	tail := []byte(`"}}`)
	pad := max(0, n-len(head)-len(tail))
	return append(append(head, bytes.Repeat([]byte{'x'}, pad)...), tail...)
}

// ServeFloor answers every request on ln with body as JSON: the floor, what the HTTP stack
// alone costs on this machine with a body of that size. It returns when ln is closed.
func ServeFloor(ln net.Listener, body []byte) error {
	s := &fasthttp.Server{
		Handler: func(ctx *fasthttp.RequestCtx) {
			ctx.SetContentType("application/json; charset=utf-8")
			ctx.SetBody(body)
		},
		Name:                 "floor",
		ReadTimeout:          30 * time.Second,
		WriteTimeout:         30 * time.Second,
		NoDefaultContentType: true,
		WriteBufferSize:      httpio.WriteBufferSize, // as serve's: the floor must not write more often
	}
	return s.Serve(ln)
}
