// Package bench is Switchboard's load generator and benchmark harness, run by
// `switchboard bench` (`make bench`): it generates a synthetic market (engine/synth), seeds
// it into a throwaway PostgreSQL with COPY, starts `switchboard serve` as a child process,
// drives closed- and open-loop load over loopback with a fasthttp client, measures the floor
// (a minimal fasthttp server answering a body of the same size), times the engine's
// matching in-process at 1k/10k/100k campaigns, and writes docs/performance.md with SVG
// charts. See bench/README.md.
package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/persistence/cluster"
)

// Options configure a run.
type Options struct {
	Campaigns, Participants int
	// Duration is each phase's measured window; Warmup runs before it, unrecorded.
	Duration, Warmup time.Duration
	// Rates are the open-loop rates (requests/s) of the offers and floor phases; empty:
	// RateFractions of the offers closed-loop maximum.
	Rates         []float64
	RateFractions []float64
	// Connections is the closed-loop concurrency; OpenConnections the open-loop one (enough
	// to keep the schedule when the server slows down).
	Connections, OpenConnections int
	// Out is the report directory: Out/performance.md, Out/bench/*.svg, Out/bench/results.json.
	Out string
	// History seeds the participants' past sessions (up to 20 each) as well.
	History bool
	// PastSessions seeds that many sessions of closed campaigns over the eleven months
	// before the history (Market.PastSessions), and the report times the sweeper, exports
	// and insights on them.
	PastSessions int64
	// PartitionDays is the period of the sessions' partitions the seed lays out under a
	// year of sessions (0: 30 days, serve's default).
	PartitionDays int
	// ColdCache leaves a database seeded with PastSessions as the seed left it, rather
	// than reading what a serving database keeps in memory into it first (prewarm).
	ColdCache bool
	// EngineSizes are the market sizes of the in-process match benchmark (none: skipped).
	EngineSizes        []int
	EngineParticipants int
	// Mix is the offers:entries:callbacks proportion of the marketplace scenario.
	Mix [3]int
	// MemoryLimit is the serve child's --memory-limit ("": serve derives its own).
	MemoryLimit string
	// Allocation is the serve child's --allocation ("": serve's default), so that the
	// policies' offer throughput can be compared on the same market.
	Allocation string
	// CompareAllocation is the number of rounds of the paired comparison of the allocation
	// policies (0: none): before the other phases, on the market as seeded, the offers
	// closed loop against a serve child of each policy on the same market, alternately
	// (see compareAllocation).
	CompareAllocation int
	// CompareBinary is a baseline switchboard binary to compare this one with (""; none):
	// before the other phases, the offers closed loop against a serve child of each on the
	// same market, alternately, in CompareRounds rounds (see compareBinary).
	CompareBinary string
	// CompareRounds is the number of rounds of the comparison with CompareBinary (default 6).
	CompareRounds int
	// Binary is the switchboard binary to run `serve` from (default os.Executable()).
	Binary string
	// Profile runs the server through `switchboard bench _serve`, which is `serve` with a
	// CPU profile taken during the offers maximum-throughput phase (Out/bench/server-cpu.pprof).
	Profile bool
	// ProfilePhase is the closed-loop phase the profile covers instead of offers: "entries"
	// or "callbacks" (the write paths' own costs; "" or "offers": the offers phase); or
	// "entries-joining": the second process's profile from its start until it is ready.
	ProfilePhase string
	// profileFromStart starts the server's profile with the process, not on SIGUSR1.
	profileFromStart bool
	// JoinFull also measures a second process that starts with a full load from the database
	// (entries-joining-full), after the one that starts from the first's snapshot
	// (entries-joining).
	JoinFull bool
	// serveArgs are more flags for `serve`.
	serveArgs []string
	// Statements loads pg_stat_statements and writes each phase's costliest statements to
	// the progress output (a diagnosis aid; not in the report).
	Statements bool
	// SharedBuffers is the bench cluster's shared_buffers ("": 256MB, enough for a month of
	// sessions; a year of them wants a production server's quarter of memory).
	SharedBuffers string
	// WALCompression is the bench cluster's wal_compression ("": PostgreSQL's default, off;
	// lz4 or zstd compress the full-page images an insert at a clean index leaf logs).
	WALCompression string
	Seed           int64
	// Command is the command line, for the report.
	Command string
	// Quick marks a tiny run (tests); the report says so.
	Quick    bool
	Log      *zap.Logger
	Progress io.Writer
}

// QuickOptions are the sizes of `bench --quick`.
func QuickOptions(o Options) Options {
	o.Campaigns, o.Participants = 200, 2000
	o.Duration, o.Warmup = time.Second, 200*time.Millisecond
	o.EngineSizes, o.EngineParticipants = []int{200, 1000}, 200
	o.Quick = true
	return o
}

// DefaultOptions are the sizes of a plain `bench`.
func DefaultOptions() Options {
	return Options{
		Campaigns: 10_000, Participants: 200_000,
		Duration: 10 * time.Second, Warmup: 2 * time.Second,
		RateFractions: []float64{0.25, 0.5, 0.75, 0.9},
		Connections:   32, OpenConnections: 128,
		Out:         "docs",
		History:     true,
		EngineSizes: []int{1_000, 10_000, 100_000}, EngineParticipants: 2_000,
		Mix:      [3]int{100, 5, 4},
		Profile:  true,
		Seed:     1,
		JoinFull: true,
	}
}

