package router_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/cmd/switchboard/app"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/cluster"
	"github.com/switchboard/switchboard/router"
)

// TestEntryTiming measures entries/s and callbacks/s over real HTTP with durable writes:
// a dedicated PostgreSQL cluster with fsync, synchronous_commit and full_page_writes on,
// group commit against the naive one-transaction-per-entry (and per-callback) path, each
// under two workloads:
//
//   - spread: entries spread over 200 campaigns (one quota each), like a market;
//   - hot: every entry into the same campaign and quota (the worst case for row locks).
//
// Each scenario reports throughput, p50/p99/max latency and the CPU spent per request by
// this process (load generator and server together) and by PostgreSQL. It runs only with
// SWITCHBOARD_TIMING=1 (about two minutes):
//
//	SWITCHBOARD_TIMING=1 go test -run TestEntryTiming -v ./router/
//
// SWITCHBOARD_TIMING_CONC (default 64) sets the concurrent requests, SWITCHBOARD_TIMING_DUR
// (default 10s) the length of each phase, SWITCHBOARD_TIMING_ONLY=group|naive one mode, and
// SWITCHBOARD_TIMING_PROFILE=<dir> writes a CPU profile of this process per phase.
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
	o := timingOpts{conc: 64, dur: 10 * time.Second, pgDir: c.DataDir(), profile: os.Getenv("SWITCHBOARD_TIMING_PROFILE")}
	if v, err := strconv.Atoi(os.Getenv("SWITCHBOARD_TIMING_CONC")); err == nil && v > 0 {
		o.conc = v
	}
	if v, err := time.ParseDuration(os.Getenv("SWITCHBOARD_TIMING_DUR")); err == nil && v > 0 {
		o.dur = v
	}
	if v, err := strconv.Atoi(os.Getenv("SWITCHBOARD_TIMING_WORKERS")); err == nil && v > 0 {
		o.gc.Workers = v
	}
	if v, err := time.ParseDuration(os.Getenv("SWITCHBOARD_TIMING_WAIT")); err == nil && v > 0 {
		o.gc.MaxWait = v
	}
	only := os.Getenv("SWITCHBOARD_TIMING_ONLY")
	var rows []string
	for _, naive := range []bool{false, true} {
		name := "group"
		if naive {
			name = "naive"
		}
		if only != "" && only != name {
			continue
		}
		dbName := "timing_" + name
		if err := c.CreateDatabase(ctx, dbName, ""); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, runTiming(t, c.URL(dbName), name, naive, o)...)
	}
	t.Logf("summary (concurrency %d, %v per phase):\n%-28s %9s %9s %9s %9s %12s %12s\n%s", o.conc, o.dur,
		"scenario", "req/s", "p50", "p99", "max", "app µs/req", "pg µs/req", strings.Join(rows, "\n"))
}

type timingOpts struct {
	conc    int
	dur     time.Duration
	pgDir   string // the cluster's data directory (its postmaster's CPU is measured)
	profile string
	gc      persistence.EntryWriterConfig // group commit (SWITCHBOARD_TIMING_WORKERS, SWITCHBOARD_TIMING_WAIT)
}

const spreadCampaigns = 200

