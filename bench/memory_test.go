package bench

import (
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestDownsampleKeepsPeaks: a long trace is cut to n points, each the largest of those it
// stands for, so that a one-sample peak survives.
func TestDownsampleKeepsPeaks(t *testing.T) {
	var s []MemorySample
	for i := range 1000 {
		s = append(s, MemorySample{At: time.Duration(i) * time.Second, RSS: 100})
	}
	s[617].RSS = 900
	d := downsample(s, 10)
	if len(d) != 10 {
		t.Fatalf("%d points, want 10", len(d))
	}
	found := false
	for i, x := range d {
		if i > 0 && x.At <= d[i-1].At {
			t.Fatalf("points out of order: %+v", d)
		}
		found = found || x.RSS == 900 && x.At == 617*time.Second
	}
	if !found {
		t.Fatalf("the peak at 617 s was lost: %+v", d)
	}
	if got := downsample(s[:5], 10); len(got) != 5 {
		t.Fatalf("a short trace was changed: %d points", len(got))
	}
}

// TestMemoryPeakNamesItsPhase: the peak is attributed to the last mark at or before it.
func TestMemoryPeakNamesItsPhase(t *testing.T) {
	s := []MemorySample{{At: 1 * time.Second, RSS: 10}, {At: 5 * time.Second, RSS: 50}, {At: 9 * time.Second, RSS: 20}}
	marks := []RunMark{{0, "ready"}, {4 * time.Second, "offers max"}, {6 * time.Second, "entries max"}}
	peak, during := memoryPeak(s, marks)
	if peak.RSS != 50 || during != "offers max" {
		t.Fatalf("peak %+v during %q", peak, during)
	}
	if _, during := memoryPeak(s, nil); during != "" {
		t.Fatalf("no marks, yet the peak is in %q", during)
	}
}

// TestTraceMemory samples this process: samples in order from the start, marks kept, the
// chart well-formed with the target line only at the 100k size.
func TestTraceMemory(t *testing.T) {
	start := time.Now()
	tr := traceMemory(os.Getpid(), start, 5*time.Millisecond)
	time.Sleep(40 * time.Millisecond)
	tr.mark("offers max", 0)
	tr.mark("ready", 3*time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	s, marks := tr.finish()
	if again, _ := tr.finish(); len(again) != len(s) {
		t.Fatalf("a second finish returned %d samples, the first %d", len(again), len(s))
	}
	if len(s) < 3 || s[0].RSS <= 0 {
		t.Fatalf("samples %+v", s)
	}
	for i := 1; i < len(s); i++ {
		if s[i].At <= s[i-1].At {
			t.Fatalf("samples out of order: %+v", s)
		}
	}
	if len(marks) != 2 || marks[0].Name != "offers max" || marks[0].At < 40*time.Millisecond || marks[1].At != 3*time.Millisecond {
		t.Fatalf("marks %+v", marks)
	}
	small := string(memoryChart(s, marks, 10_000).SVG())
	big := string(memoryChart(s, marks, 100_000).SVG())
	wellFormed(t, "memory", []byte(big))
	if strings.Contains(small, "target 1024 MiB") || !strings.Contains(big, "target 1024 MiB") || !strings.Contains(big, ">offers max</text>") {
		t.Fatalf("target line or marks wrong:\n%s", big)
	}
}

// TestCPUBetween: the CPU of the samples that span the interval, in cores; nothing when
// they do not span it or PostgreSQL was not watched yet.
func TestCPUBetween(t *testing.T) {
	var s []MemorySample
	for i := range 11 { // every 200 ms: serve uses half a core, PostgreSQL a quarter, then a burst
		pg := time.Duration(i) * 50 * time.Millisecond
		if i > 5 {
			pg += time.Duration(i-5) * 150 * time.Millisecond // a full core from 1 s on
		}
		s = append(s, MemorySample{At: time.Duration(i) * 200 * time.Millisecond, CPU: time.Duration(i) * 100 * time.Millisecond,
			PostgresCPU: time.Millisecond + pg})
	}
	for _, c := range []struct {
		from, to  time.Duration
		serve, pg float64
		ok        bool
	}{
		{0, time.Second, 0.5, 0.25, true},
		{time.Second, 2 * time.Second, 0.5, 1, true},
		{300 * time.Millisecond, 700 * time.Millisecond, 0.5, 0.25, true},  // widened to 200–800 ms
		{900 * time.Millisecond, 1300 * time.Millisecond, 0.5, 0.75, true}, // 800–1400 ms: two thirds of it the burst
		{1500 * time.Millisecond, 2500 * time.Millisecond, 0, 0, false},    // past the last sample
	} {
		serve, pg, ok := cpuBetween(s, c.from, c.to)
		if ok != c.ok || math.Abs(serve-c.serve) > 1e-9 || math.Abs(pg-c.pg) > 1e-9 {
			t.Errorf("%v–%v: serve %.3f PostgreSQL %.3f (%v), want %.3f %.3f (%v)", c.from, c.to, serve, pg, ok, c.serve, c.pg, c.ok)
		}
	}
	s[0].PostgresCPU = 0 // the postmaster not known at the first sample
	if _, _, ok := cpuBetween(s, 0, time.Second); ok {
		t.Errorf("an interval before PostgreSQL was watched has its CPU")
	}
}

// TestPlaceSlowest: an open-loop phase's second with the most slow requests is placed on
// the serve process's clock, with the CPU in it; closed loops, the floor and phases with no
// slow request get none.
func TestPlaceSlowest(t *testing.T) {
	started := time.Unix(1000, 0)
	var s []MemorySample
	for i := range 101 {
		// The threads wait 50 ms a second, and 250 ms in the second from 13 s (samples 65–70).
		waiting := time.Duration(i)*10*time.Millisecond + time.Duration(min(max(i-65, 0), 5))*40*time.Millisecond
		s = append(s, MemorySample{At: time.Duration(i) * 200 * time.Millisecond, CPU: time.Duration(i) * 160 * time.Millisecond,
			PostgresCPU: time.Millisecond + time.Duration(i)*20*time.Millisecond, Waiting: waiting})
	}
	phase := func(target, mode string, secs ...Second) *Phase {
		return &Phase{Target: target, Result: &Result{Mode: mode, Start: started.Add(10 * time.Second), Seconds: secs,
			Span: time.Duration(len(secs)) * time.Second}}
	}
	quiet := Second{Requests: 100, Max: time.Millisecond}
	stall := Second{Requests: 90, Slow: 40, Max: 90 * time.Millisecond}
	worse := Second{Requests: 80, Slow: 40, Max: 120 * time.Millisecond} // as many slow ones, a longer one
	ps := []*Phase{
		phase("switchboard", "open", quiet, stall, quiet, worse, quiet),
		phase("switchboard", "open", quiet, quiet),
		phase("switchboard", "closed", quiet, stall),
		phase("floor", "open", stall),
	}
	placeSlowest(ps, s, started)
	got := ps[0].Slowest
	if got == nil || got.Seconds != 13 || got.Slow != 40 || got.Requests != 80 || got.MaxMS != 120 {
		t.Fatalf("slowest second %+v, want the one 13 s after the start with its 40 slow requests of 80, max 120 ms", got)
	}
	if math.Abs(got.ServeCores-0.8) > 1e-9 || math.Abs(got.PostgresCores-0.1) > 1e-9 {
		t.Errorf("CPU in it: serve %.3f, PostgreSQL %.3f cores, want 0.8 and 0.1", got.ServeCores, got.PostgresCores)
	}
	// The phase's five seconds (10–15 s) waited 25 × 10 ms plus the burst's 200 ms.
	if math.Abs(got.ServeWaiting-250) > 1e-6 || math.Abs(got.PhaseWaiting-90) > 1e-6 {
		t.Errorf("waiting for a core: %.3f ms/s in it, %.3f over the phase, want 250 and 90", got.ServeWaiting, got.PhaseWaiting)
	}
	// A thread that exits takes its wait out of the sum (the process stopping): no figure
	// rather than a negative one.
	s[70].Waiting = s[65].Waiting - time.Millisecond
	if w, ok := waitingBetween(s, 13*time.Second, 14*time.Second); ok {
		t.Errorf("a sum that fell: %.3f ms/s, want none", w)
	}
	for i, p := range ps[1:] {
		if p.Slowest != nil {
			t.Errorf("phase %d (%s %s): slowest second %+v, want none", i+1, p.Target, p.Mode, p.Slowest)
		}
	}
}

// TestMaintenanceBetween: only the tables autovacuum visited between the readings, with their
// runs counted from the first reading and their last times on the serve process's clock,
// busiest first.
func TestMaintenanceBetween(t *testing.T) {
	started := time.Unix(1000, 0)
	before := map[string]tableMaintenance{
		"sessions":  {vacuums: 3, analyzes: 5, lastVacuum: time.Unix(900, 0), lastAnalyze: time.Unix(950, 0)},
		"campaigns": {vacuums: 1, analyzes: 1, lastVacuum: time.Unix(800, 0), lastAnalyze: time.Unix(800, 0)},
	}
	after := map[string]tableMaintenance{
		"sessions":                 {vacuums: 3, analyzes: 6, lastVacuum: time.Unix(900, 0), lastAnalyze: time.Unix(1090, 0)},
		"campaigns":                {vacuums: 1, analyzes: 1, lastVacuum: time.Unix(800, 0), lastAnalyze: time.Unix(800, 0)},
		"quality_device_sightings": {vacuums: 2, analyzes: 3, lastVacuum: time.Unix(1089, 500_000_000), lastAnalyze: time.Unix(1150, 0)},
	}
	got := maintenanceBetween(before, after, started)
	want := []Maintenance{
		{Table: "quality_device_sightings", Vacuums: 2, Analyzes: 3, LastVacuumSeconds: 89.5, LastAnalyzeSeconds: 150},
		{Table: "sessions", Analyzes: 1, LastAnalyzeSeconds: 90},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

// TestParseSchedstat: the run-queue wait is the second of schedstat's three figures; a
// line without them is not a reading.
func TestParseSchedstat(t *testing.T) {
	for _, c := range []struct {
		line string
		want time.Duration
		ok   bool
	}{
		{"12158998 2554067 12\n", 2554067, true},
		{"0 0 0", 0, true},
		{"1172775 2336348", 0, false},
		{"", 0, false},
		{"1 x 3", 0, false},
		{"1 -5 3", 0, false},
	} {
		got, ok := parseSchedstat([]byte(c.line))
		if got != c.want || ok != c.ok {
			t.Errorf("%q: %v (%v), want %v (%v)", c.line, got, ok, c.want, c.ok)
		}
	}
}

// TestRunQueueWait reads this process's threads: every Linux kernel this runs on keeps the
// figures (CONFIG_SCHED_INFO), and a pid that does not exist has none.
func TestRunQueueWait(t *testing.T) {
	if _, err := os.Stat("/proc/self/schedstat"); err != nil {
		t.Skip("no schedstat on this kernel")
	}
	if w, ok := RunQueueWait(os.Getpid()); !ok || w < 0 {
		t.Errorf("this process: %v (%v), want a reading", w, ok)
	}
	if _, ok := RunQueueWait(1 << 30); ok {
		t.Errorf("a pid that does not exist has a reading")
	}
}