// Phase is one measured load phase with the process figures around it.
type Phase struct {
	*Result
	Target      string        // "switchboard" or "floor"
	ServerCPU   time.Duration // CPU of the server process during the phase (warm-up included)
	PostgresCPU time.Duration // CPU of the postmaster and its live backends (lower bound)
	BenchCPU    time.Duration // CPU of this load generator
	Elapsed     time.Duration // wall time of the phase, warm-up included
	// ServerWaiting is the time the server process's threads spent runnable with no core
	// free during the phase (RunQueueWait; warm-up included, 0 when unknown).
	ServerWaiting time.Duration
	RSS, HWM      int64 // server memory after the phase
	// Verdicts are the server's entry decisions during the phase (warm-up included), from
	// switchboard_entries_total on /metrics: "admitted", "refused by engine (not_eligible)",
	// "refused by database (quota)" and so on; nil when /metrics could not be read.
	Verdicts map[string]float64
	// CacheHits and CacheMisses are the server's GET /campaigns answers during the phase
	// (warm-up included) served from its answer cache and computed, from /metrics.
	CacheHits, CacheMisses float64
	// Repeats are the phase's requests (warm-up included) that repeated one it had sent
	// before, when its scenario counts them.
	Repeats uint64
	// Slowest is the second of an open-loop phase against serve with the most requests
	// over SlowLatency, placed in the run (nil: none was slow, or not such a phase).
	Slowest *SlowSecond
}

// SlowSecond is one second of a phase placed on the serve process's clock, with the CPU the
// serve process and PostgreSQL spent in it: what a stall can be set against.
type SlowSecond struct {
	Seconds        float64 // since the serve process started
	Requests, Slow uint64  // Slow: over SlowLatency
	MaxMS          float64
	// ServeCores and PostgresCores are their CPU in that second, in cores (0: unknown).
	ServeCores, PostgresCores float64 `json:",omitempty"`
	// ServeWaiting and PhaseWaiting are the time the serve process's threads waited for a
	// core (runnable, no core free: the load generator and PostgreSQL hold both) in that
	// second and over the phase, in milliseconds per second summed over its threads (0:
	// unknown).
	ServeWaiting, PhaseWaiting float64 `json:",omitempty"`
}

// placeSlowest fills Slowest of the open-loop phases against serve from its trace: the
// samples and the time it started.
func placeSlowest(phases []*Phase, samples []MemorySample, started time.Time) {
	for _, p := range phases {
		i := p.Result.Slowest()
		if p.Target != "switchboard" || p.Mode != "open" || i < 0 {
			continue
		}
		sec := p.Seconds[i]
		at := p.Start.Add(time.Duration(i) * time.Second).Sub(started)
		ss := &SlowSecond{Seconds: at.Seconds(), Requests: sec.Requests, Slow: sec.Slow, MaxMS: ms(int64(sec.Max))}
		if serve, pg, ok := cpuBetween(samples, at, at+time.Second); ok {
			ss.ServeCores, ss.PostgresCores = serve, pg
		}
		if w, ok := waitingBetween(samples, at, at+time.Second); ok {
			ss.ServeWaiting = w
		}
		from := p.Start.Sub(started)
		if w, ok := waitingBetween(samples, from, from+p.Span); ok {
			ss.PhaseWaiting = w
		}
		p.Slowest = ss
	}
}

// WaitingPerSecond is ServerWaiting in milliseconds per second of the phase (0: unknown).
func (p *Phase) WaitingPerSecond() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.ServerWaiting.Microseconds()) / 1e3 / p.Elapsed.Seconds()
}

// CacheHitShare is the share of the phase's offers answers served from the server's answer
// cache (-1: no offers answered, or /metrics not read).
func (p *Phase) CacheHitShare() float64 {
	if all := p.CacheHits + p.CacheMisses; all > 0 {
		return p.CacheHits / all
	}
	return -1
}

// Rate is n requests over the phase's measured span, as Throughput: the window, or less
// when the scenario ran out of URLs or sessions, or more when an open loop fell behind.
func (p *Phase) Rate(n uint64) float64 {
	d := p.Span
	if d <= 0 {
		d = p.Window
	}
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// AdmittedShare is the share of the phase's entry answers that admitted (-1: no entries).
func (p *Phase) AdmittedShare() float64 {
	adm := p.OpCount(OpEntryAdmitted)
	all := adm + p.OpCount(OpEntryRefused) + p.OpCount(OpEntryBlocked)
	if all == 0 {
		return -1
	}
	return float64(adm) / float64(all)
}

// CPUPer1k is the server's CPU seconds per 1,000 requests.
func (p *Phase) CPUPer1k() float64 {
	// The requests counted are those of the window, the CPU is the warm-up's too: scale them
	// to the time the CPU was read over. A phase whose scenario ran out (or whose second
	// process became ready) counted its requests over its span, not its whole window.
	window := p.Window
	if p.Span > 0 && p.Span < window {
		window = p.Span
	}
	n := float64(p.Requests) * float64(p.Elapsed) / float64(max(window, 1))
	if n <= 0 {
		return 0
	}
	return p.ServerCPU.Seconds() / n * 1000
}

// OpCount is the number of requests of operation name in the phase.
func (p *Phase) OpCount(name string) uint64 {
	for _, o := range p.Ops {
		if o.Name == name {
			return o.Requests
		}
	}
	return 0
}

// Report is everything a run measured.
type Report struct {
	Options     Options
	Machine     Machine
	Started     time.Time
	Took        time.Duration
	Seed        SeedStats
	Prewarm     Prewarm // zero: nothing read before the load
	Harvest     *Harvest
	Phases      []*Phase
	Engine      []EngineResult
	ServerRSS   int64 // after loading, before load
	ServerHWM   int64 // peak over the run
	Load        time.Duration
	Notes       []string // what could not be measured, and why
	Profile     string   // path of the server CPU profile, when taken
	FloorSize   int
	EntriesUsed int64 // entry URLs followed, each once
	// JoinReady is how long a second serve process took to be ready beside the loaded one
	// (0: not measured).
	JoinReady time.Duration
	// JoinCPU is the CPU time the second process spent from its start until ready: what its
	// start took from the cores it shares with the first.
	JoinCPU time.Duration
	// JoinReadyFull and JoinCPUFull are JoinReady and JoinCPU of a second process that
	// loaded from the database (Options.JoinFull; 0: not measured).
	JoinReadyFull, JoinCPUFull time.Duration
	// ProfilePhase is the scenario whose closed-loop phase the profile covers.
	ProfilePhase string
	// Year are the sweeper steps, exports and insights reads timed after the load on a
	// database seeded with Options.PastSessions (nil: none seeded).
	Year []YearOp
	// Allocation are the rounds of the paired comparison of the allocation policies
	// (Options.CompareAllocation; nil: not run).
	Allocation []AllocationRound
	// Binaries are the rounds of the paired comparison with a baseline binary
	// (Options.CompareBinary; nil: not run).
	Binaries []BinaryRound
	// Memory is the serve process's RSS sampled every MemoryEvery from its start to its
	// stop; Marks say when each phase (and the other steps of the run) began.
	Memory []MemorySample
	Marks  []RunMark
	// Maintenance is what autovacuum did to each table during the load phases.
	Maintenance []Maintenance
	// Sweeps is what the serve process's sweeps cost during the load phases (nil: its
	// /metrics not read).
	Sweeps *SweepSummary
}

// SweepSummary is the serve process's sweeps over a stretch of the run, from its /metrics:
// how many, their time in all and the part of it releasing stale sessions.
type SweepSummary struct {
	Count                   int64
	Seconds, ReleaseSeconds float64
}

func (r *Report) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// Find returns the phase of scenario and mode (and offered rate for open loop, 0: any).
func (r *Report) Find(scenario, mode string) *Phase {
	for _, p := range r.Phases {
		if p.Scenario == scenario && p.Mode == mode {
			return p
		}
	}
	return nil
}

// Scenario names.
const (
	ScOffers    = "offers"
	ScEntries   = "entries"
	ScMix       = "mix"
	ScCallbacks = "callbacks"
	ScFloor     = "floor"
	// ScOffersDistinct asks for each participant at most once in the phase: no answer
	// comes from the answer cache.
	ScOffersDistinct = "offers-distinct"
	// ScEntriesAlone and ScEntriesJoining are entries at one open-loop rate, before and
	// while a second serve process starts on the same database.
	ScEntriesAlone   = "entries-alone"
	ScEntriesJoining = "entries-joining"
	// ScEntriesJoiningFull is entries while a second process starts with a full load from
	// the database, no snapshot (what a process does when none is available).
	ScEntriesJoiningFull = "entries-joining-full"
)

func (o *Options) progress(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "bench: "+format+"\n", args...)
	}
}

