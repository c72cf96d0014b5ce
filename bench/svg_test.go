package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard/switchboard/internal/svgchart"
)

// wellFormed fails t when doc is not a well-formed SVG document (svgchart.Check).
func wellFormed(t *testing.T, name string, doc []byte) {
	t.Helper()
	if err := svgchart.Check(doc); err != nil {
		t.Errorf("%s: %v\n%s", name, err, doc)
	}
}

func TestReplaceSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "performance.md")
	if err := ReplaceSection(path, "first"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), MarkerStart+"\nfirst\n"+MarkerEnd) {
		t.Fatalf("new file:\n%s", b)
	}
	doc := "# Perf\n\nhand-written intro\n\n" + MarkerStart + "\nold\n" + MarkerEnd + "\n\nhand-written outro\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ReplaceSection(path, "second"); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(path)
	want := "# Perf\n\nhand-written intro\n\n" + MarkerStart + "\nsecond\n" + MarkerEnd + "\n\nhand-written outro\n"
	if string(b) != want {
		t.Fatalf("got:\n%s\nwant:\n%s", b, want)
	}
}

// TestReportRenders renders a report of synthetic phases and checks its charts.
func TestReportRenders(t *testing.T) {
	mk := func(sc, mode string, rate, tput float64, lat int64) *Phase {
		h := NewHistogram()
		for i := range int64(1000) {
			h.Record(lat + i*1000)
		}
		return &Phase{Result: &Result{Scenario: sc, Mode: mode, Offered: rate, Throughput: tput, Window: time.Second,
			Requests: 1000, Hist: h, Status: map[int]uint64{200: 1000},
			Ops: []OpResult{{Name: OpOffers, Requests: 1000, Hist: h}, {Name: OpEntryAdmitted, Hist: NewHistogram()}}},
			Target: "switchboard", ServerCPU: time.Second, Elapsed: time.Second}
	}
	r := &Report{Options: DefaultOptions(), Machine: DescribeMachine(), Phases: []*Phase{
		mk(ScOffers, "closed", 0, 20000, 1e6), mk(ScOffers, "open", 10000, 10000, 5e5), mk(ScFloor, "closed", 0, 40000, 5e5),
		mk(ScFloor, "open", 10000, 10000, 3e5),
	}, Engine: []EngineResult{{Campaigns: 1000, P50: 3000, P99: 9000, Mean: 3500}, {Campaigns: 10000, P50: 20000, P99: 50000, Mean: 22000}}}
	out := t.TempDir()
	if err := WriteReport(out, r); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"throughput.svg", "latency-offers.svg", "engine-match.svg"} {
		b, err := os.ReadFile(filepath.Join(out, "bench", f))
		if err != nil {
			t.Fatal(err)
		}
		wellFormed(t, f, b)
	}
	md, _ := os.ReadFile(filepath.Join(out, "performance.md"))
	for _, want := range []string{"50% (20000 vs 40000 req/s)", "**met**", "at 10000 req/s offered"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}
