package bench

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Markers delimit the generated section of performance.md; text outside them is kept.
const (
	MarkerStart = "<!-- bench:start -->"
	MarkerEnd   = "<!-- bench:end -->"
)

// Targets checked by every run (docs/performance.md).
const (
	// TargetOffersVsFloor is GET /campaigns' closed-loop throughput against the floor's at
	// 10,000 campaigns; TargetOffersVsFloorLarge from 100,000 campaigns.
	TargetOffersVsFloor      = 0.60
	TargetOffersVsFloorLarge = 0.45
	// TargetP99VsFloor bounds GET /campaigns' closed-loop p99 against the floor's at the same
	// concurrency.
	TargetP99VsFloor = 3
	// TargetP99AtHalf bounds GET /campaigns' open-loop p99 at half its maximum throughput.
	TargetP99AtHalf = 5 * time.Millisecond
	// TargetEntriesPerSec and TargetCallbacksPerSec are durable admitted entries and
	// completes per second; TargetWriteP99 their p99 at those rates (open loop).
	TargetEntriesPerSec   = 5000
	TargetCallbacksPerSec = 3000
	TargetWriteP99        = 25 * time.Millisecond
	// TargetAdmittedShare is the least share of the entries phase's answers that admit.
	TargetAdmittedShare = 0.80
	// TargetRSS bounds the server's peak RSS at 100,000 campaigns and 1,000,000
	// participants; TargetRSSHuge at 10,000,000 participants.
	TargetRSS     = 1 << 30
	TargetRSSHuge = 5 << 29
	// TargetReady bounds the time from start to ready (engine, panel and counters loaded).
	TargetReady = 30 * time.Second
	// TargetJoinReady bounds the time to ready of a second process started from the first's
	// snapshot at 1,000,000 participants; TargetJoinReadyHuge at 10,000,000.
	TargetJoinReady     = 10 * time.Second
	TargetJoinReadyHuge = 30 * time.Second
	// TargetBalancedOffers is the least share of greedy's offers throughput the balanced
	// allocation keeps (the median of the paired rounds, --compare-allocation).
	TargetBalancedOffers = 0.95
)

// PhaseSummary is one phase in results.json.
type PhaseSummary struct {
	Scenario, Mode, Target         string
	Offered, Throughput            float64
	Requests, Errors, Unsent       uint64
	P50, P90, P99, P999, Max, Mean float64 // milliseconds
	ServerCPUPer1k                 float64
	ServerCPU, PostgresCPU         float64 // seconds
	// ServerWaitingMSPerS is the server process's threads' wait for a core, in
	// milliseconds per second of the phase (Phase.WaitingPerSecond).
	ServerWaitingMSPerS float64 `json:",omitempty"`
	BenchCPU            float64
	RSS, HWM            int64
	Ops                 map[string]uint64
	Status              map[int]uint64
	// AdmittedShare is the share of entry answers that admitted (absent: no entries);
	// AdmittedPerSec and CompletesPerSec are over the measured span.
	AdmittedShare   *float64           `json:",omitempty"`
	AdmittedPerSec  float64            `json:",omitempty"`
	CompletesPerSec float64            `json:",omitempty"`
	Verdicts        map[string]float64 `json:",omitempty"`
	// CacheHitShare is the share of the phase's offers answers the server's answer cache
	// served (absent: no offers, or /metrics not read).
	CacheHitShare *float64 `json:",omitempty"`
	// Repeats are the requests that repeated a participant the phase had asked for (the
	// panel wrapped around), when the scenario counts them.
	Repeats uint64 `json:",omitempty"`
	// Slowest is an open-loop phase's second with the most requests over SlowLatency, on
	// the serve process's clock (absent: none was slow).
	Slowest *SlowSecond `json:",omitempty"`
}

// Summary is results.json: what two runs are compared by.
type Summary struct {
	Started                 time.Time
	Command                 string
	Machine                 Machine
	Campaigns, Participants int
	Duration                string
	Phases                  []PhaseSummary
	Engine                  []EngineResult
	Targets                 []TargetCheck
	Notes                   []string
	// ReadySeconds is the server's time from start to ready; JoinReadySeconds a second
	// process's beside it (0: not measured).
	ReadySeconds, JoinReadySeconds float64
	// JoinReadyFullSeconds is a second process's time to ready with a full load from the
	// database (0: not measured).
	JoinReadyFullSeconds float64 `json:",omitempty"`
	// Year are the operations timed on a year of sessions (bench --past-sessions).
	Year []YearOp `json:",omitempty"`
	// Allocation are the rounds of the paired comparison of the allocation policies (bench
	// --compare-allocation).
	Allocation []AllocationSummary `json:",omitempty"`
	// Binaries are the rounds of the paired comparison with a baseline binary (bench
	// --compare-binary).
	Binaries []BinarySummary `json:",omitempty"`
	// Memory is the serve process's RSS over the run (at most 720 points, each the largest
	// of the samples it stands for), Marks when each phase began, both from its start.
	Memory []MemoryPoint `json:",omitempty"`
	Marks  []MarkPoint   `json:",omitempty"`
	// Maintenance is what autovacuum did to each table during the load phases.
	Maintenance []Maintenance `json:",omitempty"`
	// Sweeps is what the serve process's sweeps cost during the load phases.
	Sweeps *SweepSummary `json:",omitempty"`
}