// Run performs a whole benchmark run and writes its report.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		o.Binary = exe
	}
	if o.CompareBinary != "" && o.CompareRounds <= 0 {
		o.CompareRounds = 6
	}
	rep := &Report{Options: o, Machine: DescribeMachine(), Started: time.Now()}
	tmp, err := os.MkdirTemp("", "switchboard-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	// PostgreSQL: throwaway, durable (fsync on), tied to this process.
	o.progress("starting PostgreSQL (fsync on) in %s", tmp)
	pg, err := cluster.Start(ctx, cluster.Options{Dir: filepath.Join(tmp, "pg"), Fsync: true, Attached: true,
		Log:      o.Log.Named("cluster"),
		Settings: pgSettings(o)})
	if err != nil {
		return nil, fmt.Errorf("start PostgreSQL: %w", err)
	}
	defer pg.Remove(context.WithoutCancel(ctx)) //nolint:errcheck
	if err := pg.CreateDatabase(ctx, "bench", ""); err != nil {
		return nil, err
	}
	dbURL := pg.URL("bench")
	rep.Machine.Postgres = postgresVersion(ctx, dbURL)

	o.progress("generating %d campaigns and %d participants", o.Campaigns, o.Participants)
	m := GenerateMarket(o.Campaigns, o.Participants, o.Seed)
	m.PastSessions, m.PartitionDays = o.PastSessions, o.PartitionDays
	o.progress("seeding with COPY")
	if rep.Seed, err = Seed(ctx, dbURL, m, o.History, time.Now(), o.Log.Named("seed")); err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	o.progress("seeded in %s: %v", rep.Seed.Took.Round(time.Millisecond), rep.Seed.Rows)
	var stmts *statements
	if o.Statements {
		if stmts, err = openStatements(ctx, dbURL); err != nil {
			return nil, fmt.Errorf("pg_stat_statements: %w", err)
		}
		defer stmts.close()
	}

	// The paired comparisons run first, on the market as seeded, with no other server
	// running: the entry and callback phases below fill the quotas of the campaigns the
	// main server's policy offers most (each up to its seeded room), and a market one
	// policy has reshaped is not even ground for the other.
	if o.CompareAllocation > 0 || o.CompareBinary != "" {
		pgPID := PostmasterPID(pg.DataDir())
		if o.CompareAllocation > 0 {
			o.progress("comparing the allocation policies' offers in %d rounds", o.CompareAllocation)
			if err := compareAllocation(ctx, o, rep, m, dbURL, tmp, pgPID); err != nil {
				return rep, err
			}
		}
		if o.CompareBinary != "" {
			o.progress("comparing this binary's offers with %s in %d rounds", o.CompareBinary, o.CompareRounds)
			if err := compareBinary(ctx, o, rep, m, dbURL, tmp, pgPID); err != nil {
				return rep, err
			}
		}
	}

	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	profile := ""
	if o.Profile && o.ProfilePhase != ScEntriesJoining {
		profile = filepath.Join(tmp, "server-cpu.pprof")
	}
	// The admin listener serves the snapshot a joining process starts from.
	adminAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	first := o
	first.serveArgs = append(slices.Clone(o.serveArgs), "--admin-addr", adminAddr)
	srv, err := startServer(ctx, first, addr, dbURL, profile, filepath.Join(tmp, "server.log"))
	if err != nil {
		return nil, err
	}
	srv.adminAddr = adminAddr
	defer srv.stop()
	o.progress("server pid %d on %s loaded in %s", srv.cmd.Process.Pid, addr, srv.loaded.Round(time.Millisecond))
	rep.Load = srv.loaded
	st := ReadProc(srv.pid())
	rep.ServerRSS = st.RSS

	// After the server's start-up: read before it, respondents (read first) were read from
	// the disk again in the entries phase (17,764 blocks of its primary key in the run of
	// 21:45 UTC), pushed out of shared buffers by the start-up's own reads.
	if o.PastSessions > 0 && !o.ColdCache {
		if rep.Prewarm, err = prewarm(ctx, dbURL); err != nil {
			return rep, fmt.Errorf("prewarm: %w", err)
		}
		o.progress("read %d relations (%s, %s of it into shared buffers) into memory in %s", rep.Prewarm.Relations,
			mib(rep.Prewarm.Bytes), mib(rep.Prewarm.Buffered), rep.Prewarm.Took.Round(time.Millisecond))
	}
	t := &Target{Addr: addr, PublicURL: "http://" + addr, Market: m}
	pgPID := PostmasterPID(pg.DataDir())
	srv.mem.watchPostgres(pgPID)
	maintBefore, maintErr := readMaintenance(ctx, dbURL)
	metricsClient := NewClient(srv.metricsAddr(addr), 1)
	sweepsBefore := scrapeCounts(metricsClient, srv.metricsAddr(addr))
	if err := runLoad(ctx, o, rep, t, srv, pgPID, profile, stmts); err != nil {
		return rep, err
	}
	if after := scrapeCounts(metricsClient, srv.metricsAddr(addr)); after.verdicts != nil && sweepsBefore.verdicts != nil {
		rep.Sweeps = &SweepSummary{Count: int64(after.sweeps - sweepsBefore.sweeps), Seconds: after.sweepSeconds - sweepsBefore.sweepSeconds,
			ReleaseSeconds: after.releaseSeconds - sweepsBefore.releaseSeconds}
	}
	if maintErr == nil {
		var after map[string]tableMaintenance
		if after, maintErr = readMaintenance(ctx, dbURL); maintErr == nil {
			rep.Maintenance = maintenanceBetween(maintBefore, after, srv.mem.start)
		}
	}
	if maintErr != nil {
		rep.note("autovacuum's runs during the load not read: %v", maintErr)
	}
	if o.PastSessions > 0 {
		o.progress("timing the sweeper, exports and insights on a year of sessions")
		srv.mem.mark("year: sweeper, exports, insights", 0)
		rep.Year = measureYear(ctx, dbURL, t, o.Log.Named("year"))
	}
	if st := ReadProc(srv.pid()); st.Valid {
		rep.ServerHWM = st.HWM
	}
	srv.stop()
	rep.Memory, rep.Marks = srv.mem.finish()
	placeSlowest(rep.Phases, rep.Memory, srv.mem.start)
	if profile != "" {
		if fi, err := os.Stat(profile); err == nil && fi.Size() > 0 {
			dst := filepath.Join(o.Out, "bench", "server-cpu.pprof")
			if err := copyFile(profile, dst); err == nil {
				rep.Profile, rep.ProfilePhase = dst, cmp.Or(o.ProfilePhase, ScOffers)
			}
		} else {
			rep.note("no CPU profile was written by the server child")
		}
	}

	if len(o.EngineSizes) > 0 {
		o.progress("engine match benchmark at %v campaigns", o.EngineSizes)
		rep.Engine = EngineBench(o.EngineSizes, o.EngineParticipants, 3, o.Seed)
	}
	rep.Took = time.Since(rep.Started)
	if err := WriteReport(o.Out, rep); err != nil {
		return rep, err
	}
	o.progress("report written to %s (run took %s)", filepath.Join(o.Out, "performance.md"), rep.Took.Round(time.Second))
	return rep, nil
}

