package httpio

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestDBContextOutlivesShutdown serves a request on a real listener whose handler takes a
// DBContext and, like pgx, watches its Done channel from a goroutine of its own that outlives
// the handler. The server shuts down while the request is in flight: the RequestCtx's Done
// fires, the DBContext's does not, and the watcher keeps reading its context after Shutdown
// has cleared the server's done channel, which -race would report were it the RequestCtx.
func TestDBContextOutlivesShutdown(t *testing.T) {
	inFlight, release := make(chan struct{}), make(chan struct{})
	type result struct {
		requestDone bool  // the RequestCtx's Done fired during Shutdown
		dbErr       error // the DBContext's Err at that moment
	}
	results := make(chan result, 1)
	watched := make(chan error, 1)
	stopWatch := make(chan struct{})
	s := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		dbctx, cancel := DBContext(time.Minute)
		go func() { // pgx's context watcher, say
			select {
			case <-dbctx.Done():
				watched <- dbctx.Err()
			case <-stopWatch:
				watched <- dbctx.Err()
			}
			cancel()
		}()
		close(inFlight)
		var r result
		select {
		case <-ctx.Done():
			r.requestDone = true
		case <-time.After(5 * time.Second):
		}
		r.dbErr = dbctx.Err()
		results <- r
		<-release
		ctx.SetBodyString("ok")
	}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	got := make(chan error, 1)
	go func() {
		_, _, err := fasthttp.Get(nil, "http://"+ln.Addr().String()+"/")
		got <- err
	}()
	<-inFlight
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown() }()
	r := <-results
	if !r.requestDone {
		t.Error("the RequestCtx's Done did not fire at Shutdown; the test proves nothing")
	}
	if r.dbErr != nil {
		t.Errorf("the DBContext was cancelled with the request: %v", r.dbErr)
	}
	close(release)
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
	<-served
	<-got
	// Shutdown has returned (and cleared the server's done channel); the watcher still runs.
	close(stopWatch)
	if err := <-watched; err != nil {
		t.Errorf("the DBContext ended with the request: %v", err)
	}
}

// TestDBContextLimit: the context ends at its limit, DBTimeout when none is named.
func TestDBContextLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit time.Duration
		want  time.Duration // the deadline's distance from now
	}{
		{"named", 50 * time.Millisecond, 50 * time.Millisecond},
		{"default", 0, DBTimeout},
		{"negative", -time.Second, DBTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			ctx, cancel := DBContext(tc.limit)
			defer cancel()
			d, ok := ctx.Deadline()
			if !ok {
				t.Fatal("no deadline")
			}
			if off := d.Sub(start) - tc.want; off < 0 || off > time.Second {
				t.Fatalf("deadline %v after the call, want %v", d.Sub(start), tc.want)
			}
			if ctx.Err() != nil {
				t.Fatalf("cancelled at once: %v", ctx.Err())
			}
			if tc.want > time.Second {
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("not cancelled after its limit")
			}
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				t.Fatalf("Err = %v, want DeadlineExceeded", ctx.Err())
			}
			if waited := time.Since(start); waited < tc.want {
				t.Fatalf("cancelled after %v, before its limit %v", waited, tc.want)
			}
		})
	}
}