func runTiming(t *testing.T, dbURL, mode string, naive bool, o timingOpts) []string {
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	// Real completes arrive minutes after entry; these arrive at once, so the speeder rule
	// (docs/quality.md) is off: it would block every participant after its first callback.
	a, err := app.New(ctx, app.Config{Addr: addr, DatabaseURL: dbURL, RateLimit: -1,
		Router: router.Config{Naive: naive, GroupCommit: o.gc}, RouterQuality: router.QualityConfig{SpeederFraction: -1}}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	go a.Serve(ln)                         //nolint:errcheck
	defer a.Shutdown(context.Background()) //nolint:errcheck

	w := newWorld(t, dbURL)
	w.publicURL = "http://" + addr
	w.survey.outcome = func(string) string { return "" }
	link := "https://survey.example/s?tid={ID}&rid={RESPONDENT_ID}&security_hash={LINK_HASH}"
	spread := make([]int64, spreadCampaigns)
	for i := range spread {
		spread[i], _ = w.campaign(w.publicURL, campaignOpts{quota: 10_000_000, link: link})
	}
	hot, _ := w.campaign(w.publicURL, campaignOpts{quota: 10_000_000, link: link})
	ps := w.participants(2000)
	w.settle()
	hc := &fasthttp.HostClient{Addr: addr, MaxConns: o.conc * 2, ReadTimeout: 30 * time.Second}

	var rows []string
	for _, wl := range []string{"spread", "hot"} {
		// Tokens prepared up front: the generator should cost as little as possible.
		rng := rand.New(rand.NewPCG(1, uint64(len(wl))))
		urls := make([]string, 0, 8192)
		for i := range cap(urls) {
			camp := hot
			if wl == "spread" {
				camp = spread[rng.IntN(len(spread))]
			}
			urls = append(urls, w.entryURL("", ps[i%len(ps)], camp))
		}
		var tidMu sync.Mutex
		var tids []string
		const prefix = "https://survey.example/s?tid="
		entries := measure(t, o, mode+"-"+wl+"-entries", func() loadResult {
			return load(hc, o.conc, o.dur, 0, func(i int, req *fasthttp.Request, resp *fasthttp.Response) bool {
				req.SetRequestURI("http://" + addr + urls[i%len(urls)])
				if err := hc.Do(req, resp); err != nil || resp.StatusCode() != 302 {
					return false
				}
				loc := resp.Header.Peek("Location")
				if len(loc) > len(prefix)+32 && bytes.HasPrefix(loc, []byte(prefix)) {
					tid := string(loc[len(prefix) : len(prefix)+32])
					tidMu.Lock()
					tids = append(tids, tid)
					tidMu.Unlock()
					return true
				}
				return false
			})
		})
		rows = append(rows, row(t, mode+" "+wl+" entries", entries))

		cbs := make([]string, len(tids))
		for i, tid := range tids {
			u := w.callbackURL("complete", tid, w.buyer.APISecret)
			cbs[i] = u[len(w.publicURL):]
		}
		callbacks := measure(t, o, mode+"-"+wl+"-callbacks", func() loadResult {
			return load(hc, o.conc, o.dur, len(cbs), func(i int, req *fasthttp.Request, resp *fasthttp.Response) bool {
				req.SetRequestURI("http://" + addr + cbs[i-1])
				return hc.Do(req, resp) == nil && resp.StatusCode() == 302
			})
		})
		rows = append(rows, row(t, mode+" "+wl+" callbacks", callbacks))
		// Exactness under load: every accepted entry is one session holding its place until its
		// callback, every complete counted once.
		var sessions, completes, quotaCompletes, inProgress int64
		camps := spread
		if wl == "hot" {
			camps = []int64{hot}
		}
		if err := w.db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM sessions WHERE campaign_id = ANY($1)),
			(SELECT count(*) FROM sessions WHERE campaign_id = ANY($1) AND outcome = 'complete'),
			(SELECT sum(completes) FROM campaign_quotas WHERE campaign_id = ANY($1)),
			(SELECT sum(in_progress) FROM campaign_quotas WHERE campaign_id = ANY($1))`, camps).
			Scan(&sessions, &completes, &quotaCompletes, &inProgress); err != nil {
			t.Fatal(err)
		}
		if sessions != int64(entries.ok) || completes != int64(callbacks.ok) || quotaCompletes != completes || inProgress != sessions-completes {
			t.Errorf("%s %s: %d entries answered, %d sessions; %d callbacks answered, %d complete sessions, %d quota completes, in_progress %d",
				mode, wl, entries.ok, sessions, callbacks.ok, completes, quotaCompletes, inProgress)
		}
	}
	return rows
}

type loadResult struct {
	ok, failed int
	elapsed    time.Duration
	lat        []time.Duration
	appCPU     time.Duration // this process: load generator and server
	pgCPU      time.Duration // every PostgreSQL process of the cluster
}

// measure runs one phase, with its CPU accounting and (optionally) a CPU profile.
func measure(t *testing.T, o timingOpts, name string, run func() loadResult) loadResult {
	if o.profile != "" {
		f, err := os.Create(filepath.Join(o.profile, name+".pprof"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	app0, pg0 := selfCPU(), postgresCPU(o.pgDir)
	r := run()
	r.appCPU, r.pgCPU = selfCPU()-app0, postgresCPU(o.pgDir)-pg0
	return r
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
	_ = hc
	return res
}

// row logs one scenario and returns its summary line.
func row(t *testing.T, what string, r loadResult) string {
	slices.Sort(r.lat)
	pct := func(p float64) time.Duration {
		if len(r.lat) == 0 {
			return 0
		}
		return r.lat[min(len(r.lat)-1, int(p*float64(len(r.lat))))].Round(10 * time.Microsecond)
	}
	perReq := func(d time.Duration) float64 {
		if r.ok == 0 {
			return 0
		}
		return float64(d.Microseconds()) / float64(r.ok)
	}
	t.Logf("%-26s %8.0f/s  ok %d failed %d  p50 %v  p99 %v  max %v  cpu/req app %.0fµs pg %.0fµs", what,
		float64(r.ok)/r.elapsed.Seconds(), r.ok, r.failed, pct(0.50), pct(0.99), pct(1), perReq(r.appCPU), perReq(r.pgCPU))
	return fmt.Sprintf("%-28s %9.0f %9v %9v %9v %12.0f %12.0f", what, float64(r.ok)/r.elapsed.Seconds(),
		pct(0.50), pct(0.99), pct(1), perReq(r.appCPU), perReq(r.pgCPU))
}

// selfCPU is the user+system CPU time of this process.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// postgresCPU is the user+system CPU time of the cluster's postmaster and its children
// (backends, WAL writer, checkpointer; exited children through the postmaster's cutime).
func postgresCPU(dataDir string) time.Duration {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	pm, _, _ := strings.Cut(string(b), "\n")
	procs, _ := os.ReadDir("/proc")
	var ticks int64
	for _, p := range procs {
		if p.Name()[0] < '0' || p.Name()[0] > '9' {
			continue
		}
		st, err := os.ReadFile("/proc/" + p.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command name (which may hold spaces) in parentheses.
		i := bytes.LastIndexByte(st, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(st[i+1:]))
		if len(f) < 15 || (p.Name() != pm && f[1] != pm) {
			continue
		}
		for _, k := range []int{11, 12, 13, 14} { // utime stime cutime cstime
			n, _ := strconv.ParseInt(f[k], 10, 64)
			ticks += n
		}
	}
	return time.Duration(ticks) * (time.Second / 100) // USER_HZ
}