// runLoad runs every load phase against the server (and the floor).
func runLoad(ctx context.Context, o Options, rep *Report, t *Target, srv *server, pgPID int, profile string, stmts *statements) error {
	client := NewClient(t.Addr, max(o.Connections, o.OpenConnections))
	metricsAddr := srv.metricsAddr(t.Addr)
	metrics := NewClient(metricsAddr, 1)
	phase := func(target string, pid int, l Load, s *Scenario) *Phase {
		if ctx.Err() != nil { // stopped: the phase running finishes, no other starts
			return &Phase{Result: &Result{Scenario: s.Name}, Target: target}
		}
		if l.Duration == 0 { // else the caller chose the window and its warm-up
			l.Duration, l.Warmup = o.Duration, o.Warmup
		}
		l.Client, l.Seed = client, uint64(o.Seed)+uint64(len(rep.Phases))
		c := metrics
		if target == "floor" {
			l.Client, c = srv.floorClient, nil
		}
		stmts.reset(ctx)
		switch {
		case target != "floor":
			label := s.Name + " max"
			if l.Rate > 0 {
				label = fmt.Sprintf("%s %.0f/s", s.Name, l.Rate)
			}
			srv.mem.mark(label, 0)
		case l.Rate <= 0:
			srv.mem.mark("floor (its own process)", 0)
		}
		p := measure(c, metricsAddr, pid, pgPID, l, s)
		p.Target = target
		r := p.Result
		rep.Phases = append(rep.Phases, p)
		rate := "max"
		if r.Mode == "open" {
			rate = fmt.Sprintf("%.0f/s", r.Offered)
		}
		o.progress("%-8s %-6s %-8s %9.0f req/s  p50 %7.2f ms  p99 %7.2f ms  p99.9 %7.2f ms  errors %d  [%s]",
			s.Name, r.Mode, rate, r.Throughput, r.P(0.5), r.P(0.99), r.P(0.999), r.Errors, describeStatus(r.Status))
		if share := p.AdmittedShare(); share >= 0 {
			o.progress("  entries: %.0f admitted/s, %.0f refused/s (%.1f%% admitted); server verdicts %s",
				p.Rate(p.OpCount(OpEntryAdmitted)), p.Rate(p.OpCount(OpEntryRefused)+p.OpCount(OpEntryBlocked)), 100*share,
				describeVerdicts(p.Verdicts))
		}
		if n := p.OpCount(OpCallbackDone); n > 0 {
			o.progress("  callbacks: %.0f completes/s", p.Rate(n))
		}
		if h := p.CacheHitShare(); h >= 0 {
			o.progress("  offers: %.1f%% of %.0f answers from the answer cache", 100*h, p.CacheHits+p.CacheMisses)
		}
		if p.Repeats > 0 {
			o.progress("  %d requests repeated a participant the phase had asked for: the panel wrapped around", p.Repeats)
			rep.note("%s %s: %d of its requests repeated a participant it had asked for (the panel of %d is smaller than the phase), so some of its answers may come from the answer cache",
				s.Name, r.Mode, p.Repeats, len(t.Market.Participants))
		}
		if target != "floor" {
			for _, line := range stmts.top(ctx, r.Requests) {
				o.progress("  %s", line)
			}
		}
		return p
	}
	closed := Load{Workers: o.Connections}
	open := func(rate float64) Load { return Load{Workers: o.OpenConnections, Rate: rate} }
	// startFloor starts the floor: same client, same requests, a fixed body of the offers
	// answer's size (the harvest's median).
	startFloor := func() bool {
		rep.FloorSize = 2500
		if rep.Harvest != nil && rep.Harvest.MedianBytes > 0 {
			rep.FloorSize = rep.Harvest.MedianBytes
		}
		if err := srv.startFloor(ctx, o, rep.FloorSize); err != nil {
			rep.note("the floor server did not start: %v", err)
			return false
		}
		return true
	}

	// Is the supply interface served at all?
	probe := probeOffers(client, t)
	if probe != "" {
		rep.note("GET /supply_api/v4/campaigns is not usable at this commit (%s): the offers, entries and mix scenarios were skipped", probe)
	}

	offersMax := 0.0
	var rates []float64
	if probe == "" {
		// Harvest offer entry URLs for the entry phases, each to be used once: enough for the
		// entry phases at up to 8,000/s (a phase that runs out ends early, and says so).
		// And the joining phases' at JoinRate.
		entryWindow := (o.Duration + o.Warmup).Seconds() * 2.5
		joinWindow := joinSpan(o).Seconds()
		want := max(2000, int(8000*entryWindow+JoinRate*joinWindow))
		// A small panel gives more URLs per participant (up to maxEntryPerParticipant) so
		// that the entry phases do not run out on a fast machine.
		n := max(len(t.Market.Participants), 1)
		per := min(max(entryPerParticipant, (want+n-1)/n), maxEntryPerParticipant)
		want = min(want, per*n)
		o.progress("harvesting up to %d offer entry URLs", want)
		rep.Harvest = t.HarvestEntries(client, o.Connections, want, per, max(20*time.Second, 4*o.Duration)+joinURLWindow, uint64(o.Seed))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		o.progress("harvested %d entry URLs for %d participants and %d campaigns from %d answers in %s (median answer %d bytes, %.1f offers each, %.0f%% eligible)",
			len(rep.Harvest.Entries), rep.Harvest.Participants, rep.Harvest.Campaigns, rep.Harvest.Requests,
			rep.Harvest.Took.Round(time.Millisecond), rep.Harvest.MedianBytes, rep.Harvest.MeanOffers, 100*rep.Harvest.EligibleShare)

		profiled := func(name string, run func() *Phase) *Phase {
			on := profile != "" && (name == o.ProfilePhase || name == ScOffers && o.ProfilePhase == "")
			if on {
				srv.signal(syscall.SIGUSR1)
			}
			p := run()
			if on {
				srv.signal(syscall.SIGUSR2)
			}
			return p
		}
		// The floor's phases run beside the offers phases they are compared with: its
		// maximum just before theirs, each open-loop rate right after the offers' at that
		// rate. Measured minutes apart (the floor last), the two throughputs of one ratio
		// came from a machine in two states: between two 10k runs of one afternoon the
		// offers' share fell from 68% to 44% while their own rate rose (26.7k to 29.8k
		// req/s), the floor's having gone from 39k to 68k.
		floorUp := startFloor()
		if floorUp {
			phase("floor", srv.floor.Process.Pid, closed, t.FloorScenario(ScFloor))
		}
		p := profiled(ScOffers, func() *Phase { return phase("switchboard", srv.pid(), closed, t.OffersScenario(ScOffers)) })
		offersMax = p.Throughput
		phase("switchboard", srv.pid(), closed, t.OffersDistinctScenario(ScOffersDistinct, uint64(o.Seed)+17))
		rates = o.Rates
		if len(rates) == 0 {
			for _, f := range o.RateFractions {
				rates = append(rates, roundRate(f*offersMax))
			}
		}
		for _, r := range rates {
			if r > 0 {
				phase("switchboard", srv.pid(), open(r), t.OffersScenario(ScOffers))
				if floorUp {
					phase("floor", srv.floor.Process.Pid, open(r), t.FloorScenario(ScFloor))
				}
			}
		}
		srv.stopFloor()

		sessions := &Sessions{max: 1 << 20}
		if len(rep.Harvest.Entries) == 0 {
			rep.note("no offers were harvested (no participant matched any campaign): entries and mix skipped")
		} else {
			// The joining phases' URLs are set aside first: on a fast machine the phases
			// before them would use up the harvest and leave them nothing to measure. They
			// may take seven tenths of it: at 100k campaigns the harvest is bounded by the
			// campaigns' rooms (about 235,000 URLs with quota targets ×10 when every
			// participant is asked), the joining phases need 160,000–220,000 at JoinRate (a
			// start of 2m35s–3m42s), and the entries and mix phases used 61,000 at 4,800 admitted
			// entries/s (2026-12-02); with half, the join's share once ran out 52–56 s into
			// a 62–65-s start.
			all := rep.Harvest.Entries
			reserve := min(len(all)*7/10, int(JoinRate*joinSpan(o).Seconds()))
			entries, joining := NewEntries(all[:len(all)-reserve]), NewEntries(all[len(all)-reserve:])
			ep := profiled(ScEntries, func() *Phase {
				return phase("switchboard", srv.pid(), closed, t.EntriesScenario(ScEntries, entries, sessions))
			})
			if r := targetOrHalf(ep.Rate(ep.OpCount(OpEntryAdmitted)), TargetEntriesPerSec); r > 0 && entries.Left() > 0 {
				phase("switchboard", srv.pid(), open(r), t.EntriesScenario(ScEntries, entries, sessions))
			}
			mp := phase("switchboard", srv.pid(), closed, t.MixScenario(ScMix, o.Mix[0], o.Mix[1], o.Mix[2], entries, sessions))
			if r := roundRate(mp.Throughput / 2); r > 0 {
				phase("switchboard", srv.pid(), open(r), t.MixScenario(ScMix, o.Mix[0], o.Mix[1], o.Mix[2], entries, sessions))
			}
			if entries.Left() == 0 {
				rep.note("the %d harvested entry URLs for the entries and mix phases ran out (each is used once; %d more were set aside for the joining phases): a phase that ran out ended early and its rates are over the time it ran; the mix sent offers requests in place of its entries after that",
					len(all)-reserve, reserve)
			}
			if joining.Left() > 0 && ctx.Err() == nil {
				joinPhases(ctx, o, rep, t, srv, ep, joining, sessions, func(l Load, s *Scenario) { phase("switchboard", srv.pid(), l, s) })
			}
			rep.EntriesUsed = entries.Used() + joining.Used()
			if sessions.Len() == 0 {
				rep.note("no admitted session was left for the callbacks phase")
			} else {
				// Half of the admitted sessions are kept for the open-loop phase: each is
				// completed once, and the closed loop can answer all of them.
				later := sessions.split()
				cp := profiled(ScCallbacks, func() *Phase {
					return phase("switchboard", srv.pid(), closed, t.CallbacksScenario(ScCallbacks, sessions))
				})
				if r := targetOrHalf(cp.Rate(cp.OpCount(OpCallbackDone)), TargetCallbacksPerSec); r > 0 && later.Len() > 0 {
					phase("switchboard", srv.pid(), open(r), t.CallbacksScenario(ScCallbacks, later))
				}
			}
		}
	}

	if ctx.Err() != nil || probe == "" {
		return ctx.Err()
	}
	// No offers phase ran: the floor alone, at its own maximum and fractions of it.
	if !startFloor() {
		return nil
	}
	fp := phase("floor", srv.floor.Process.Pid, closed, t.FloorScenario(ScFloor))
	for _, f := range o.RateFractions {
		if r := roundRate(f * fp.Throughput); r > 0 {
			phase("floor", srv.floor.Process.Pid, open(r), t.FloorScenario(ScFloor))
		}
	}
	srv.stopFloor()
	return ctx.Err()
}

