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
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/bench"
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
// this process (load generator and server together) and by PostgreSQL. The load comes from
// bench's generator (bench.Drive) and the CPU figures from bench's accounting, the same as
// `switchboard bench` uses. It runs only with
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
// experiments: an index dropped, a fillfactor). SWITCHBOARD_TIMING_DATABASE_URL runs the
// group mode once against that existing database instead of a fresh cluster (a database
// seeded with a year of sessions, docs/performance.md "A year of sessions"), with
// SWITCHBOARD_TIMING_PGDATA its server's data directory for the CPU and WAL figures.
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
	if u := os.Getenv("SWITCHBOARD_TIMING_DATABASE_URL"); u != "" {
		o := timingOpts{conc: 64, dur: 10 * time.Second, pgDir: os.Getenv("SWITCHBOARD_TIMING_PGDATA"), fresh: true,
			workload: os.Getenv("SWITCHBOARD_TIMING_WORKLOAD"), entryRate: 5000, callbackRate: 3000}
		if v, err := time.ParseDuration(os.Getenv("SWITCHBOARD_TIMING_DUR")); err == nil && v > 0 {
			o.dur = v
		}
		rows := runTiming(t, u, "group", false, o)
		t.Logf("summary (concurrency %d, %v per phase):\n%-28s %9s %9s %9s %9s %12s %12s\n%s", o.conc, o.dur,
			"scenario", "req/s", "p50", "p99", "max", "app µs/req", "pg µs/req", strings.Join(rows, "\n"))
		return
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
		o.gc.Cycle = v
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
	if w.pub, _, err = w.db.Accounts.CreatePublisher(ctx, persistence.NewPublisher{Name: "Timing partner", CurrencyName: "coins",
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
		// Who enters what is drawn up front; each entry signs a token of its own (a fresh
		// nonce), since following one offer's link again while its session is in progress
		// resumes that session rather than admitting another (docs/rules.md §6).
		rng := rand.New(rand.NewPCG(1, uint64(len(wl))))
		type target struct{ p, c int64 }
		targets := make([]target, 0, 8192)
		for i := range cap(targets) {
			camp := hot
			if wl == "spread" {
				camp = spread[rng.IntN(len(spread))]
			}
			targets = append(targets, target{ps[i%len(ps)], camp})
		}
		// Admitted entries feed the callbacks: each callback completes the next stored tid.
		var tidMu sync.Mutex
		var tids []string
		next := 0
		const prefix = "https://survey.example/s?tid="
		var seq atomic.Int64
		enter := &bench.Scenario{Name: "entries", Ops: []string{"entry"},
			Prepare: func(bw *bench.Worker) int {
				tg := targets[int(seq.Add(1))%len(targets)]
				bw.Req.SetRequestURI("http://" + addr + w.entryURL("", tg.p, tg.c))
				return 0
			},
			Check: func(bw *bench.Worker, op int) (int, bool) {
				loc := bw.Resp.Header.Peek("Location")
				if bw.Resp.StatusCode() != 302 || len(loc) <= len(prefix)+32 || !bytes.HasPrefix(loc, []byte(prefix)) {
					return op, false
				}
				tid := string(loc[len(prefix) : len(prefix)+32])
				tidMu.Lock()
				tids = append(tids, tid)
				tidMu.Unlock()
				return op, true
			},
		}
		complete := &bench.Scenario{Name: "callbacks", Ops: []string{"complete"},
			Prepare: func(bw *bench.Worker) int {
				tidMu.Lock()
				if next == len(tids) {
					tidMu.Unlock()
					return bench.Exhausted
				}
				tid := tids[next]
				next++
				tidMu.Unlock()
				bw.Req.SetRequestURI(w.callbackURL("complete", tid, w.buyer.APISecret))
				return 0
			},
			Check: func(bw *bench.Worker, op int) (int, bool) { return op, bw.Resp.StatusCode() == 302 },
		}
		name := mode + " " + wl
		entries := measure(t, o, name+" entries", func(tr *trace) loadResult { return o.drive(hc, enter, 0, tr) })
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
		callbacks := measure(t, o, name+" callbacks", func(tr *trace) loadResult { return drained(o.drive(hc, complete, 0, tr)) })
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
			r := measure(t, o, name+" entries at target", func(tr *trace) loadResult { return o.drive(hc, enter, o.entryRate, tr) })
			rows = append(rows, row(t, fmt.Sprintf("%s entries @%d/s", name, o.entryRate), r))
			entries.ok += r.ok
			r = measure(t, o, name+" callbacks at target", func(tr *trace) loadResult {
				return drained(o.drive(hc, complete, o.callbackRate, tr))
			})
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

// loadResult is what one phase measured: bench's result, the requests answered as
// expected, and the CPU spent meanwhile.
type loadResult struct {
	*bench.Result
	ok     int           // requests answered as expected (an entry admitted, a callback accepted)
	appCPU time.Duration // this process: load generator and server
	pgCPU  time.Duration // every PostgreSQL process of the cluster
	// machine is the whole machine over the phase: how busy, how much stolen.
	machine bench.MachineCPU
	trace   *trace // each request's start and latency, when the phase's stalls are logged
}

// drive runs one phase of s with bench's load generator: a closed loop at o.conc
// concurrent requests (the most the server gives) when rate is 0, else an open loop
// offering rate requests/s (latency from each request's scheduled send time, at most
// rateSenders in flight). tr, when not nil, collects every request's start and latency.
func (o timingOpts) drive(hc *fasthttp.HostClient, s *bench.Scenario, rate int, tr *trace) loadResult {
	l := bench.Load{Client: hc, Workers: o.conc, Duration: o.dur, Timeout: 30 * time.Second, Seed: 1}
	if rate > 0 {
		l.Workers, l.Rate = rateSenders, float64(rate)
	}
	if tr != nil {
		l.Trace = tr.record
	}
	r := bench.Drive(l, s)
	return loadResult{Result: r, ok: int(r.Requests - r.Errors), trace: tr}
}

// rateSenders bounds the open loop's requests in flight (a server that falls further
// behind than this shows it in the latencies).
const rateSenders = 512

// trace keeps each successful request's start and latency, per bench worker (so that
// workers append without a lock).
type trace struct {
	at  [][]time.Time
	lat [][]time.Duration
}

func newTrace(workers int) *trace {
	return &trace{at: make([][]time.Time, workers), lat: make([][]time.Duration, workers)}
}

// record is the bench.Load's Trace.
func (tr *trace) record(w *bench.Worker, start time.Time, lat time.Duration, ok bool) {
	if ok {
		tr.at[w.ID], tr.lat[w.ID] = append(tr.at[w.ID], start), append(tr.lat[w.ID], lat)
	}
}

// measure runs one phase, with its CPU accounting (bench's) and (optionally) a CPU profile.
func measure(t *testing.T, o timingOpts, name string, run func(*trace) loadResult) loadResult {
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
	var tr *trace
	if o.stalls && strings.HasSuffix(name, " at target") {
		segments = watchWAL(o.pgDir)
		tr = newTrace(max(o.conc, rateSenders))
	}
	pgPID := bench.PostmasterPID(o.pgDir)
	app0, pg0, m0 := bench.SelfCPU(), bench.TreeCPU(pgPID), bench.ReadMachineCPU()
	r := run(tr)
	r.appCPU, r.pgCPU, r.machine = bench.SelfCPU()-app0, bench.TreeCPU(pgPID)-pg0, bench.ReadMachineCPU().Since(m0)
	if segments != nil {
		t.Logf("%s stalls:%s", name, stalls(r.trace, segments(), 100*time.Millisecond, 25*time.Millisecond))
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
func stalls(tr *trace, segs []walSegment, window, limit time.Duration) string {
	var starts []time.Time
	var lats []time.Duration
	if tr != nil {
		starts, lats = slices.Concat(tr.at...), slices.Concat(tr.lat...)
	}
	if len(starts) == 0 {
		return " none measured"
	}
	begin := slices.MinFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	worst := map[int]time.Duration{}
	count := map[int]int{}
	for i, at := range starts {
		w := int(at.Sub(begin) / window)
		if lats[i] > limit {
			count[w]++
			worst[w] = max(worst[w], lats[i])
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

// row logs one scenario and returns its summary line.
func row(t *testing.T, what string, r loadResult) string {
	pct := func(q float64) time.Duration { return time.Duration(r.Hist.Quantile(q)).Round(10 * time.Microsecond) }
	perReq := func(d time.Duration) float64 {
		if r.ok == 0 {
			return 0
		}
		return float64(d.Microseconds()) / float64(r.ok)
	}
	rate := 0.0
	if r.Span > 0 {
		rate = float64(r.ok) / r.Span.Seconds()
	}
	t.Logf("%-26s %8.0f/s  ok %d failed %d  p50 %v  p99 %v  max %v  cpu/req app %.0fµs pg %.0fµs  machine busy %.0f%% stolen %.0f%%", what,
		rate, r.ok, r.Errors, pct(0.50), pct(0.99), pct(1), perReq(r.appCPU), perReq(r.pgCPU),
		r.machine.Busy*100, r.machine.Stolen*100)
	return fmt.Sprintf("%-28s %9.0f %9v %9v %9v %12.0f %12.0f", what, rate,
		pct(0.50), pct(0.99), pct(1), perReq(r.appCPU), perReq(r.pgCPU))
}
