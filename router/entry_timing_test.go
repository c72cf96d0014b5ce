package router_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
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

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
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
// Each closed-loop phase (the most the server gives at a fixed concurrency) is followed, in
// group mode, by an open-loop phase at the target rate (SWITCHBOARD_TIMING_RATES, default
// 5000,3000: entries/s, callbacks/s), whose latencies count from each request's scheduled
// send time.
//
// SWITCHBOARD_TIMING_CONC (default 64) sets the concurrent requests, SWITCHBOARD_TIMING_DUR
// (default 10s) the length of each phase, SWITCHBOARD_TIMING_ONLY=group|naive one mode,
// SWITCHBOARD_TIMING_WORKLOAD=spread|hot one workload;
// SWITCHBOARD_TIMING_PROFILE=<dir> writes a CPU profile of this process per phase,
// SWITCHBOARD_TIMING_STATEMENTS=1 logs each phase's costliest statements (pg_stat_statements),
// SWITCHBOARD_TIMING_WAITS=1 what PostgreSQL's busy backends were doing (pg_stat_activity
// sampled every 10 ms: wait event, or cpu, and statement),
// SWITCHBOARD_TIMING_FRESH=1 skips the checkpoint that brings the cluster's WAL to a steady
// state before the open-loop phases, SWITCHBOARD_TIMING_STALLS=1 when those phases stalled (100 ms windows of scheduled
// send time whose slowest request took over 25 ms, beside the WAL segments PostgreSQL
// started then), SWITCHBOARD_TIMING_PGSET=name=value,… sets PostgreSQL settings, and
// SWITCHBOARD_TIMING_SQL runs statements on each fresh database before its phases (schema
// experiments: an index dropped, a fillfactor).
func TestEntryTiming(t *testing.T) {
	if os.Getenv("SWITCHBOARD_TIMING") == "" {
		t.Skip("set SWITCHBOARD_TIMING=1 to run the entry/callback timing")
	}
	ctx := context.Background()
	settings := map[string]string{"max_connections": "200", "shared_buffers": "256MB"}
	for kv := range strings.SplitSeq(os.Getenv("SWITCHBOARD_TIMING_PGSET"), ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			settings[k] = v
		}
	}
	statements := os.Getenv("SWITCHBOARD_TIMING_STATEMENTS") != ""
	if statements {
		settings["shared_preload_libraries"] = "pg_stat_statements"
		settings["pg_stat_statements.track"] = "all"
	}
	c, err := cluster.Start(ctx, cluster.Options{Dir: t.TempDir(), Fsync: true, Attached: true, Settings: settings})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	o := timingOpts{conc: 64, dur: 10 * time.Second, pgDir: c.DataDir(), profile: os.Getenv("SWITCHBOARD_TIMING_PROFILE"),
		statements: statements, waits: os.Getenv("SWITCHBOARD_TIMING_WAITS") != "", stalls: os.Getenv("SWITCHBOARD_TIMING_STALLS") != "", fresh: os.Getenv("SWITCHBOARD_TIMING_FRESH") != "", workload: os.Getenv("SWITCHBOARD_TIMING_WORKLOAD"), entryRate: 5000, callbackRate: 3000}
	if v, err := strconv.Atoi(os.Getenv("SWITCHBOARD_TIMING_CONC")); err == nil && v > 0 {
		o.conc = v
	}
	if v, err := time.ParseDuration(os.Getenv("SWITCHBOARD_TIMING_DUR")); err == nil && v > 0 {
		o.dur = v
	}
	if e, c, ok := strings.Cut(os.Getenv("SWITCHBOARD_TIMING_RATES"), ","); ok {
		o.entryRate, _ = strconv.Atoi(e)
		o.callbackRate, _ = strconv.Atoi(c)
		if o.entryRate <= 0 || o.callbackRate <= 0 {
			t.Fatal("SWITCHBOARD_TIMING_RATES: want <entries/s>,<callbacks/s>")
		}
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
		if statements {
			conn, err := pgx.Connect(ctx, c.URL(dbName))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Exec(ctx, "CREATE EXTENSION pg_stat_statements"); err != nil {
				t.Fatal(err)
			}
			_ = conn.Close(ctx)
		}
		rows = append(rows, runTiming(t, c.URL(dbName), name, naive, o)...)
	}
	t.Logf("summary (concurrency %d, %v per phase):\n%-28s %9s %9s %9s %9s %12s %12s\n%s", o.conc, o.dur,
		"scenario", "req/s", "p50", "p99", "max", "app µs/req", "pg µs/req", strings.Join(rows, "\n"))
}

