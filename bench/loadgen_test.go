package bench

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// slowServer answers every request after delay, one request at a time: it serves at most
// 1/delay requests per second.
func slowServer(t *testing.T, delay time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	s := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		mu.Lock()
		time.Sleep(delay)
		mu.Unlock()
		ctx.SetBodyString(`{}`)
	}}
	go s.Serve(ln) //nolint:errcheck
	t.Cleanup(func() { _ = s.Shutdown() })
	return ln.Addr().String()
}

func getScenario(addr string) *Scenario {
	return &Scenario{
		Name: "get",
		Ops:  []string{"get"},
		Prepare: func(w *Worker) int {
			w.Req.SetRequestURI("/x")
			w.Req.Header.SetHost(addr)
			return 0
		},
		Check: func(w *Worker, op int) (int, bool) { return op, w.Resp.StatusCode() == 200 },
	}
}

// TestOpenLoopCountsFromIntendedTime: a server that takes 10 ms per request, one at a time,
// serves 100 requests/s. Offered 200/s for 1 s, the open loop must report latencies that
// grow with the queue (the last requests wait about half a second), although every single
// request takes only 10 ms once sent. A closed loop on the same server sees ~10 ms.
func TestOpenLoopCountsFromIntendedTime(t *testing.T) {
	addr := slowServer(t, 10*time.Millisecond)
	c := NewClient(addr, 64)
	open := Drive(Load{Client: c, Workers: 64, Duration: time.Second, Rate: 200, Seed: 1}, getScenario(addr))
	if open.Mode != "open" || open.Requests < 190 || open.Requests > 201 {
		t.Fatalf("open loop: mode %s, %d requests, want ~200", open.Mode, open.Requests)
	}
	if open.Errors != 0 {
		t.Fatalf("open loop: %d errors", open.Errors)
	}
	p50, p99 := time.Duration(open.Hist.Quantile(0.5)), time.Duration(open.Hist.Quantile(0.99))
	if p99 < 400*time.Millisecond || p50 < 150*time.Millisecond {
		t.Errorf("open loop p50 %v, p99 %v: the queue behind the slow server is hidden (coordinated omission)", p50, p99)
	}
	if open.Throughput > 130 {
		t.Errorf("open loop achieved %.0f req/s from a 100 req/s server", open.Throughput)
	}

	// Closed loop, one connection: every latency is the service time.
	closed := Drive(Load{Client: NewClient(addr, 1), Workers: 1, Duration: 500 * time.Millisecond, Seed: 1}, getScenario(addr))
	if closed.Mode != "closed" || closed.Requests < 20 {
		t.Fatalf("closed loop: %s, %d requests", closed.Mode, closed.Requests)
	}
	// The median is the service time; the tail is compared with the open loop's, so a busy
	// machine's scheduling hiccups (tens of ms) do not fail the test, a hidden queue does.
	cp50, cp99 := time.Duration(closed.Hist.Quantile(0.5)), time.Duration(closed.Hist.Quantile(0.99))
	if cp50 > 40*time.Millisecond || cp99 > p99/2 {
		t.Errorf("closed loop p50 %v, p99 %v; want about 10 ms, far below the open loop's p99 %v", cp50, cp99, p99)
	}
}

// TestOpenLoopKeepsSchedule: against a fast server the open loop sends at the offered rate
// and no faster.
func TestOpenLoopKeepsSchedule(t *testing.T) {
	addr := slowServer(t, 0)
	r := Drive(Load{Client: NewClient(addr, 16), Workers: 16, Duration: 500 * time.Millisecond, Warmup: 100 * time.Millisecond,
		Rate: 1000, Seed: 1}, getScenario(addr))
	if r.Requests < 490 || r.Requests > 501 {
		t.Errorf("%d requests in 0.5 s at 1000/s, want 500", r.Requests)
	}
	if r.Errors != 0 || r.Status[200] != r.Requests {
		t.Errorf("errors %d, statuses %v", r.Errors, r.Status)
	}
}

// TestOpenLoopGivesUp: requests a stalled server never lets out are counted as unsent with
// the time they waited, not dropped.
func TestOpenLoopGivesUp(t *testing.T) {
	if testing.Short() {
		t.Skip("takes ~6 s")
	}
	addr := slowServer(t, 400*time.Millisecond)
	r := Drive(Load{Client: NewClient(addr, 2), Workers: 2, Duration: 200 * time.Millisecond, Rate: 100, Seed: 1}, getScenario(addr))
	if r.Unsent == 0 || r.Requests != 20 {
		t.Fatalf("unsent %d of %d requests, want some of 20", r.Unsent, r.Requests)
	}
	if r.Hist.Max() < int64(4*time.Second) {
		t.Errorf("max latency %v, want the ~5 s the unsent requests waited", time.Duration(r.Hist.Max()))
	}
}