// measure drives scenario s with load l against process pid and reads the process figures
// around it: CPU and memory of pid, CPU of PostgreSQL (pgPID and its backends) and of this
// process, and the entry verdicts the server at addr counted (client nil: pid is not a
// serve process, neither PostgreSQL nor verdicts are read).
func measure(client *fasthttp.HostClient, addr string, pid, pgPID int, l Load, s *Scenario) *Phase {
	var before0 serverCounts
	if client != nil {
		before0 = scrapeCounts(client, addr)
	}
	before, pgBefore, selfBefore, t0 := ReadProc(pid), TreeCPU(pgPID), SelfCPU(), time.Now()
	waitBefore, waitOK := RunQueueWait(pid)
	r := Drive(l, s)
	after := ReadProc(pid)
	p := &Phase{Result: r, ServerCPU: after.CPU - before.CPU, BenchCPU: SelfCPU() - selfBefore,
		Elapsed: time.Since(t0), RSS: after.RSS, HWM: after.HWM}
	if waitAfter, ok := RunQueueWait(pid); ok && waitOK {
		p.ServerWaiting = max(0, waitAfter-waitBefore)
	}
	if s.Repeats != nil {
		p.Repeats = s.Repeats()
	}
	if client == nil {
		return p
	}
	p.PostgresCPU = max(0, TreeCPU(pgPID)-pgBefore)
	if after := scrapeCounts(client, addr); after.verdicts != nil && before0.verdicts != nil {
		p.Verdicts = map[string]float64{}
		for k, v := range after.verdicts {
			if d := v - before0.verdicts[k]; d > 0 {
				p.Verdicts[k] = d
			}
		}
		p.CacheHits, p.CacheMisses = after.cacheHits-before0.cacheHits, after.cacheMisses-before0.cacheMisses
	}
	return p
}

