package bench

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite bench/testdata/report/*")

// goldenPhase is a phase of fixed figures: n requests at latencies lat, lat+step, ...
func goldenPhase(sc, mode, target string, rate, tput float64, n, lat, step int64, ops ...OpResult) *Phase {
	h := NewHistogram()
	for i := range n {
		h.Record(lat + i*step)
	}
	secs := []Second{{Requests: 10, Slow: 1, Max: 7 * time.Millisecond}, {Requests: 12, Slow: 3, Max: 9 * time.Millisecond}}
	return &Phase{Result: &Result{Scenario: sc, Mode: mode, Offered: rate, Throughput: tput, Window: 5 * time.Second,
		Span: 5 * time.Second, Requests: uint64(n), Errors: 2, Hist: h, Status: map[int]uint64{200: uint64(n) - 2, 503: 2},
		Ops: ops, Start: time.Unix(1_800_000_010, 0), Seconds: secs},
		Target: target, ServerCPU: 3 * time.Second, PostgresCPU: 2 * time.Second, BenchCPU: time.Second,
		Elapsed: 6 * time.Second, ServerWaiting: 120 * time.Millisecond, RSS: 300 << 20, HWM: 320 << 20,
		Verdicts: map[string]float64{"admitted": 900, "refused by database (quota)": 40}, CacheHits: 300, CacheMisses: 700}
}

// goldenOps are the operations of a write phase: admitted, refused and completed.
func goldenOps(n uint64) []OpResult {
	h := NewHistogram()
	for i := range int64(n) {
		h.Record(2e6 + i*5000)
	}
	return []OpResult{{Name: OpEntryAdmitted, Requests: n, Hist: h}, {Name: OpEntryRefused, Requests: n / 10, Errors: 1, Hist: h},
		{Name: OpCallbackDone, Requests: n / 2, Hist: h}}
}

// goldenReport is a report with every section of performance.md filled.
func goldenReport() *Report {
	o := DefaultOptions()
	o.Rates, o.PastSessions, o.CompareBinary, o.Command = []float64{5000}, 2_000_000, "bin/switchboard-base", "switchboard bench --golden"
	offers := goldenPhase(ScOffers, "closed", "switchboard", 0, 20000, 2000, 1e6, 1000)
	offers.Ops = []OpResult{{Name: OpOffers, Requests: 2000, Hist: offers.Hist}}
	half := goldenPhase(ScOffers, "open", "switchboard", 10000, 9990, 1000, 5e5, 3000)
	half.Slowest = &SlowSecond{Seconds: 42.5, Requests: 12, Slow: 3, MaxMS: 9, ServeCores: 1.2, PostgresCores: 0.4, ServeWaiting: 80, PhaseWaiting: 20}
	entries := goldenPhase(ScEntries, "closed", "switchboard", 0, 6000, 3000, 3e6, 2000, goldenOps(3000)...)
	entriesOpen := goldenPhase(ScEntries, "open", "switchboard", TargetEntriesPerSec, 4990, 3000, 3e6, 4000, goldenOps(3000)...)
	callbacks := goldenPhase(ScCallbacks, "closed", "switchboard", 0, 4000, 2000, 2e6, 2000, goldenOps(2000)...)
	callbacksOpen := goldenPhase(ScCallbacks, "open", "switchboard", TargetCallbacksPerSec, 2990, 2000, 2e6, 9000, goldenOps(2000)...)
	callbacksOpen.Span = 2 * time.Second
	alone := goldenPhase(ScEntriesAlone, "open", "switchboard", 1000, 999, 1000, 2e6, 1000, goldenOps(1000)...)
	joining := goldenPhase(ScEntriesJoining, "open", "switchboard", 1000, 998, 1000, 2e6, 30000, goldenOps(1000)...)
	joining.Span = 40 * time.Second
	full := goldenPhase(ScEntriesJoiningFull, "open", "switchboard", 1000, 997, 1000, 2e6, 50000, goldenOps(1000)...)
	full.Span = 10 * time.Second
	full.Repeats = 7
	phases := []*Phase{
		goldenPhase(ScFloor, "closed", "floor", 0, 40000, 2000, 5e5, 500),
		offers,
		goldenPhase(ScOffersDistinct, "closed", "switchboard", 0, 18000, 2000, 1.2e6, 1000),
		half,
		goldenPhase(ScFloor, "open", "floor", 10000, 10000, 1000, 3e5, 200),
		entries, entriesOpen,
		goldenPhase(ScMix, "closed", "switchboard", 0, 15000, 2000, 1e6, 1500, goldenOps(300)...),
		alone, joining, full, callbacks, callbacksOpen,
	}
	pair := func(a, b float64) [2]*Phase {
		return [2]*Phase{goldenPhase(ScOffers, "closed", "switchboard", 0, a, 1000, 1e6, 1000),
			goldenPhase(ScOffers, "closed", "switchboard", 0, b, 1000, 1.1e6, 1000)}
	}
	p1, p2 := pair(20000, 19500), pair(21000, 19000)
	return &Report{
		Options: o,
		Machine: Machine{CPUs: 2, Model: "Golden CPU", MemTotal: 8 << 30, GoVersion: "go1.golden", Postgres: "PostgreSQL 17", Kernel: "6.0"},
		Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Took: 754 * time.Second,
		Seed:    SeedStats{Rows: map[string]int64{"campaigns": 10000, "participants": 200000, "sessions": 2_000_000}, Took: 95 * time.Second},
		Prewarm: Prewarm{Relations: 12, Bytes: 900 << 20, Buffered: 200 << 20, Took: 3 * time.Second},
		Harvest: &Harvest{Entries: make([]EntryURL, 5000), Requests: 2500, Participants: 1200, Campaigns: 800, PerParticipant: 4,
			MedianBytes: 2412, MeanOffers: 17.5, EligibleShare: 0.93},
		Phases: phases,
		Engine: []EngineResult{{Campaigns: 1000, Build: 40 * time.Millisecond, P50: 3000, P90: 5000, P99: 9000, Mean: 3500, MeanOffers: 12, HeapBytes: 30 << 20},
			{Campaigns: 10000, Build: 400 * time.Millisecond, P50: 20000, P90: 30000, P99: 50000, Mean: 22000, MeanOffers: 25, HeapBytes: 300 << 20}},
		ServerRSS: 250 << 20, ServerHWM: 700 << 20, Load: 4 * time.Second,
		Notes:   []string{"a note", "another note"},
		Profile: "docs/bench/server-cpu.pprof", ProfilePhase: ScOffers, FloorSize: 2412, EntriesUsed: 4100,
		JoinReady: 35 * time.Second, JoinCPU: 20 * time.Second, JoinReadyFull: 12 * time.Second, JoinCPUFull: 9 * time.Second,
		Year: []YearOp{{Name: "sweeper: release", Took: 12 * time.Millisecond, Size: 3, Unit: "campaigns"},
			{Name: "export", Took: 2 * time.Second, Err: "status 500"}},
		Allocation: []AllocationRound{{Greedy: p1[0], Balanced: p1[1]}, {Greedy: p2[1], Balanced: p2[0]}},
		Binaries:   []BinaryRound{{Baseline: p1[0], This: p1[1]}},
		Memory: []MemorySample{{At: 0, RSS: 100 << 20}, {At: time.Second, RSS: 300 << 20, CPU: time.Second},
			{At: 2 * time.Second, RSS: 700 << 20, CPU: 2 * time.Second}, {At: 3 * time.Second, RSS: 600 << 20, CPU: 3 * time.Second}},
		Marks:       []RunMark{{At: 500 * time.Millisecond, Name: "ready"}, {At: 1500 * time.Millisecond, Name: "offers max"}},
		Maintenance: []Maintenance{{Table: "sessions", Vacuums: 1, Analyzes: 2, LastVacuumSeconds: 12.5, LastAnalyzeSeconds: 30}, {Table: "respondents", Analyzes: 1, LastAnalyzeSeconds: 8}},
		Sweeps:      &SweepSummary{Count: 40, Seconds: 2.5, ReleaseSeconds: 1.25},
	}
}

// The report a run writes (performance.md's section, its charts, results.json and the
// targets) is exactly that of testdata/report for the same figures: what it says is
// changed on purpose only (go test ./bench -run TestReportGolden -update).
func TestReportGolden(t *testing.T) {
	for _, variant := range []string{"full", "quick", "huge"} {
		r := goldenReport()
		dir := filepath.Join("testdata", "report", variant)
		switch variant {
		case "quick":
			r.Options.Quick, r.Profile, r.ProfilePhase, r.Allocation = true, "docs/bench/server-cpu.pprof", ScEntriesJoining, nil
			r.Prewarm, r.Harvest = Prewarm{}, nil
		case "huge": // the sizes of the memory target, no profile, no second process
			r.Options.Campaigns, r.Options.Participants, r.Options.JoinFull = 100_000, 10_000_000, false
			r.ServerHWM, r.Profile, r.JoinReady, r.Load, r.Memory, r.Binaries = 3<<30, "", 0, 0, nil, nil
		}
		out := t.TempDir()
		if err := WriteReport(out, r); err != nil {
			t.Fatal(err)
		}
		files, err := filepath.Glob(filepath.Join(out, "bench", "*"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, filepath.Join(out, "performance.md"))
		if *update {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range files {
			got, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join(dir, filepath.Base(f))
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from %s:\n%s", f, golden, got)
			}
		}
		if have, _ := filepath.Glob(filepath.Join(dir, "*")); len(have) != len(files) {
			t.Errorf("%s holds %d files, the report wrote %d", dir, len(have), len(files))
		}
	}
}