type timingOpts struct {
	conc         int
	dur          time.Duration
	pgDir        string // the cluster's data directory (its postmaster's CPU is measured)
	profile      string
	entryRate    int                           // offered entries/s of the open-loop phase (the target)
	callbackRate int                           // offered callbacks/s of the open-loop phase (the target)
	statements   bool                          // log each phase's costliest statements
	waits        bool                          // log what busy backends were doing
	stalls       bool                          // log when the open-loop phases stalled
	fresh        bool                          // no checkpoint before the open-loop phases
	workload     string                        // only this workload ("spread", "hot"); "": both
	stmtPool     *pgxpool.Pool                 // where to read them
	gc           persistence.EntryWriterConfig // group commit (SWITCHBOARD_TIMING_WORKERS, SWITCHBOARD_TIMING_WAIT)
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
	if q := os.Getenv("SWITCHBOARD_TIMING_SQL"); q != "" {
		if _, err := w.db.Pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if o.statements || o.waits {
		o.stmtPool = w.db.Pool
	}
	w.survey.outcome = func(string) string { return "" }
	// The partner's postback receiver is a minimal server that answers 200: what a real
	// partner spends on a postback is not this machine's, so the harness spends little.
	sink, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var postbacks atomic.Int64 // received by the partner
	sinkSrv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		if bytes.Equal(ctx.Path(), []byte("/pb")) {
			postbacks.Add(1)
		}
		ctx.SetStatusCode(fasthttp.StatusOK)
	}}
	go sinkSrv.Serve(sink)   //nolint:errcheck
	defer sinkSrv.Shutdown() //nolint:errcheck
	if w.pub, _, err = w.db.CreatePublisher(ctx, persistence.NewPublisher{Name: "Timing partner", CurrencyName: "coins",
		ExchangeRate: 100, RevenueShare: 0.5, RedirectURL: "http://" + sink.Addr().String() + "/back",
		PostbackURL: "http://" + sink.Addr().String() + "/pb", Environment: persistence.EnvStaging}); err != nil {
		t.Fatal(err)
	}
	link := "https://survey.example/s?tid={ID}&rid={RESPONDENT_ID}&security_hash={LINK_HASH}"
	spread := make([]int64, spreadCampaigns)
	for i := range spread {
		spread[i], _ = w.campaign(w.publicURL, campaignOpts{quota: 10_000_000, link: link})
	}
	hot, _ := w.campaign(w.publicURL, campaignOpts{quota: 10_000_000, link: link})
	ps := w.participants(2000)
	w.settle()
	hc := &fasthttp.HostClient{Addr: addr, MaxConns: max(o.conc*2, rateSenders), ReadTimeout: 30 * time.Second}

	var rows []string
	var sent int64 // callbacks completed, so postbacks owed to the partner
	for _, wl := range []string{"spread", "hot"} {
		if o.workload != "" && o.workload != wl {
			continue
		}
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
		// Admitted entries feed the callbacks: each callback completes the next stored tid.
		var tidMu sync.Mutex
		var tids []string
		next := 0
		const prefix = "https://survey.example/s?tid="
		var seq atomic.Int64
		enter := func(req *fasthttp.Request, resp *fasthttp.Response) (ok, done bool) {
			req.SetRequestURI("http://" + addr + urls[int(seq.Add(1))%len(urls)])
			if err := hc.Do(req, resp); err != nil || resp.StatusCode() != 302 {
				return false, false
			}
			loc := resp.Header.Peek("Location")
			if len(loc) > len(prefix)+32 && bytes.HasPrefix(loc, []byte(prefix)) {
				tid := string(loc[len(prefix) : len(prefix)+32])
				tidMu.Lock()
				tids = append(tids, tid)
				tidMu.Unlock()
				return true, false
			}
			return false, false
		}
		complete := func(req *fasthttp.Request, resp *fasthttp.Response) (ok, done bool) {
			tidMu.Lock()
			if next == len(tids) {
				tidMu.Unlock()
				return false, true
			}
			tid := tids[next]
			next++
			tidMu.Unlock()
			req.SetRequestURI(w.callbackURL("complete", tid, w.buyer.APISecret))
			return hc.Do(req, resp) == nil && resp.StatusCode() == 302, false
		}
		name := mode + " " + wl
		entries := measure(t, o, name+" entries", func() loadResult { return load(o.conc, o.dur, enter) })
		rows = append(rows, row(t, name+" entries", entries))
		// A callback's cost includes its postback: each callback phase's CPU is counted until
		// the outbox has drained, which also keeps deliveries out of the next phase.
		// The partner's count is watched first: polling the outbox itself would cost
		// PostgreSQL more than some of the deliveries it waits for.
		drained := func(r loadResult) loadResult {
			sent += int64(r.ok)
			deadline := time.Now().Add(time.Minute)
			for postbacks.Load() < sent || w.count(`SELECT count(*) FROM postback_outbox WHERE delivered_at IS NULL`) > 0 {
				if time.Now().After(deadline) {
					t.Fatalf("%s: postbacks still undelivered after a minute", name)
				}
				time.Sleep(20 * time.Millisecond)
			}
			return r
		}
		callbacks := measure(t, o, name+" callbacks", func() loadResult { return drained(load(o.conc, o.dur, complete)) })
		rows = append(rows, row(t, name+" callbacks", callbacks))
		// The targets as offered rates: latency from each request's scheduled send time.
		if !naive {
			// Steady state first, as a running database is in (SWITCHBOARD_TIMING_FRESH=1: not):
			//   - A young cluster has no old WAL segments to recycle, so every 16 MB segment is
			//     zero-filled and flushed while commits wait for it (50–100 ms stalls on this
			//     machine, every 2–3 s at these rates). A running database checkpoints every few
			//     minutes and recycles the segments that checkpoint no longer needs.
			//   - Its statistics are current: the tables have not just doubled, so the
			//     sweeper's analyze of growing tables (100 ms of ANALYZE sessions, then every
			//     statement on them planned again: stalls of 40–70 ms) does not run mid-phase.
			if !o.fresh {
				if _, err := w.db.Pool.Exec(ctx, "CHECKPOINT"); err != nil {
					t.Fatal(err)
				}
				if _, err := w.db.Pool.Exec(ctx, "ANALYZE sessions, respondents, participants, postback_outbox"); err != nil {
					t.Fatal(err)
				}
			}
			r := measure(t, o, name+" entries at target", func() loadResult { return loadRate(o.entryRate, o.dur, enter) })
			rows = append(rows, row(t, fmt.Sprintf("%s entries @%d/s", name, o.entryRate), r))
			entries.ok += r.ok
			r = measure(t, o, name+" callbacks at target", func() loadResult { return drained(loadRate(o.callbackRate, o.dur, complete)) })
			rows = append(rows, row(t, fmt.Sprintf("%s callbacks @%d/s", name, o.callbackRate), r))
			callbacks.ok += r.ok
		}
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
	at         []time.Time   // each latency's start (scheduled send time in the open loop), until row sorts lat
	appCPU     time.Duration // this process: load generator and server
	pgCPU      time.Duration // every PostgreSQL process of the cluster
	machine    machineCPU    // the whole machine over the phase: how busy, how much stolen
}