// JoinRate is the most entries/s the joining phases offer: they must last through a second
// process's start, each URL used once.
const JoinRate = 1000

// joinURLWindow is how long the entry URLs set aside for the joining phase last at JoinRate:
// the phase runs until the second process is ready (a joining process loads gently: at
// 100,000 campaigns and a million participants 45–95 s at a quarter of the clock, 2m35s–3m42s
// at serve's default tenth), or until they run out, which the report says.
const joinURLWindow = 3 * time.Minute

// joinSpan is how long the joining phases run at most on the entry URLs set aside for them:
// the window alone, the start from a snapshot (three windows), and the start with a full
// load (Options.JoinFull).
func joinSpan(o Options) time.Duration {
	d := o.Warmup + o.Duration + 3*o.Duration
	if o.JoinFull {
		d += max(3*o.Duration, joinURLWindow)
	}
	return d
}

// joinWindowMax bounds the joining phase when the second process is slow to be ready.
const joinWindowMax = 10 * time.Minute

// joinPhases measures what a second serve process starting on the same database does to
// the first one's entries: entries at one open-loop rate for a window with the first alone,
// then from the second's start until it is ready, three windows at least, so that the figure
// covers the whole start, not its first seconds: first a second process that starts from the
// first's snapshot (serve --snapshot-peer, entries-joining), then, with Options.JoinFull, one
// that loads everything from PostgreSQL (entries-joining-full). Each second process is
// stopped afterwards; the time it took to be ready is reported.
func joinPhases(ctx context.Context, o Options, rep *Report, t *Target, srv *server, ep *Phase, entries *Entries, sessions *Sessions, phase func(Load, *Scenario)) {
	rate := min(JoinRate, roundRate(ep.Rate(ep.OpCount(OpEntryAdmitted))/2))
	if rate <= 0 {
		return
	}
	open := Load{Workers: o.OpenConnections, Rate: rate}
	phase(open, t.EntriesScenario(ScEntriesAlone, entries, sessions))
	if srv.adminAddr != "" {
		ready, cpu, ok := joinOnce(ctx, o, rep, t, srv, open, entries, sessions, phase, ScEntriesJoining,
			[]string{"--snapshot-peer", srv.adminAddr}, "server2.log")
		if !ok {
			return
		}
		rep.JoinReady, rep.JoinCPU = ready, cpu
		if strings.Contains(tail(filepath.Join(filepath.Dir(srv.logPath), "server2.log")), "snapshot refused") {
			rep.note("the second process refused the first's snapshot and loaded from the database: %s",
				tail(filepath.Join(filepath.Dir(srv.logPath), "server2.log")))
		}
	}
	if o.JoinFull {
		if entries.Left() == 0 {
			rep.note("no entry URL was left for the joining phase with a full load (%s)", ScEntriesJoiningFull)
			return
		}
		ready, cpu, ok := joinOnce(ctx, o, rep, t, srv, open, entries, sessions, phase, ScEntriesJoiningFull, nil, "server2-full.log")
		if ok {
			rep.JoinReadyFull, rep.JoinCPUFull = ready, cpu
		}
	}
}

