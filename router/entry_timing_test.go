package router_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/cmd/switchboard/app"
	"github.com/switchboard/switchboard/persistence/cluster"
	"github.com/switchboard/switchboard/router"
)

// TestEntryTiming measures entries/s and callbacks/s over real HTTP with durable writes:
// a dedicated PostgreSQL cluster with fsync, synchronous_commit and full_page_writes on,
// group commit against the naive one-transaction-per-entry path. It runs only with
// SWITCHBOARD_TIMING=1 (it takes about a minute):
//
//	SWITCHBOARD_TIMING=1 go test -run TestEntryTiming -v ./router/
func TestEntryTiming(t *testing.T) {
	if os.Getenv("SWITCHBOARD_TIMING") == "" {
		t.Skip("set SWITCHBOARD_TIMING=1 to run the entry/callback timing")
	}
	ctx := context.Background()
	c, err := cluster.Start(ctx, cluster.Options{Dir: t.TempDir(), Fsync: true, Attached: true,
		Settings: map[string]string{"max_connections": "200", "shared_buffers": "256MB"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	conc := 64
	if v, err := strconv.Atoi(os.Getenv("SWITCHBOARD_TIMING_CONC")); err == nil {
		conc = v
	}
	dur := 10 * time.Second
	for _, naive := range []bool{false, true} {
		name := "group-commit"
		if naive {
			name = "naive"
		}
		dbName := "timing_" + name[:5]
		if err := c.CreateDatabase(ctx, dbName, ""); err != nil {
			t.Fatal(err)
		}
		runTiming(t, c.URL(dbName), name, naive, conc, dur)
	}
}

func runTiming(t *testing.T, dbURL, name string, naive bool, conc int, dur time.Duration) {
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	a, err := app.New(ctx, app.Config{Addr: addr, DatabaseURL: dbURL, RateLimit: -1,
		Router: router.Config{Naive: naive}}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	go a.Serve(ln)                         //nolint:errcheck
	defer a.Shutdown(context.Background()) //nolint:errcheck

	w := newWorld(t, dbURL)
	w.publicURL = "http://" + addr
	w.survey.outcome = func(string) string { return "" }
	camp, _ := w.campaign(w.publicURL, campaignOpts{quota: 10_000_000,
		link: "https://survey.example/s?tid={ID}&rid={RESPONDENT_ID}&security_hash={LINK_HASH}"})
	ps := w.participants(2000)
	w.settle()
	// Tokens prepared up front: the generator should cost as little as possible.
	urls := make([]string, 0, 4096)
	for i := range cap(urls) {
		urls = append(urls, w.entryURL("", ps[i%len(ps)], camp))
	}
	hc := &fasthttp.HostClient{Addr: addr, MaxConns: conc * 2, ReadTimeout: 30 * time.Second}

	var tidMu sync.Mutex
	var tids []string
	entries := load(hc, conc, dur, 0, func(i int, req *fasthttp.Request, resp *fasthttp.Response) bool {
		req.SetRequestURI("http://" + addr + urls[i%len(urls)])
		if err := hc.Do(req, resp); err != nil || resp.StatusCode() != 302 {
			return false
		}
		loc := string(resp.Header.Peek("Location"))
		if i := len("https://survey.example/s?tid="); len(loc) > i+32 && loc[:i] == "https://survey.example/s?tid=" {
			tidMu.Lock()
			tids = append(tids, loc[i:i+32])
			tidMu.Unlock()
			return true
		}
		return false
	})
	report(t, name+" entries", entries)

	if naive {
		return // callbacks do not depend on the entry path
	}
	cbs := make([]string, len(tids))
	for i, tid := range tids {
		u := w.callbackURL("complete", tid, w.buyer.APISecret)
		cbs[i] = u[len(w.publicURL):]
	}
	callbacks := load(hc, conc, dur, len(cbs), func(i int, req *fasthttp.Request, resp *fasthttp.Response) bool {
		req.SetRequestURI("http://" + addr + cbs[i-1])
		return hc.Do(req, resp) == nil && resp.StatusCode() == 302
	})
	report(t, "callbacks", callbacks)
}

type loadResult struct {
	ok, failed int
	elapsed    time.Duration
	lat        []time.Duration
}

// load runs fn from conc workers for dur and collects latencies of successful requests.
func load(hc *fasthttp.HostClient, conc int, dur time.Duration, limit int, fn func(i int, req *fasthttp.Request, resp *fasthttp.Response) bool) loadResult {
	var mu sync.Mutex
	var res loadResult
	var seq atomic.Int64
	stop := time.Now().Add(dur)
	start := time.Now()
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			var lat []time.Duration
			ok, failed := 0, 0
			for time.Now().Before(stop) {
				i := int(seq.Add(1))
				if limit > 0 && i > limit {
					break
				}
				t0 := time.Now()
				if fn(i, req, resp) {
					lat = append(lat, time.Since(t0))
					ok++
				} else {
					failed++
					if failed > 1000 && ok == 0 {
						break
					}
				}
			}
			mu.Lock()
			res.ok += ok
			res.failed += failed
			res.lat = append(res.lat, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return res
}

func report(t *testing.T, what string, r loadResult) {
	slices.Sort(r.lat)
	pct := func(p float64) time.Duration {
		if len(r.lat) == 0 {
			return 0
		}
		return r.lat[min(len(r.lat)-1, int(p*float64(len(r.lat))))]
	}
	t.Logf("%-22s %8.0f/s  ok %d failed %d  p50 %v  p99 %v  max %v", what,
		float64(r.ok)/r.elapsed.Seconds(), r.ok, r.failed, pct(0.50).Round(10*time.Microsecond),
		pct(0.99).Round(10*time.Microsecond), pct(1).Round(10*time.Microsecond))
}

var _ = fmt.Sprint