// measure runs one phase, with its CPU accounting and (optionally) a CPU profile.
func measure(t *testing.T, o timingOpts, name string, run func() loadResult) loadResult {
	if o.profile != "" {
		f, err := os.Create(filepath.Join(o.profile, strings.ReplaceAll(name, " ", "-")+".pprof"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	if o.statements {
		if _, err := o.stmtPool.Exec(context.Background(), "SELECT pg_stat_statements_reset()"); err != nil {
			t.Fatal(err)
		}
	}
	var waits func() string
	if o.waits {
		waits = sampleActivity(o.stmtPool)
	}
	var segments func() []walSegment
	if o.stalls && strings.HasSuffix(name, " at target") {
		segments = watchWAL(o.pgDir)
	}
	app0, pg0, m0 := selfCPU(), postgresCPU(o.pgDir), readMachineCPU()
	r := run()
	r.appCPU, r.pgCPU, r.machine = selfCPU()-app0, postgresCPU(o.pgDir)-pg0, readMachineCPU().since(m0)
	if segments != nil {
		t.Logf("%s stalls:%s", name, stalls(r, segments(), 100*time.Millisecond, 25*time.Millisecond))
	}
	if o.statements {
		logStatements(t, o.stmtPool, name, r.ok)
	}
	if waits != nil {
		t.Logf("%s busy backends (samples):%s", name, waits())
	}
	return r
}

// walSegment is a WAL segment file first seen in pg_wal at a time.
type walSegment struct {
	name string
	seen time.Time
}

// watchWAL lists pg_wal every 5 ms until the returned function is called, which reports the
// segment files that appeared meanwhile (a new segment is zero-filled and flushed while the
// WAL writes wait for it, unless an old one is recycled).
func watchWAL(dataDir string) (stop func() []walSegment) {
	quit, result := make(chan struct{}), make(chan []walSegment)
	go func() {
		known := map[string]bool{}
		var out []walSegment
		first := true
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			ents, _ := os.ReadDir(filepath.Join(dataDir, "pg_wal"))
			now := time.Now()
			for _, e := range ents {
				if n := e.Name(); len(n) == 24 && !known[n] {
					known[n] = true
					if !first {
						out = append(out, walSegment{n, now})
					}
				}
			}
			first = false
			select {
			case <-quit:
				result <- out
				return
			case <-tick.C:
			}
		}
	}()
	return func() []walSegment {
		close(quit)
		return <-result
	}
}

// stalls lists the windows (of the requests' start times) whose slowest request took longer
// than limit, each with the WAL segments that appeared in it or the window before.
func stalls(r loadResult, segs []walSegment, window, limit time.Duration) string {
	if len(r.at) == 0 {
		return " none measured"
	}
	begin := slices.MinFunc(r.at, func(a, b time.Time) int { return a.Compare(b) })
	worst := map[int]time.Duration{}
	count := map[int]int{}
	for i, at := range r.at {
		w := int(at.Sub(begin) / window)
		if r.lat[i] > limit {
			count[w]++
			worst[w] = max(worst[w], r.lat[i])
		}
	}
	ws := slices.Sorted(maps.Keys(worst))
	var b strings.Builder
	fmt.Fprintf(&b, " %d windows of %v with a request over %v; %d new WAL segments", len(ws), window, limit, len(segs))
	for _, w := range ws {
		from := begin.Add(time.Duration(w) * window)
		var near []string
		for _, s := range segs {
			if d := s.seen.Sub(from); d > -window && d < 2*window {
				near = append(near, fmt.Sprintf("%s at %+dms", s.name[16:], d.Milliseconds()))
			}
		}
		fmt.Fprintf(&b, "\n  %s +%5dms  %4d over, max %v  WAL: %s", from.Format("15:04:05.000"), from.Sub(begin).Milliseconds(),
			count[w], worst[w].Round(100*time.Microsecond), strings.Join(near, ", "))
	}
	return b.String()
}

// sampleActivity samples what PostgreSQL's busy backends are doing every 10 ms until the
// returned function is called, which reports the most frequent (wait event or cpu, statement)
// pairs. pg_stat_statements' times are wall-clock times; these samples tell a statement
// that was running from one that was waiting (for a lock, the WAL, or its turn on a CPU).
func sampleActivity(pool *pgxpool.Pool) (stop func() string) {
	quit, result := make(chan struct{}), make(chan string)
	go func() {
		tally := map[string]int{}
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				keys := slices.Collect(maps.Keys(tally))
				slices.SortFunc(keys, func(a, b string) int { return tally[b] - tally[a] })
				var b strings.Builder
				for _, k := range keys[:min(len(keys), 12)] {
					fmt.Fprintf(&b, "\n  %6d  %s", tally[k], k)
				}
				result <- b.String()
				return
			case <-tick.C:
			}
			rows, err := pool.Query(context.Background(), `SELECT COALESCE(wait_event_type || ':' || wait_event, 'cpu')
				|| '  ' || left(regexp_replace(query, '\s+', ' ', 'g'), 70)
				FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid()`)
			if err != nil {
				continue
			}
			for rows.Next() {
				var k string
				if rows.Scan(&k) == nil {
					tally[k]++
				}
			}
			rows.Close()
		}
	}()
	return func() string {
		close(quit)
		return <-result
	}
}

