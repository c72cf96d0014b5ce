package httpio

import (
	"context"
	"time"
)

// DBTimeout bounds the database and back-end work of one request when the handler names no
// limit of its own: a request whose database work outlives it has lost its client anyway,
// and must not hold a pool connection or a row lock for longer.
const DBTimeout = 10 * time.Second

// DBContext returns the context for the database (pgx, persistence) and other back-end work
// of one request, cancelled after limit (DBTimeout when limit <= 0); the handler defers the
// CancelFunc.
//
// The *fasthttp.RequestCtx is a context.Context, but it must never reach pgx or anything that
// may pass it on: pgx watches ctx.Done() from a goroutine of its own, which can outlive the
// handler, while fasthttp's Server.Shutdown closes and then clears the server's done channel
// that RequestCtx.Done returns, a data race (go test -race saw it at a test server's
// shutdown). RequestCtx.Value is no better: it reads the request's user values, which fasthttp
// resets when it recycles the RequestCtx, while pool goroutines (pgxpool's connection
// constructor, the resolver) may still ask their context for values. So the context is
// detached from the request entirely, neither its cancellation nor its values reach it
// (stronger than context.WithoutCancel(ctx)), and limit is what bounds the work instead.
func DBContext(limit time.Duration) (context.Context, context.CancelFunc) {
	if limit <= 0 {
		limit = DBTimeout
	}
	return context.WithTimeout(context.Background(), limit)
}