// TestExhaustedStopsAndTraces: a scenario with a fixed number of requests stops when it
// runs out, in both loops: every request is sent once, the throughput is over the time
// they took (not the whole window), and Trace sees each measured request.
func TestExhaustedStopsAndTraces(t *testing.T) {
	addr := slowServer(t, 0)
	for _, rate := range []float64{0, 500} {
		var left atomic.Int64
		left.Store(50)
		s := getScenario(addr)
		prepare := s.Prepare
		s.Prepare = func(w *Worker) int {
			if left.Add(-1) < 0 {
				return Exhausted
			}
			return prepare(w)
		}
		var traced atomic.Int64
		start := time.Now()
		r := Drive(Load{Client: NewClient(addr, 4), Workers: 4, Duration: 5 * time.Second, Rate: rate, Seed: 1,
			Trace: func(w *Worker, at time.Time, lat time.Duration, ok bool) {
				if ok && !at.Before(start) && lat >= 0 && w.ID < 4 {
					traced.Add(1)
				}
			}}, s)
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("rate %v: Drive took %v for 50 requests: the workers did not stop", rate, took)
		}
		if r.Requests != 50 || r.Errors != 0 || traced.Load() != 50 {
			t.Errorf("rate %v: %d requests, %d errors, %d traced; want 50, 0, 50", rate, r.Requests, r.Errors, traced.Load())
		}
		if r.Span <= 0 || r.Span > 2*time.Second || r.Throughput < 25 {
			t.Errorf("rate %v: span %v, throughput %.0f/s: want the time the 50 requests took", rate, r.Span, r.Throughput)
		}
	}
}

// TestSecondsPlaceAStall: a server that stops answering from 1.3 s to 1.5 s into an
// open-loop window has its slow requests counted in the window's second 1, and every
// request of the window in one of its seconds.
func TestSecondsPlaceAStall(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var stallEnd atomic.Int64 // unix ns; requests before it wait for it
	s := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		if d := time.Until(time.Unix(0, stallEnd.Load())); d > 0 {
			time.Sleep(d)
		}
		ctx.SetBodyString(`{}`)
	}}
	go s.Serve(ln) //nolint:errcheck
	t.Cleanup(func() { _ = s.Shutdown() })
	addr := ln.Addr().String()
	start := time.Now()
	stallEnd.Store(start.Add(-time.Hour).UnixNano())
	// A warm-up of half a second takes the connections' dialing out of the window: under
	// -race beside other packages' tests it made a quarter of the first second's requests
	// slower than SlowLatency, more than the stall's.
	const warmup = 500 * time.Millisecond
	timer := time.AfterFunc(warmup+1300*time.Millisecond, func() { stallEnd.Store(start.Add(warmup + 1500*time.Millisecond).UnixNano()) })
	defer timer.Stop()
	r := Drive(Load{Client: NewClient(addr, 64), Workers: 64, Duration: 3 * time.Second, Warmup: warmup, Rate: 200, Seed: 1}, getScenario(addr))
	if len(r.Seconds) != 3 {
		t.Fatalf("%d seconds in a 3 s window", len(r.Seconds))
	}
	var n uint64
	for _, sec := range r.Seconds {
		n += sec.Requests
	}
	if n != r.Requests || r.Unsent != 0 {
		t.Fatalf("the seconds hold %d requests of %d (%d unsent)", n, r.Requests, r.Unsent)
	}
	i := r.Slowest()
	if i != 1 || r.Seconds[1].Slow < 20 || r.Seconds[1].Max < 150*time.Millisecond {
		t.Fatalf("slowest second %d, seconds %+v: want second 1 with the stall's 40 requests, about 200 ms the longest", i, r.Seconds)
	}
	if d := r.Start.Sub(start); d < warmup || d > warmup+100*time.Millisecond {
		t.Errorf("window start %v after the drive began, want about the %v warm-up", d, warmup)
	}
}

// TestUntilReady: the joining phase's scenario runs until the second process is ready and
// not less than its minimum: set ready at 600 ms with a minimum of 300 ms, the open loop of
// a 10 s window ends at about 600 ms; set before the minimum, it ends at the minimum.
func TestUntilReady(t *testing.T) {
	addr := slowServer(t, 0)
	for _, c := range []struct {
		readyAt, notBefore, want time.Duration
	}{
		{600 * time.Millisecond, 300 * time.Millisecond, 600 * time.Millisecond},
		{100 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond},
	} {
		var ready atomic.Bool
		start := time.Now()
		timer := time.AfterFunc(c.readyAt, func() { ready.Store(true) })
		r := Drive(Load{Client: NewClient(addr, 4), Workers: 4, Duration: 10 * time.Second, Rate: 200, Seed: 1},
			untilReady(getScenario(addr), &ready, start.Add(c.notBefore)))
		timer.Stop()
		if r.Span < c.want-50*time.Millisecond || r.Span > c.want+400*time.Millisecond {
			t.Errorf("ready at %v, not before %v: the phase spanned %v, want about %v", c.readyAt, c.notBefore, r.Span, c.want)
		}
		if r.Errors != 0 || r.Requests == 0 {
			t.Errorf("ready at %v: %d requests, %d errors", c.readyAt, r.Requests, r.Errors)
		}
	}
}