// logStatements logs the phase's statements by total execution time, per request.
func logStatements(t *testing.T, pool *pgxpool.Pool, name string, requests int) {
	rows, err := pool.Query(context.Background(), `SELECT calls, total_exec_time, rows, left(regexp_replace(query, '\s+', ' ', 'g'), 90)
		FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 10`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var calls, n int64
		var ms float64
		var q string
		if err := rows.Scan(&calls, &ms, &n, &q); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "\n  %8d calls %8.1f µs/req %7.1f rows/call  %s", calls, ms*1000/float64(max(requests, 1)), float64(n)/float64(max(calls, 1)), q)
	}
	t.Logf("%s statements:%s", name, b.String())
}

// load runs fn from conc workers for dur (or until fn reports done) and collects the
// latencies of successful requests: a closed loop, the most the server gives at conc.
func load(conc int, dur time.Duration, fn sendFunc) loadResult {
	stop := time.Now().Add(dur)
	return send(conc, func() (time.Time, bool) {
		now := time.Now()
		return now, now.Before(stop)
	}, fn)
}

// rateSenders bounds the open loop's requests in flight (a server that falls further
// behind than this shows it in the latencies).
const rateSenders = 512

// loadRate offers fn at rate requests a second for dur: an open loop, as independent
// respondents arrive. Each latency counts from the request's scheduled send time, so time
// spent waiting for a free sender (the server falling behind) is counted, not hidden.
func loadRate(rate int, dur time.Duration, fn sendFunc) loadResult {
	n := int64(float64(rate) * dur.Seconds())
	interval := time.Second / time.Duration(rate)
	var seq atomic.Int64
	start := time.Now()
	return send(rateSenders, func() (time.Time, bool) {
		i := seq.Add(1) - 1
		due := start.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 0 && i < n {
			time.Sleep(d)
		}
		return due, i < n
	}, fn)
}