// joinOnce starts a second serve process with more flags, runs entries (scenario name) at
// open from its start until it is ready, stops it, and returns how long it took to be ready
// and the CPU it spent until then.
func joinOnce(ctx context.Context, o Options, rep *Report, t *Target, srv *server, open Load, entries *Entries, sessions *Sessions,
	phase func(Load, *Scenario), name string, args []string, logName string) (time.Duration, time.Duration, bool) {
	if ctx.Err() != nil {
		return 0, 0, false
	}
	addr, err := freeAddr()
	if err != nil {
		rep.note("no address for the second process: %v", err)
		return 0, 0, false
	}
	type started struct {
		s   *server
		cpu time.Duration // from its start until ready
		err error
	}
	ch := make(chan started, 1)
	second := o
	second.Profile = false
	second.serveArgs = append(slices.Clone(o.serveArgs), args...)
	profile := ""
	if o.Profile && o.ProfilePhase == name {
		profile, second.profileFromStart = filepath.Join(filepath.Dir(srv.logPath), "joiner-cpu.pprof"), true
	}
	var ready atomic.Bool
	go func() {
		s, err := startServer(ctx, second, addr, srv.dbURL, profile, filepath.Join(filepath.Dir(srv.logPath), logName))
		var cpu time.Duration
		if err == nil {
			cpu = TreeCPU(s.pid())
			if profile != "" {
				s.signal(syscall.SIGUSR2) // the profile covers its start only
			}
		}
		ready.Store(true)
		ch <- started{s, cpu, err}
	}()
	open.Duration, open.Warmup = joinWindowMax, 0
	phase(open, untilReady(t.EntriesScenario(name, entries, sessions), &ready, time.Now().Add(3*o.Duration)))
	select {
	case st := <-ch:
		if st.err != nil {
			rep.note("the second process did not start: %v", st.err)
			return 0, 0, false
		}
		st.s.stop()
		if profile != "" {
			dst := filepath.Join(o.Out, "bench", "server-cpu.pprof")
			if err := copyFile(profile, dst); err == nil {
				rep.Profile, rep.ProfilePhase = dst, name
			} else {
				rep.note("the second process's CPU profile was not kept: %v", err)
			}
		}
		return st.s.loaded, st.cpu, true
	case <-time.After(10 * time.Minute):
		rep.note("the second process was not ready within 10 minutes")
		return 0, 0, false
	}
}

// untilReady is s ending (Exhausted) once ready is set and not before notBefore.
func untilReady(s *Scenario, ready *atomic.Bool, notBefore time.Time) *Scenario {
	next := s.Prepare
	c := *s
	c.Prepare = func(w *Worker) int {
		if ready.Load() && !time.Now().Before(notBefore) {
			return Exhausted
		}
		return next(w)
	}
	return &c
}

// targetOrHalf is the open-loop rate of a write phase whose closed-loop maximum was max:
// the target rate when the maximum reaches it (its latency there is a target too), else
// half the maximum.
func targetOrHalf(max, target float64) float64 {
	if max >= target {
		return target
	}
	return roundRate(max / 2)
}

// entryPerParticipant is how many offer entry URLs the harvest keeps of one participant's
// offers answer when the panel is large enough; maxEntryPerParticipant when it is not.
const entryPerParticipant, maxEntryPerParticipant = 4, 16

// serverCounts are the counters of the server's /metrics a phase reads before and after
// itself.
type serverCounts struct {
	verdicts               map[string]float64 // switchboard_entries_total by its labels; nil: not read
	cacheHits, cacheMisses float64            // switchboard_offers_cache_{hits,misses}_total
	// switchboard_sweeps_total, switchboard_sweep_seconds_total and
	// switchboard_sweep_release_seconds_total
	sweeps, sweepSeconds, releaseSeconds float64
}

// scrapeCounts reads the server's /metrics (verdicts nil when it cannot).
func scrapeCounts(c *fasthttp.HostClient, addr string) serverCounts {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("/metrics")
	req.Header.SetHost(addr)
	if err := c.DoTimeout(req, resp, 10*time.Second); err != nil || resp.StatusCode() != fasthttp.StatusOK {
		return serverCounts{}
	}
	text := string(resp.Body())
	return serverCounts{verdicts: parseVerdicts(text), cacheHits: parseCounter(text, "switchboard_offers_cache_hits_total"),
		cacheMisses: parseCounter(text, "switchboard_offers_cache_misses_total"), sweeps: parseCounter(text, "switchboard_sweeps_total"),
		sweepSeconds: parseCounter(text, "switchboard_sweep_seconds_total"), releaseSeconds: parseCounter(text, "switchboard_sweep_release_seconds_total")}
}

// parseCounter returns the value of the unlabelled sample name in a Prometheus text
// exposition (0 when absent).
func parseCounter(text, name string) float64 {
	for line := range strings.SplitSeq(text, "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			v, _ := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v
		}
	}
	return 0
}

