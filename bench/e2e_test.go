package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard/switchboard/persistence/cluster"
)

// TestQuickRun builds bin/switchboard and runs `switchboard bench --quick` end to end:
// PostgreSQL, seeding, the serve child, every load phase, the floor, the engine benchmark
// and the report. It is skipped with -short, when the server does not build yet (the supply
// and router packages are built in parallel), and when no PostgreSQL server binaries exist.
func TestQuickRun(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end bench run (~40 s); skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	bin := buildSwitchboard(ctx, t)
	dir := t.TempDir()

	out := filepath.Join(dir, "docs")
	// The profile covers the callbacks phase: the write path's profile is taken too. A
	// small year of past sessions has the sweeper, exports and insights timed on it; two
	// rounds compare the allocation policies' offers, two more this binary with a baseline
	// (itself).
	run := exec.CommandContext(ctx, bin, "bench", "--quick", "--profile-phase", "callbacks", "--past-sessions", "30000",
		"--compare-allocation", "2", "--compare-binary", bin, "--compare-rounds", "2", "--out", out)
	run.Env = append(os.Environ(), "SWITCHBOARD_LOG_LEVEL=error")
	var logs strings.Builder
	run.Stdout, run.Stderr = &logs, &logs
	if err := run.Run(); err != nil {
		t.Fatalf("bench --quick: %v\n%s", err, logs.String())
	}
	t.Logf("bench --quick:\n%s", logs.String())

	b, err := os.ReadFile(filepath.Join(out, "bench", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	for _, n := range s.Notes {
		if strings.Contains(n, "not usable at this commit") {
			t.Skipf("the supply API is not served yet: %s", n)
		}
	}
	if len(s.Year) < 10 {
		t.Errorf("%d operations timed on the past sessions, want the sweeper's steps, exports and insights reads", len(s.Year))
	}
	for _, op := range s.Year {
		if op.Err != "" || (op.Unit == "bytes" && op.Size == 0) {
			t.Errorf("year: %s: %d %s, error %q", op.Name, op.Size, op.Unit, op.Err)
		}
	}
	// Each round of a paired comparison: both children answered, without errors, and
	// the ratios are set.
	round := func(kind string, n int, ps [2]PhaseSummary, throughput, cpu float64) {
		t.Helper()
		for _, p := range ps {
			if p.Requests == 0 || p.Errors > 0 || p.ServerCPU <= 0 {
				t.Errorf("%s round %d: %d requests, %d errors, server CPU %.3f s", kind, n, p.Requests, p.Errors, p.ServerCPU)
			}
		}
		if throughput <= 0 || cpu <= 0 {
			t.Errorf("%s round %d: ratios %.3f, %.3f", kind, n, throughput, cpu)
		}
	}
	if len(s.Allocation) != 2 {
		t.Errorf("%d rounds of the allocation comparison, want 2", len(s.Allocation))
	}
	for _, a := range s.Allocation {
		round("allocation", a.Round, [2]PhaseSummary{a.Greedy, a.Balanced}, a.Throughput, a.CPU)
	}
	if len(s.Binaries) != 2 {
		t.Errorf("%d rounds of the comparison with a baseline binary, want 2", len(s.Binaries))
	}
	for _, b := range s.Binaries {
		round("binary", b.Round, [2]PhaseSummary{b.Baseline, b.This}, b.Throughput, b.CPU)
	}
	seen := map[string]PhaseSummary{}
	for _, p := range s.Phases {
		seen[p.Scenario+"/"+p.Mode] = p
		if p.Requests == 0 || p.Throughput <= 0 {
			t.Errorf("%s %s: no requests answered", p.Scenario, p.Mode)
		}
		if p.Errors > 0 {
			t.Errorf("%s %s: %d errors, statuses %v", p.Scenario, p.Mode, p.Errors, p.Status)
		}
		if ss := p.Slowest; ss != nil && (p.Mode != "open" || p.Target != "switchboard" || ss.Slow == 0 || ss.Requests < ss.Slow ||
			ss.Seconds < s.ReadySeconds || ss.MaxMS < ms(int64(SlowLatency)) || ss.ServeCores <= 0 || ss.PostgresCores < 0) {
			t.Errorf("%s %s: slowest second %+v (serve ready at %.1f s)", p.Scenario, p.Mode, ss, s.ReadySeconds)
		}
	}
	// Two cores shared by the load generator, the servers and PostgreSQL: some server's threads
	// waited for a core in some phase, and the report says so.
	if _, err := os.Stat("/proc/self/schedstat"); err == nil {
		waited := false
		for _, p := range s.Phases {
			waited = waited || p.ServerWaitingMSPerS > 0
		}
		if !waited {
			t.Errorf("no phase's server waited for a core")
		}
	}
	for _, want := range []string{"offers/closed", "offers/open", "offers-distinct/closed", "entries/closed", "entries/open",
		"mix/closed", "entries-alone/open", "entries-joining/open", "entries-joining-full/open", "callbacks/closed", "floor/closed", "floor/open"} {
		if _, ok := seen[want]; !ok {
			t.Errorf("phase %s missing; ran %v", want, keys(seen))
		}
	}
	// Both second processes were ready: the one from the first's snapshot (which it did not
	// refuse) and the one that loaded from the database.
	if s.JoinReadySeconds <= 0 || s.JoinReadyFullSeconds <= 0 {
		t.Errorf("second processes ready in %.1f s (snapshot) and %.1f s (full load)", s.JoinReadySeconds, s.JoinReadyFullSeconds)
	}
	for _, n := range s.Notes {
		if strings.Contains(n, "refused the first's snapshot") {
			t.Errorf("note: %s", n)
		}
	}
	// The floor beside the offers: its maximum just before theirs, each of its open-loop
	// rates right after the offers' at that rate.
	var order []string
	for i, p := range s.Phases {
		order = append(order, p.Scenario+"/"+p.Mode)
		switch {
		case p.Scenario == ScOffers && p.Mode == "closed" && (i == 0 || s.Phases[i-1].Scenario != ScFloor || s.Phases[i-1].Mode != "closed"):
			t.Errorf("the offers' maximum does not follow the floor's")
		case p.Scenario == ScFloor && p.Mode == "open" && (s.Phases[i-1].Scenario != ScOffers || s.Phases[i-1].Offered != p.Offered):
			t.Errorf("the floor at %.0f/s follows %s at %.0f/s, not the offers at that rate", p.Offered, s.Phases[i-1].Scenario, s.Phases[i-1].Offered)
		}
	}
	t.Logf("phases in order: %v", order)
	if e := seen["entries/closed"]; e.Ops[OpEntryAdmitted] == 0 {
		t.Errorf("no entry was admitted: %v", e.Ops)
	} else if e.AdmittedShare == nil || *e.AdmittedShare < 0.8 {
		// Fresh tokens within the campaigns' room: the phase measures admissions, not refusals.
		t.Errorf("entries phase admitted share below 80%%: ops %v, server verdicts %v", e.Ops, e.Verdicts)
	}
	if c, ok := seen["callbacks/closed"]; !ok || c.Ops[OpCallbackDone] == 0 || c.CompletesPerSec <= 0 {
		t.Errorf("the callbacks phase reported no completes: %+v", c)
	}
	// The answer cache: no hit when each participant is asked for once; hits with random ones.
	// A quick run's panel is smaller than the phase: the repeats are counted, and the
	// report says so rather than claiming each participant was asked for once.
	switch d := seen["offers-distinct/closed"]; {
	case d.CacheHitShare == nil:
		t.Errorf("offers-distinct: no answer-cache hit share")
	case d.Repeats == 0 && *d.CacheHitShare > 0.01:
		t.Errorf("offers-distinct: answer-cache hit share %.3f with no participant repeated, want about 0", *d.CacheHitShare)
	case d.Requests > uint64(s.Participants) && d.Repeats < d.Requests-uint64(s.Participants):
		t.Errorf("offers-distinct: %d repeats in %d requests to a panel of %d, want at least %d",
			d.Repeats, d.Requests, s.Participants, d.Requests-uint64(s.Participants))
	case d.Repeats > 0 && !slices.ContainsFunc(s.Notes, func(n string) bool { return strings.Contains(n, "repeated a participant") }):
		t.Errorf("offers-distinct: %d repeats and no note of them: %q", d.Repeats, s.Notes)
	}
	if r := seen["offers/closed"]; r.CacheHitShare == nil || *r.CacheHitShare <= 0 {
		t.Errorf("offers: answer-cache hit share %v, want some hits", r.CacheHitShare)
	}
	if m := seen["mix/closed"]; m.Ops[OpCallback] == 0 || m.Ops[OpOffers] == 0 {
		t.Errorf("the mix sent no callbacks or offers: %v", m.Ops)
	}
	if slices.ContainsFunc(s.Notes, func(n string) bool { return strings.Contains(n, "autovacuum's runs") }) {
		t.Errorf("pg_stat_user_tables not read: %q", s.Notes)
	}
	if s.ReadySeconds <= 0 || s.JoinReadySeconds <= 0 {
		t.Errorf("ready times missing: first process %.1f s, second %.1f s; notes %q", s.ReadySeconds, s.JoinReadySeconds, s.Notes)
	}
	if len(s.Targets) < 13 {
		t.Errorf("%d targets checked, want every target of docs/performance.md: %+v", len(s.Targets), s.Targets)
	}
	if len(s.Engine) == 0 || s.Engine[0].P50 <= 0 {
		t.Errorf("engine benchmark missing: %+v", s.Engine)
	}
	md, err := os.ReadFile(filepath.Join(out, "performance.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), MarkerStart) || !strings.Contains(string(md), MarkerEnd) || !strings.Contains(string(md), "Quick run") {
		t.Errorf("performance.md lacks the markers or the quick-run warning:\n%s", md)
	}
	if !strings.Contains(string(md), "### Allocation policies, paired") {
		t.Errorf("performance.md lacks the allocation comparison:\n%s", md)
	}
	if !strings.Contains(string(md), "### This binary against a baseline, paired") {
		t.Error("the report has no section for the comparison with a baseline binary")
	}
	if !strings.Contains(string(md), "CPU profile during the callbacks maximum-throughput phase") {
		t.Errorf("performance.md does not give the callbacks phase's profile:\n%s", md)
	}
	if fi, err := os.Stat(filepath.Join(out, "bench", "server-cpu.pprof")); err != nil || fi.Size() == 0 {
		t.Errorf("no server CPU profile of the callbacks phase: %v", err)
	}
	// Memory over the run: sampled from the start through every phase, each phase marked.
	if len(s.Memory) < 10 || s.Memory[0].MiB <= 0 {
		t.Errorf("%d memory samples over the run, first %+v", len(s.Memory), s.Memory[:min(1, len(s.Memory))])
	}
	marked := map[string]bool{}
	for _, m := range s.Marks {
		marked[m.Name] = true
	}
	for _, want := range []string{"ready", "offers max", "entries max", "callbacks max", "floor (its own process)"} {
		if !marked[want] {
			t.Errorf("no mark %q in %+v", want, s.Marks)
		}
	}
	if !strings.Contains(string(md), "![Memory over the run](bench/memory.svg)") {
		t.Error("the report does not show memory over the run")
	}
	for _, f := range []string{"throughput.svg", "latency-offers.svg", "engine-match.svg", "memory.svg"} {
		svg, err := os.ReadFile(filepath.Join(out, "bench", f))
		if err != nil {
			t.Fatal(err)
		}
		wellFormed(t, f, svg)
	}
}

// buildSwitchboard builds bin/switchboard into a temporary directory, skipping the test when
// the server does not build yet or no PostgreSQL server binaries exist.
func buildSwitchboard(ctx context.Context, t *testing.T) string {
	t.Helper()
	if _, err := cluster.FindBinaries(ctx, nil); err != nil {
		t.Skipf("no PostgreSQL server binaries: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "switchboard")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/switchboard")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Skipf("switchboard does not build at this commit, skipping the end-to-end run:\n%s", out)
	}
	vet := exec.CommandContext(ctx, "go", "build", "./supply/...", "./router/...")
	vet.Dir = ".."
	if out, err := vet.CombinedOutput(); err != nil {
		t.Skipf("the supply API does not build yet:\n%s", out)
	}
	return bin
}

// TestInterruptedRun stops `switchboard bench` with SIGINT once its first load phase has
// started: the phase running finishes, no other starts, and the run removes its PostgreSQL
// cluster and temporary directory before it exits with an error.
func TestInterruptedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end bench run; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	bin := buildSwitchboard(ctx, t)
	tmp := t.TempDir()
	run := exec.CommandContext(ctx, bin, "bench", "--quick", "--engine-sizes", "", "--out", filepath.Join(tmp, "docs"))
	run.Env = append(os.Environ(), "SWITCHBOARD_LOG_LEVEL=error", "TMPDIR="+tmp)
	pr, pw := io.Pipe()
	run.Stdout, run.Stderr = pw, pw
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- run.Wait(); pw.Close() }()
	var logs strings.Builder
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		logs.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "offers   closed") {
			break
		}
	}
	if err := run.Process.Signal(os.Interrupt); err != nil {
		t.Fatalf("signal: %v\n%s", err, logs.String())
	}
	sent := time.Now()
	after := make(chan []string, 1)
	go func() {
		var phases []string // phase lines printed after the signal
		for sc.Scan() {
			logs.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), " req/s ") {
				phases = append(phases, sc.Text())
			}
		}
		after <- phases
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("an interrupted bench exited 0")
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the bench ran on 30 s after SIGINT:\n%s", logs.String())
	}
	took := time.Since(sent)
	if phases := <-after; len(phases) > 1 {
		t.Errorf("%d phases ran after SIGINT, want the one running at most:\n%s", len(phases), strings.Join(phases, "\n"))
	}
	left, err := filepath.Glob(filepath.Join(tmp, "switchboard-bench-*"))
	if err != nil || len(left) > 0 {
		t.Errorf("the interrupted bench left %v behind (%v)", left, err)
	}
	if _, err := os.Stat(filepath.Join(tmp, "docs", "performance.md")); err == nil {
		t.Errorf("an interrupted bench wrote a report")
	}
	t.Logf("stopped %s after SIGINT", took.Round(time.Millisecond))
}

func keys(m map[string]PhaseSummary) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
