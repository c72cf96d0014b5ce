// Package requestctx holds the cases TestRequestCtxAsContext expects the guard to find: each
// line marked "want" hands a *fasthttp.RequestCtx over as a context.Context.
package requestctx

import (
	"context"
	"time"

	"github.com/valyala/fasthttp"
)

type job struct {
	ctx  context.Context
	name string
}

func query(ctx context.Context, args ...any) error { return ctx.Err() }

func many(name string, ctxs ...context.Context) int { return len(ctxs) }

func takesRequest(ctx *fasthttp.RequestCtx) {}

func handler(ctx *fasthttp.RequestCtx) {
	_ = query(ctx, 1)                                                   // want
	_ = many("x", context.Background(), ctx)                            // want
	var c context.Context = ctx                                         // want
	c = ctx                                                             // want
	_ = job{ctx: ctx, name: "a"}                                        // want
	_ = job{ctx, "b"}                                                   // want
	_ = func() context.Context { return ctx }                           // want
	go func() { _ = query(ctx) }()                                      // want
	_, _ = context.WithTimeout(context.WithoutCancel(ctx), time.Second) // want
	// Allowed: the RequestCtx as itself, a context of its own, any other argument.
	takesRequest(ctx)
	d, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = query(d, ctx)
	_ = c
}