// BinarySummary is one round of the paired comparison with a baseline binary in
// results.json.
type BinarySummary struct {
	Round           int
	Baseline, This  PhaseSummary
	Throughput, CPU float64 // this / baseline
}

// AllocationSummary is one round of the paired comparison of the allocation policies in
// results.json.
type AllocationSummary struct {
	Round            int
	Greedy, Balanced PhaseSummary
	Throughput, CPU  float64 // balanced / greedy
}

// TargetCheck is one target, met or not.
type TargetCheck struct {
	Name, Measured string
	Met            *bool // nil: not measured
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

func summarize(p *Phase) PhaseSummary {
	s := PhaseSummary{Scenario: p.Scenario, Mode: p.Mode, Target: p.Target, Offered: p.Offered, Throughput: p.Throughput,
		Requests: p.Requests, Errors: p.Errors, Unsent: p.Unsent,
		P50: ms(p.Hist.Quantile(0.5)), P90: ms(p.Hist.Quantile(0.9)), P99: ms(p.Hist.Quantile(0.99)),
		P999: ms(p.Hist.Quantile(0.999)), Max: ms(p.Hist.Max()), Mean: p.Hist.Mean() / 1e6,
		ServerCPUPer1k: p.CPUPer1k(), ServerCPU: p.ServerCPU.Seconds(), PostgresCPU: p.PostgresCPU.Seconds(),
		ServerWaitingMSPerS: p.WaitingPerSecond(), BenchCPU: p.BenchCPU.Seconds(), RSS: p.RSS, HWM: p.HWM, Ops: map[string]uint64{}, Status: p.Status}
	for _, o := range p.Ops {
		if o.Requests > 0 {
			s.Ops[o.Name] = o.Requests
		}
	}
	if share := p.AdmittedShare(); share >= 0 {
		s.AdmittedShare = &share
		s.AdmittedPerSec = p.Rate(p.OpCount(OpEntryAdmitted))
	}
	s.CompletesPerSec = p.Rate(p.OpCount(OpCallbackDone))
	s.Verdicts = p.Verdicts
	if h := p.CacheHitShare(); h >= 0 {
		s.CacheHitShare = &h
	}
	s.Repeats = p.Repeats
	s.Slowest = p.Slowest
	return s
}

func boolp(b bool) *bool { return &b }

// Targets evaluates the targets on r.
func (r *Report) Targets() []TargetCheck {
	var out []TargetCheck
	check := func(name string, measured string, met bool) {
		out = append(out, TargetCheck{name, measured, boolp(met)})
	}
	missing := func(name string) { out = append(out, TargetCheck{Name: name, Measured: "not measured"}) }
	floor := r.Find(ScFloor, "closed")
	share := offersTarget(r.Options.Campaigns)
	for _, sc := range []struct{ scenario, what string }{
		{ScOffers, "random participants"},
		{ScOffersDistinct, "each participant once until the panel wraps around"},
	} {
		off := r.Find(sc.scenario, "closed")
		name := fmt.Sprintf("GET /campaigns at %d campaigns ≥ %.0f%% of the floor's throughput (%s)", r.Options.Campaigns, 100*share, sc.what)
		if off == nil || floor == nil || floor.Throughput <= 0 {
			missing(name)
			continue
		}
		ratio := off.Throughput / floor.Throughput
		check(name, fmt.Sprintf("%.0f%% (%.0f vs %.0f req/s)", 100*ratio, off.Throughput, floor.Throughput), ratio >= share)
		name = fmt.Sprintf("GET /campaigns closed-loop p99 ≤ %d× the floor's (%s)", TargetP99VsFloor, sc.what)
		p99, fp99 := off.Hist.Quantile(0.99), floor.Hist.Quantile(0.99)
		check(name, fmt.Sprintf("%.2f ms vs %.2f ms (%.1f×)", ms(p99), ms(fp99), float64(p99)/float64(max(fp99, 1))),
			p99 <= TargetP99VsFloor*fp99)
	}
	name := fmt.Sprintf("GET /campaigns open-loop p99 ≤ %s at half of max throughput", TargetP99AtHalf)
	if half := r.openNear(ScOffers, 0.5); half != nil {
		p99 := time.Duration(half.Hist.Quantile(0.99))
		check(name, fmt.Sprintf("p99 %.2f ms at %.0f req/s offered", ms(int64(p99)), half.Offered), p99 <= TargetP99AtHalf && half.Unsent == 0)
	} else {
		missing(name)
	}
	name = fmt.Sprintf("entries ≥ %d admitted/s durable (stored before the 302, fsync on), ≥ %.0f%% admitted", TargetEntriesPerSec, 100*TargetAdmittedShare)
	if e := r.Find(ScEntries, "closed"); e != nil {
		adm := e.Rate(e.OpCount(OpEntryAdmitted))
		check(name, fmt.Sprintf("%.0f admitted/s (%.0f%% of %.0f entry answers/s)", adm, 100*max(e.AdmittedShare(), 0), e.Throughput),
			adm >= TargetEntriesPerSec && e.AdmittedShare() >= TargetAdmittedShare)
	} else {
		missing(name)
	}
	name = fmt.Sprintf("callbacks ≥ %d completes/s durable", TargetCallbacksPerSec)
	if c := r.Find(ScCallbacks, "closed"); c != nil {
		done := c.Rate(c.OpCount(OpCallbackDone))
		check(name, fmt.Sprintf("%.0f completes/s", done), done >= TargetCallbacksPerSec)
	} else {
		missing(name)
	}
	for _, w := range []struct {
		scenario, what, supply string
		rate                   float64
	}{{ScEntries, "entries", "entry URLs", TargetEntriesPerSec}, {ScCallbacks, "callbacks", "admitted sessions", TargetCallbacksPerSec}} {
		name = fmt.Sprintf("%s p99 ≤ %s at %.0f/s (open loop)", w.what, TargetWriteP99, w.rate)
		p := r.openAt(w.scenario, w.rate)
		if p == nil {
			missing(name + ": the closed-loop maximum did not reach the rate")
			continue
		}
		if !p.ranWindow() {
			// A phase that ran out of entry URLs or admitted sessions measured too little, or
			// nothing: its p99 says nothing about the rate.
			missing(fmt.Sprintf("%s: the phase ran out of %s after %s of its %s window (%d answered)",
				name, w.supply, p.Span.Round(100*time.Millisecond), p.Window, p.Requests))
			continue
		}
		p99 := time.Duration(p.Hist.Quantile(0.99))
		check(name, fmt.Sprintf("p99 %.2f ms at %.0f/s offered (%.0f/s answered)", ms(int64(p99)), p.Offered, p.Throughput),
			p99 <= TargetWriteP99 && p.Unsent == 0)
	}
	joinCheck := func(scenario, how string, readyIn, cpu time.Duration) {
		name := fmt.Sprintf("entries p99 ≤ %s while a second process starts beside this one%s", TargetWriteP99, how)
		alone, joining := r.Find(ScEntriesAlone, "open"), r.Find(scenario, "open")
		if alone == nil || joining == nil {
			missing(name)
			return
		}
		p99, p99a := time.Duration(joining.Hist.Quantile(0.99)), time.Duration(alone.Hist.Quantile(0.99))
		ready, whole := "not ready within the phase", false
		if readyIn > 0 {
			ready = "ready in " + readyIn.Round(100*time.Millisecond).String()
			if cpu > 0 {
				ready += fmt.Sprintf(", %.2f cores on average until then", cpu.Seconds()/readyIn.Seconds())
			}
			// The phase starts with the second process and ends when it is ready, or sooner
			// when the entry URLs set aside for it ran out.
			whole = joining.Span >= readyIn-time.Second
		}
		over := fmt.Sprintf("over the %s from its start, the whole of it", joining.Span.Round(100*time.Millisecond))
		if !whole {
			over = fmt.Sprintf("over only the first %s of its start: the entry URLs set aside ran out", joining.Span.Round(100*time.Millisecond))
		}
		check(name, fmt.Sprintf("p99 %.2f ms at %.0f/s offered (%.2f ms alone; the second process %s; measured %s)",
			ms(int64(p99)), joining.Offered, ms(int64(p99a)), ready, over), p99 <= TargetWriteP99 && joining.Unsent == 0 && whole)
	}
	joinCheck(ScEntriesJoining, ", from the first's snapshot", r.JoinReady, r.JoinCPU)
	readyMax, at := TargetJoinReady, "1M"
	if r.Options.Participants >= 10_000_000 {
		readyMax, at = TargetJoinReadyHuge, "10M"
	}
	name = fmt.Sprintf("a second process started from a snapshot ready ≤ %s at %s participants", readyMax, at)
	if r.JoinReady > 0 {
		check(name, "ready in "+r.JoinReady.Round(100*time.Millisecond).String(), r.JoinReady <= readyMax)
	} else {
		missing(name)
	}
	if r.Options.JoinFull {
		joinCheck(ScEntriesJoiningFull, ", loading everything from PostgreSQL (no snapshot)", r.JoinReadyFull, r.JoinCPUFull)
	}
	limit, size := int64(TargetRSS), "1 GiB"
	if r.Options.Participants >= 10_000_000 {
		limit, size = TargetRSSHuge, "2.5 GiB"
	}
	name = fmt.Sprintf("peak RSS ≤ %s at 100k campaigns and %s participants", size, map[bool]string{true: "10M", false: "1M"}[limit == TargetRSSHuge])
	hwm := fmt.Sprintf("peak RSS %s at %d campaigns / %d participants", mib(r.ServerHWM), r.Options.Campaigns, r.Options.Participants)
	switch {
	case r.ServerHWM > 0 && r.Options.Campaigns >= 100_000 && r.Options.Participants >= 1_000_000:
		check(name, hwm, r.ServerHWM <= limit)
	case r.ServerHWM == 0:
		missing(name)
	default:
		out = append(out, TargetCheck{Name: name, Measured: hwm + " (not this size: run `switchboard bench --campaigns 100000 --participants 1000000`)"})
	}
	if len(r.Allocation) > 0 {
		ratio, cpu := r.AllocationRatios()
		check(fmt.Sprintf("balanced allocation's offers throughput ≥ %.0f%% of greedy's (median of paired rounds)", 100*TargetBalancedOffers),
			fmt.Sprintf("%.1f%% over %d rounds (server CPU per request %.1f%%)", 100*ratio, len(r.Allocation), 100*cpu),
			ratio >= TargetBalancedOffers)
	}
	name = fmt.Sprintf("ready (engine, panel, counters loaded) ≤ %s", TargetReady)
	if r.Load > 0 {
		check(name, fmt.Sprintf("%s at %d campaigns / %d participants", r.Load.Round(100*time.Millisecond), r.Options.Campaigns, r.Options.Participants),
			r.Load <= TargetReady)
	} else {
		missing(name)
	}
	return out
}

// ranWindow reports whether the phase answered requests through at least nine tenths of its
// window: one that ran out of what it sends (entry URLs, admitted sessions) sooner measured
// only the time it ran, or nothing at all.
func (p *Phase) ranWindow() bool {
	return p.Requests > 0 && p.Span >= p.Window*9/10
}

// openAt returns the open-loop phase of scenario offered rate (within 1%), nil when none
// ran at it.
func (r *Report) openAt(scenario string, rate float64) *Phase {
	for _, p := range r.Phases {
		if p.Scenario == scenario && p.Mode == "open" && abs(p.Offered-rate) <= rate/100 {
			return p
		}
	}
	return nil
}

// openNear returns the open-loop phase of scenario whose offered rate is closest to
// fraction × the closed-loop maximum.
func (r *Report) openNear(scenario string, fraction float64) *Phase {
	c := r.Find(scenario, "closed")
	if c == nil {
		return nil
	}
	want := fraction * c.Throughput
	var best *Phase
	for _, p := range r.Phases {
		if p.Scenario == scenario && p.Mode == "open" {
			if best == nil || abs(p.Offered-want) < abs(best.Offered-want) {
				best = p
			}
		}
	}
	return best
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func mib(b int64) string {
	if b <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
}

func fmtMS(ns int64) string {
	v := float64(ns) / 1e6
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(10 * time.Nanosecond).String()
}

// WriteReport writes out/performance.md (between the markers), out/bench/*.svg and
// out/bench/results.json.
func WriteReport(out string, r *Report) error {
	dir := filepath.Join(out, "bench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	charts := map[string][]byte{}
	md := r.Markdown(charts)
	for name, b := range charts {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	sum := Summary{Started: r.Started, Command: r.Options.Command, Machine: r.Machine, Campaigns: r.Options.Campaigns,
		Participants: r.Options.Participants, Duration: r.Options.Duration.String(), Engine: r.Engine,
		Targets: r.Targets(), Notes: r.Notes, ReadySeconds: r.Load.Seconds(), JoinReadySeconds: r.JoinReady.Seconds(), JoinReadyFullSeconds: r.JoinReadyFull.Seconds(), Year: r.Year}
	for _, p := range r.Phases {
		sum.Phases = append(sum.Phases, summarize(p))
	}
	for i, a := range r.Allocation {
		sum.Allocation = append(sum.Allocation, AllocationSummary{Round: i + 1, Greedy: summarize(a.Greedy),
			Balanced: summarize(a.Balanced), Throughput: a.Ratio(), CPU: a.CPURatio()})
	}
	for i, b := range r.Binaries {
		sum.Binaries = append(sum.Binaries, BinarySummary{Round: i + 1, Baseline: summarize(b.Baseline),
			This: summarize(b.This), Throughput: b.Ratio(), CPU: b.CPURatio()})
	}
	for _, m := range downsample(r.Memory, 720) {
		sum.Memory = append(sum.Memory, MemoryPoint{Seconds: m.At.Seconds(), MiB: float64(m.RSS) / (1 << 20)})
	}
	for _, m := range r.Marks {
		sum.Marks = append(sum.Marks, MarkPoint{Seconds: m.At.Seconds(), Name: m.Name})
	}
	sum.Maintenance, sum.Sweeps = r.Maintenance, r.Sweeps
	js, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	return ReplaceSection(filepath.Join(out, "performance.md"), md)
}

// ReplaceSection puts section between the markers of the file at path, creating the file
// (or appending the markers) when needed; everything outside the markers is kept.
func ReplaceSection(path, section string) error {
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	doc := string(old)
	if len(old) == 0 {
		doc = "# Performance\n\nMeasured by `make bench` (`switchboard bench`, see bench/README.md).\n\n" +
			MarkerStart + "\n" + MarkerEnd + "\n"
	}
	i, j := strings.Index(doc, MarkerStart), strings.Index(doc, MarkerEnd)
	if i < 0 || j < i {
		doc = strings.TrimRight(doc, "\n") + "\n\n" + MarkerStart + "\n" + MarkerEnd + "\n"
		i, j = strings.Index(doc, MarkerStart), strings.Index(doc, MarkerEnd)
	}
	doc = doc[:i+len(MarkerStart)] + "\n" + strings.TrimSpace(section) + "\n" + doc[j:]
	return os.WriteFile(path, []byte(doc), 0o644)
}

// Markdown renders the report section and fills charts (file name → SVG).
func (r *Report) Markdown(charts map[string][]byte) string {
	var b strings.Builder
	o := r.Options
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("## Results\n\n")
	if o.Quick {
		w("> **Quick run** (`--quick`: a tiny market and 1 s phases, for tests). The figures below say nothing about performance.\n\n")
	}
	w("Generated by `switchboard bench` on %s in %s. Command:\n\n```\n%s\n```\n\n", r.Started.UTC().Format("2006-01-02 15:04 MST"),
		r.Took.Round(time.Second), o.Command)
	m := r.Machine
	w("**Machine:** %d CPUs (%s), %s memory, kernel %s, %s, %s. The load generator, the server, the floor and PostgreSQL share these CPUs.\n\n",
		m.CPUs, orDash(m.Model), mib(m.MemTotal), orDash(m.Kernel), m.GoVersion, orDash(m.Postgres))
	w("**Market:** %d active campaigns, %d impaneled participants (engine/synth, seed %d)", o.Campaigns, o.Participants, o.Seed)
	if len(r.Seed.Rows) > 0 {
		keys := make([]string, 0, len(r.Seed.Rows))
		for k := range r.Seed.Rows {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s %d", k, r.Seed.Rows[k]))
		}
		w("; rows written with COPY in %s: %s", r.Seed.Took.Round(time.Millisecond), strings.Join(parts, ", "))
	}
	if pw := r.Prewarm; pw.Relations > 0 {
		w("; before the load, what a serving database keeps in memory (the indexes of the sessions partitions holding the active campaigns' sessions, and respondents: %d relations, %s) was read into it with pg_prewarm in %s, %s of it into shared buffers", pw.Relations, mib(pw.Bytes), pw.Took.Round(time.Millisecond), mib(pw.Buffered))
	} else if o.PastSessions > 0 {
		w("; the database was measured as the seed left it (--cold-cache: nothing read into memory before the load)")
	}
	w(". The server was ready %s after start and held %s RSS before the load; peak RSS over the run %s.\n\n",
		r.Load.Round(time.Millisecond), mib(r.ServerRSS), mib(r.ServerHWM))
	if h := r.Harvest; h != nil {
		w("**Offers answers:** median %d bytes, %.1f surveys each, %.0f%% of participants eligible for at least one (from %d answers harvested for %d entry URLs).\n\n",
			h.MedianBytes, h.MeanOffers, 100*h.EligibleShare, h.Requests, len(h.Entries))
		w("**Entry URLs:** %d fresh offer tokens for %d distinct participants (up to %d each, never two related campaigns) and %d campaigns (never more than a campaign's seeded room), each followed once: %d were followed.\n\n",
			len(h.Entries), h.Participants, h.PerParticipant, h.Campaigns, r.EntriesUsed)
	}
	w("Phases: %s measured after %s of warm-up; closed loop with %d connections, open loop with up to %d.\n\n",
		o.Duration, o.Warmup, o.Connections, o.OpenConnections)

	w("### Targets\n\n| Target | Measured | Met |\n|---|---|---|\n")
	for _, t := range r.Targets() {
		met := "not measured"
		if t.Met != nil {
			met = map[bool]string{true: "**met**", false: "**missed**"}[*t.Met]
		}
		w("| %s | %s | %s |\n", t.Name, t.Measured, met)
	}
	w("\n")

	floor := r.Find(ScFloor, "closed")
	w("### Maximum throughput (closed loop)\n\n")
	w("| Scenario | req/s | vs floor | p50 ms | p90 ms | p99 ms | p99.9 ms | errors | server CPU s / 1k req | PostgreSQL CPU s | bench CPU s | RSS after | answer-cache hits | statuses |\n")
	w("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	var bars []Bar
	for _, p := range r.Phases {
		if p.Mode != "closed" {
			continue
		}
		vs := "–"
		if floor != nil && floor.Throughput > 0 {
			vs = fmt.Sprintf("%.0f%%", 100*p.Throughput/floor.Throughput)
		}
		hits := "–"
		if h := p.CacheHitShare(); h >= 0 {
			hits = fmt.Sprintf("%.1f%%", 100*h)
		}
		w("| %s | %.0f | %s | %s | %s | %s | %s | %d | %.3f | %.1f | %.1f | %s | %s | %s |\n", p.Scenario, p.Throughput, vs,
			fmtMS(p.Hist.Quantile(0.5)), fmtMS(p.Hist.Quantile(0.9)), fmtMS(p.Hist.Quantile(0.99)), fmtMS(p.Hist.Quantile(0.999)),
			p.Errors, p.CPUPer1k(), p.PostgresCPU.Seconds(), p.BenchCPU.Seconds(), mib(p.RSS), hits, describeStatus(p.Status))
		bars = append(bars, Bar{Label: p.Scenario, Value: p.Throughput, Note: vs + " of floor"})
	}
	if len(bars) > 0 {
		charts["throughput.svg"] = BarChart{Title: "Maximum throughput vs the floor (closed loop)", Unit: "req/s", Bars: bars}.SVG()
		w("\n![Throughput vs the floor](bench/throughput.svg)\n\n")
	}
	w("`vs floor`: the scenario's throughput over the floor's, a fasthttp server in its own process answering a fixed %d-byte JSON body to the same requests, measured beside the offers phases (its maximum just before theirs, each of its open-loop rates right after theirs). Server CPU counts the `serve` process only (utime+stime from /proc, warm-up included); PostgreSQL CPU sums the postmaster and its live backends. `answer-cache hits`: the share of the phase's offers answers (warm-up included) the server served from its answer cache, from its /metrics.\n\n", r.FloorSize)
	if len(r.Memory) > 1 {
		peak, during := memoryPeak(r.Memory, r.Marks)
		w("### Memory over the run\n\n")
		w("The serve process's RSS, sampled every %s from its start to its stop (%d samples): %s when ready, highest sample %s at %.0f s",
			MemoryEvery, len(r.Memory), mib(r.ServerRSS), mib(peak.RSS), peak.At.Seconds())
		if during != "" {
			w(" (in %s)", during)
		}
		w(". Each dotted line is where a phase began.\n\n")
		charts["memory.svg"] = memoryChart(r.Memory, r.Marks, o.Campaigns).SVG()
		w("![Memory over the run](bench/memory.svg)\n\n")
	}

	var opRows []string
	for _, p := range r.Phases {
		if len(p.Ops) < 2 {
			continue
		}
		for _, op := range p.Ops {
			if op.Requests == 0 {
				continue
			}
			rate := "max"
			if p.Mode == "open" {
				rate = fmt.Sprintf("%.0f/s", p.Offered)
			}
			opRows = append(opRows, fmt.Sprintf("| %s | %s | %s | %d | %.0f | %s | %s | %s | %d |", p.Scenario, rate, op.Name,
				op.Requests, p.Rate(op.Requests), fmtMS(op.Hist.Quantile(0.5)), fmtMS(op.Hist.Quantile(0.99)),
				fmtMS(op.Hist.Quantile(0.999)), op.Errors))
		}
	}
	if len(opRows) > 0 {
		w("### Entries, callbacks and the mix, by operation\n\n| Scenario | load | operation | requests | per s | p50 ms | p99 ms | p99.9 ms | errors |\n|---|---|---|---|---|---|---|---|---|\n")
		w("%s\n\n", strings.Join(opRows, "\n"))
		w("| Scenario | load | measured for | admitted share of entries | admitted/s | completes/s | server verdicts (warm-up included) |\n|---|---|---|---|---|---|---|\n")
		for _, p := range r.Phases {
			share, done := p.AdmittedShare(), p.OpCount(OpCallbackDone)
			if share < 0 && done == 0 {
				continue
			}
			rate := "max"
			if p.Mode == "open" {
				rate = fmt.Sprintf("%.0f/s", p.Offered)
			}
			span := p.Span
			if span <= 0 {
				span = p.Window
			}
			shareText := "–"
			if share >= 0 {
				shareText = fmt.Sprintf("%.1f%%", 100*share)
			}
			w("| %s | %s | %s | %s | %.0f | %.0f | %s |\n", p.Scenario, rate, span.Round(10*time.Millisecond), shareText,
				p.Rate(p.OpCount(OpEntryAdmitted)), p.Rate(done), describeVerdicts(p.Verdicts))
		}
		w("\nEach entry follows a fresh offer token once. `measured for` is the span the rates are over: shorter than the window when the phase ran out of entry URLs or admitted sessions, longer when an open loop fell behind. The callbacks phase reports a complete for sessions admitted earlier in the run (signed as a buyer would, docs/rules.md §7), each once.\n\n")
		w("An admitted entry is stored durably (PostgreSQL, fsync on) before its 302; a refused one (quota full, reentry rule, related campaign) is answered with the partner's over_quota redirect. The mix is offers:entries:callbacks = %d:%d:%d; callbacks answer sessions admitted earlier in the run, outcomes in marketplace proportions.\n\n",
			o.Mix[0], o.Mix[1], o.Mix[2])
	}

	w("### Latency vs offered load (open loop)\n\n")
	w("Requests are scheduled on a fixed timeline; each latency runs from the request's *intended* send time, so a stall shows as the queue it causes (no coordinated omission). `unsent`: requests still not sent %s after the window, counted as errors with the time they had waited.\n\n", max(o.Duration, 5*time.Second))
	w("`server waiting for a core`: the time the server process's threads (serve's, or the floor's) spent runnable with no core free over the phase, warm-up included, in milliseconds per second summed over its threads (/proc's schedstat): the load generator and PostgreSQL share the machine's cores with it, and a request that waits for a core waits however little work it needs.\n\n")
	w("| Scenario | offered req/s | achieved req/s | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | errors | unsent | server CPU s / 1k req | server waiting for a core (ms per s) |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	series := map[string][]Series{}
	for _, p := range r.Phases {
		if p.Mode != "open" {
			continue
		}
		waiting := "–"
		if p.ServerWaiting > 0 {
			waiting = fmt.Sprintf("%.0f", p.WaitingPerSecond())
		}
		w("| %s | %.0f | %.0f | %s | %s | %s | %s | %s | %d | %d | %.3f | %s |\n", p.Scenario, p.Offered, p.Throughput,
			fmtMS(p.Hist.Quantile(0.5)), fmtMS(p.Hist.Quantile(0.9)), fmtMS(p.Hist.Quantile(0.99)), fmtMS(p.Hist.Quantile(0.999)),
			fmtMS(p.Hist.Max()), p.Errors, p.Unsent, p.CPUPer1k(), waiting)
		ss := series[p.Scenario]
		if ss == nil {
			ss = []Series{{Name: "p50"}, {Name: "p90"}, {Name: "p99"}, {Name: "p99.9"}}
		}
		for i, q := range []float64{0.5, 0.9, 0.99, 0.999} {
			ss[i].Points = append(ss[i].Points, Point{X: p.Offered, Y: ms(p.Hist.Quantile(q))})
		}
		series[p.Scenario] = ss
	}
	w("\n")
	writeSlowest(w, r.Phases)
	writeMaintenance(w, r.Maintenance)
	writeSweeps(w, r.Sweeps)
	if off, fl := series[ScOffers], series[ScFloor]; off != nil || fl != nil {
		var all []Series
		for _, s := range off {
			s.Name = "offers " + s.Name
			all = append(all, s)
		}
		for _, s := range fl {
			if s.Name == "p50" || s.Name == "p99" {
				s.Name, s.Dashed = "floor "+s.Name, true
				all = append(all, s)
			}
		}
		charts["latency-offers.svg"] = LineChart{Title: "GET /campaigns latency vs offered load", XLabel: "offered load (requests/s)",
			YLabel: "latency (ms, log scale)", LogY: true, Series: all}.SVG()
		w("![Latency percentiles vs offered load](bench/latency-offers.svg)\n\n")
	}

	if len(r.Engine) > 0 {
		w("### Engine match time vs campaign count (in-process)\n\n")
		w("engine.Match of %d synthetic participants × 3 rounds against synth.Market(n), top 30, one at a time on one goroutine; each match timed alone.\n\n", o.EngineParticipants)
		w("| campaigns | load (build) | p50 | p90 | p99 | mean | offers per match | live heap |\n|---|---|---|---|---|---|---|---|\n")
		p50 := Series{Name: "p50"}
		p99 := Series{Name: "p99"}
		mean := Series{Name: "mean", Dashed: true}
		for _, e := range r.Engine {
			w("| %d | %s | %s | %s | %s | %s | %.1f | %s |\n", e.Campaigns, fmtDur(e.Build), fmtDur(e.P50), fmtDur(e.P90), fmtDur(e.P99),
				fmtDur(e.Mean), e.MeanOffers, mib(int64(e.HeapBytes)))
			x := float64(e.Campaigns)
			p50.Points = append(p50.Points, Point{X: x, Y: float64(e.P50) / 1e3})
			p99.Points = append(p99.Points, Point{X: x, Y: float64(e.P99) / 1e3})
			mean.Points = append(mean.Points, Point{X: x, Y: float64(e.Mean) / 1e3})
		}
		charts["engine-match.svg"] = LineChart{Title: "Engine match time vs campaign count", XLabel: "active campaigns (log scale)",
			YLabel: "time per match (µs, log scale)", LogX: true, LogY: true, Series: []Series{p50, p99, mean}}.SVG()
		w("\n![Engine match time vs campaign count](bench/engine-match.svg)\n\n")
		w("The same figures as Go benchmarks: `go test -run '^$' -bench . ./engine/` (compare commits with benchstat).\n\n")
	}

	if len(r.Year) > 0 {
		w("### A year of sessions\n\n")
		w("The database also held %d sessions of %d closed campaigns over the eleven months before the market's own month (`--past-sessions`). After the load, each step of the sweeper and a buyer's reads, once each:\n\n", o.PastSessions, (&Market{PastSessions: o.PastSessions}).PastCampaigns())
		w("| Operation | time | returned |\n|---|---:|---|\n")
		for _, op := range r.Year {
			got := fmt.Sprintf("%d %s", op.Size, op.Unit)
			if op.Err != "" {
				got = "error: " + op.Err
			}
			w("| %s | %s | %s |\n", op.Name, fmtDur(op.Took), got)
		}
		w("\n")
	}
	if len(r.Allocation) > 0 {
		ratio, cpu := r.AllocationRatios()
		w("### Allocation policies, paired\n\n")
		w("Before the phases above, on the market as seeded (before the entry phases filled some of its quotas), a serve child of each policy (`--allocation greedy` and `--allocation balanced`) on the same database, the offers closed loop (random participants) against each in turn, %d rounds, greedy first in odd rounds and second in even ones. Medians of the rounds' ratios, balanced / greedy: throughput **%.3f**, server CPU per request **%.3f**.\n\n",
			len(r.Allocation), ratio, cpu)
		writePairTable(w, Policies, r.Allocation)
	}
	if len(r.Binaries) > 0 {
		ratio, cpu := r.BinaryRatios()
		w("### This binary against a baseline, paired\n\n")
		w("Before the phases above, on the market as seeded, a serve child of the baseline (`%s`) and one of this binary on the same database, the offers closed loop (random participants) against each in turn, %d rounds, the baseline first in odd rounds and second in even ones. Medians of the rounds' ratios, this / baseline: throughput **%.3f**, server CPU per request **%.3f**.\n\n",
			r.Options.CompareBinary, len(r.Binaries), ratio, cpu)
		writePairTable(w, [2]string{"baseline", "this"}, r.Binaries)
	}
	w("### CPU profile\n\n")
	if r.Profile != "" && r.ProfilePhase == ScEntriesJoining {
		w("The second process's CPU profile from its start until it was ready (`--profile-phase %s`): `%s` (view with `go tool pprof -top bin/switchboard %s`). It is taken by running that process as `switchboard bench _serve --cpu-profile-from-start -- serve …`.\n\n",
			ScEntriesJoining, filepath.ToSlash(r.Profile), filepath.ToSlash(r.Profile))
	} else if r.Profile != "" {
		w("The server's CPU profile during the %s maximum-throughput phase: `%s` (view with `go tool pprof -top bin/switchboard %s`). It is taken by running the server as `switchboard bench _serve -- serve …`, which is `serve` with pprof started and stopped by SIGUSR1/SIGUSR2 from the bench (serve itself exposes no pprof).\n\n",
			cmp.Or(r.ProfilePhase, ScOffers), filepath.ToSlash(r.Profile), filepath.ToSlash(r.Profile))
	} else {
		w("Not taken in this run (`--profile=false`, or the profiled phase did not run).\n\n")
	}
	if len(r.Notes) > 0 {
		w("### Notes\n\n")
		for _, n := range r.Notes {
			w("- %s\n", n)
		}
		w("\n")
	}
	return b.String()
}

// writePairTable writes the rounds of a paired comparison as a table, labels naming the two
// serve children in the order of pair().
func writePairTable[R interface{ pair() [2]*Phase }](w func(string, ...any), labels [2]string, rounds []R) {
	a, b := labels[0], labels[1]
	w("| Round | %s req/s | %s req/s | %s / %s | %s p50 / p99 ms | %s p50 / p99 ms | server CPU s / 1k req: %s / %s |\n|---|--:|--:|--:|--:|--:|--:|\n",
		a, b, b, a, a, b, a, b)
	for i, r := range rounds {
		p := r.pair()
		w("| %d | %.0f | %.0f | %.3f | %s / %s | %s / %s | %.3f / %.3f |\n", i+1, p[0].Throughput, p[1].Throughput,
			pairRatio(p, (*Phase).throughput), fmtMS(p[0].Hist.Quantile(0.5)), fmtMS(p[0].Hist.Quantile(0.99)),
			fmtMS(p[1].Hist.Quantile(0.5)), fmtMS(p[1].Hist.Quantile(0.99)), p[0].CPUPer1k(), p[1].CPUPer1k())
	}
	w("\n")
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// writeSlowest tabulates the slowest second of each open-loop phase against serve, so that
// a tail made by a stall can be set against the memory chart and what the serve process and
// PostgreSQL were doing then.
func writeSlowest(w func(string, ...any), phases []*Phase) {
	var rows []string
	for _, p := range phases {
		ss := p.Slowest
		if ss == nil {
			continue
		}
		cpu := "– | –"
		if ss.PostgresCores > 0 || ss.ServeCores > 0 {
			el := p.Elapsed.Seconds()
			cpu = fmt.Sprintf("%.2f / %.2f | %.2f / %.2f", ss.ServeCores, p.ServerCPU.Seconds()/el, ss.PostgresCores, p.PostgresCPU.Seconds()/el)
		}
		waiting := "–"
		if ss.ServeWaiting > 0 || ss.PhaseWaiting > 0 {
			waiting = fmt.Sprintf("%.0f / %.0f", ss.ServeWaiting, ss.PhaseWaiting)
		}
		rows = append(rows, fmt.Sprintf("| %s | %.0f | %s | %.1f | %d | %d | %.1f | %s | %s |\n", p.Scenario, p.Offered,
			fmtMS(p.Hist.Quantile(0.99)), ss.Seconds, ss.Requests, ss.Slow, ss.MaxMS, cpu, waiting))
	}
	if len(rows) == 0 {
		return
	}
	w("The slowest second of each open-loop phase against serve: the one with the most requests over %s (by when they were due), on the serve process's clock as in the memory chart, with the CPU the serve process and PostgreSQL spent in it against their average over the phase, and the time the serve process's threads spent runnable with no core to run on (/proc's schedstat, summed over its threads: the load generator and PostgreSQL held the cores), in it against the phase's average.\n\n", SlowLatency)
	w("| Scenario | offered req/s | p99 ms | slowest second, s since serve started | requests due in it | over %s | max ms | serve CPU in it / phase (cores) | PostgreSQL CPU in it / phase (cores) | serve waiting for a core in it / phase (ms per s) |\n|---|---|---|---|---|---|---|---|---|---|\n", SlowLatency)
	for _, r := range rows {
		w("%s", r)
	}
	w("\n")
}

// writeSweeps says what the serve process's sweeps cost during the load, whose reads of
// sessions share PostgreSQL with the entries and callbacks.
func writeSweeps(w func(string, ...any), s *SweepSummary) {
	if s == nil || s.Count <= 0 {
		return
	}
	n := float64(s.Count)
	w("The serve process's sweeps during the load phases (its /metrics): %d, %.2f s in all (%.0f ms a sweep), of which %.2f s releasing stale sessions (%.0f ms a sweep).\n\n",
		s.Count, s.Seconds, 1e3*s.Seconds/n, s.ReleaseSeconds, 1e3*s.ReleaseSeconds/n)
}

// writeMaintenance lists the tables autovacuum vacuumed or analyzed during the load, whose
// times can be set against the slowest seconds and the memory chart's phases.
func writeMaintenance(w func(string, ...any), ms []Maintenance) {
	if len(ms) == 0 {
		return
	}
	w("PostgreSQL's autovacuum during the load phases (pg_stat_user_tables before and after them), each table's last run on the serve process's clock:\n\n")
	w("| table | autovacuums | autoanalyzes | last autovacuum, s since serve started | last autoanalyze, s |\n|---|---|---|---|---|\n")
	at := func(n int64, s float64) string {
		if n <= 0 {
			return "–"
		}
		return fmt.Sprintf("%.1f", s)
	}
	for _, m := range ms {
		w("| %s | %d | %d | %s | %s |\n", m.Table, m.Vacuums, m.Analyzes, at(m.Vacuums, m.LastVacuumSeconds), at(m.Analyzes, m.LastAnalyzeSeconds))
	}
	w("\n")
}