// parseVerdicts picks the switchboard_entries_total samples out of a Prometheus text
// exposition: `switchboard_entries_total{verdict="refused",by="database",reason="quota"} 12`
// becomes "refused by database (quota)": 12.
func parseVerdicts(text string) map[string]float64 {
	const name = "switchboard_entries_total{"
	out := map[string]float64{}
	for line := range strings.SplitSeq(text, "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		l := map[string]string{}
		for kv := range strings.SplitSeq(labels, ",") {
			if k, val, ok := strings.Cut(kv, "="); ok {
				l[k] = strings.Trim(val, `"`)
			}
		}
		key := l["verdict"]
		if l["by"] != "" {
			key += " by " + l["by"] + " (" + l["reason"] + ")"
		}
		out[key] += v
	}
	return out
}

// describeVerdicts renders verdicts as "admitted 123, refused by engine (not_eligible) 4".
func describeVerdicts(m map[string]float64) string {
	if m == nil {
		return "not read"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// roundRate rounds a rate to two significant digits.
func roundRate(r float64) float64 {
	if r <= 0 {
		return 0
	}
	f, _ := strconv.ParseFloat(strconv.FormatFloat(r, 'g', 2, 64), 64)
	return f
}

// probeOffers returns "" when GET /campaigns answers 200 for a seeded participant.
func probeOffers(c *fasthttp.HostClient, t *Target) string {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	t.setOffersRequest(req, &t.Market.Participants[0], nil)
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := c.DoTimeout(req, resp, 10*time.Second)
		switch {
		case err != nil:
			return err.Error()
		case resp.StatusCode() == fasthttp.StatusNotFound:
			return "404: the route is not registered"
		case resp.StatusCode() != fasthttp.StatusOK:
			return fmt.Sprintf("status %d: %.200s", resp.StatusCode(), resp.Body())
		case strings.Contains(string(resp.Body()), `"identifier":"profile"`) && time.Now().Before(deadline):
			// The panel is still loading: the participant looks unprofiled.
			time.Sleep(200 * time.Millisecond)
			continue
		}
		return ""
	}
}

func postgresVersion(ctx context.Context, url string) string {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return "unknown"
	}
	defer conn.Close(ctx)
	var v string
	if conn.QueryRow(ctx, `SELECT version()`).Scan(&v) != nil {
		return "unknown"
	}
	if i := strings.Index(v, " on "); i > 0 {
		v = v[:i]
	}
	return v
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// server is the `switchboard serve` child and the floor child.
type server struct {
	cmd         *exec.Cmd
	done        chan struct{}
	logPath     string
	dbURL       string
	loaded      time.Duration
	floor       *exec.Cmd
	floorClient *fasthttp.HostClient
	mem         *memoryTrace // its resident memory from its start
	adminAddr   string       // its --admin-addr ("": none)
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// metricsAddr is where the server serves /metrics: its admin listener, else addr.
func (s *server) metricsAddr(addr string) string {
	if s.adminAddr != "" {
		return s.adminAddr
	}
	return addr
}

func (s *server) signal(sig syscall.Signal) { _ = s.cmd.Process.Signal(sig) }

// stop ends the server with SIGTERM (a graceful shutdown), SIGKILL after 20 s.
func (s *server) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.mem.finish()
	s.stopFloor()
}

func startServer(ctx context.Context, o Options, addr, dbURL, profile, logPath string) (*server, error) {
	// The speeder rule is off: the bench answers sessions seconds after their entry, so every
	// complete would be a speeder (a quality signal, its own durable transaction, and soon a
	// blocked participant), where a real marketplace has a few (docs/quality.md).
	args := []string{"serve", "--addr", addr, "--database-url", dbURL, "--rate-limit", "-1", "--publisher-rate-limit", "-1",
		"--speeder-fraction", "-1"}
	if o.MemoryLimit != "" {
		args = append(args, "--memory-limit", o.MemoryLimit)
	}
	if o.Allocation != "" {
		args = append(args, "--allocation", o.Allocation)
	}
	args = append(args, o.serveArgs...)
	if profile != "" {
		wrap := []string{"bench", "_serve", "--cpu-profile", profile}
		if o.profileFromStart {
			wrap = append(wrap, "--cpu-profile-from-start")
		}
		args = append(append(wrap, "--"), args...)
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(o.Binary, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "SWITCHBOARD_LOG_LEVEL=warn")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	o.progress("starting %s %s", o.Binary, strings.Join(args, " "))
	start := time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	s := &server{cmd: cmd, done: make(chan struct{}), logPath: logPath, dbURL: dbURL,
		mem: traceMemory(cmd.Process.Pid, start, MemoryEvery)}
	go func() { _ = cmd.Wait(); logf.Close(); close(s.done) }()
	c := NewClient(addr, 1)
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("/readyz")
	req.Header.SetHost(addr)
	deadline := time.Now().Add(10 * time.Minute)
	for {
		select {
		case <-s.done:
			return nil, fmt.Errorf("server exited before ready: %s", tail(logPath))
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		default:
		}
		if err := c.DoTimeout(req, resp, 5*time.Second); err == nil && resp.StatusCode() == fasthttp.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, errors.New("server not ready after 10 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.loaded = time.Since(start)
	s.mem.mark("ready", s.loaded)
	return s, nil
}

// startFloor runs `switchboard bench _floor` answering a body of size bytes. The listening
// socket is opened here and handed to the child, so no other process can take the port
// between choosing it and serving on it (a loaded machine runs many tests at once).
func (s *server) startFloor(ctx context.Context, o Options, size int) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	f, err := ln.(*net.TCPListener).File()
	addr := ln.Addr().String()
	ln.Close() // the child holds its own copy of the socket through f
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.Command(o.Binary, "bench", "_floor", "--inherited-listener", "--bytes", strconv.Itoa(size))
	cmd.ExtraFiles = []*os.File{f}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	s.floor = cmd
	s.floorClient = NewClient(addr, max(o.Connections, o.OpenConnections))
	_ = ctx
	return nil
}

func (s *server) stopFloor() {
	if s.floor == nil {
		return
	}
	_ = s.floor.Process.Kill()
	_ = s.floor.Wait()
	s.floor = nil
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