// sendFunc sends one request: ok when it got the expected answer, done when there is
// nothing left to send.
type sendFunc func(req *fasthttp.Request, resp *fasthttp.Response) (ok, done bool)

// send runs n senders that each call fn whenever next gives them a start time, until next
// or fn says there is no more, and collects every successful request's latency from its
// start time. A sender that fails its first thousand requests gives up.
func send(n int, next func() (start time.Time, more bool), fn sendFunc) loadResult {
	var mu sync.Mutex
	var res loadResult
	begin := time.Now()
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			var lat []time.Duration
			var at []time.Time
			ok, failed := 0, 0
			for {
				start, more := next()
				if !more {
					break
				}
				good, done := fn(req, resp)
				if done {
					break
				}
				if good {
					lat, at = append(lat, time.Since(start)), append(at, start)
					ok++
				} else if failed++; failed > 1000 && ok == 0 {
					break
				}
			}
			mu.Lock()
			res.ok += ok
			res.failed += failed
			res.lat, res.at = append(res.lat, lat...), append(res.at, at...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(begin)
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
	t.Logf("%-26s %8.0f/s  ok %d failed %d  p50 %v  p99 %v  max %v  cpu/req app %.0fµs pg %.0fµs  machine busy %.0f%% stolen %.0f%%", what,
		float64(r.ok)/r.elapsed.Seconds(), r.ok, r.failed, pct(0.50), pct(0.99), pct(1), perReq(r.appCPU), perReq(r.pgCPU),
		r.machine.busy*100, r.machine.stolen*100)
	return fmt.Sprintf("%-28s %9.0f %9v %9v %9v %12.0f %12.0f", what, float64(r.ok)/r.elapsed.Seconds(),
		pct(0.50), pct(0.99), pct(1), perReq(r.appCPU), perReq(r.pgCPU))
}

// machineCPU is the machine's CPU time from /proc/stat, in clock ticks; since turns two
// readings into the shares of the interval between them that were busy (stolen included)
// and stolen by the hypervisor (this machine is shared: steal is the noise).
type machineCPU struct {
	totalTicks, busyTicks, stolenTicks int64
	busy, stolen                       float64 // shares of totalTicks
}

func readMachineCPU() machineCPU {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var m machineCPU
	for i, v := range f[1:] {
		if i >= 8 { // guest time is counted in user already
			break
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		m.totalTicks += n
		switch i {
		case 3, 4: // idle, iowait
		case 7:
			m.stolenTicks += n
			m.busyTicks += n
		default:
			m.busyTicks += n
		}
	}
	return m
}

func (m machineCPU) since(m0 machineCPU) machineCPU {
	d := machineCPU{totalTicks: m.totalTicks - m0.totalTicks, busyTicks: m.busyTicks - m0.busyTicks,
		stolenTicks: m.stolenTicks - m0.stolenTicks}
	if d.totalTicks > 0 {
		d.busy, d.stolen = float64(d.busyTicks)/float64(d.totalTicks), float64(d.stolenTicks)/float64(d.totalTicks)
	}
	return d
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
