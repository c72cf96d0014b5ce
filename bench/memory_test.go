package bench

import (
	"os"
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
	s := []MemorySample{{1 * time.Second, 10}, {5 * time.Second, 50}, {9 * time.Second, 20}}
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
