package bench

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// writeSummary writes a results.json of a run at campaigns with the given closed-loop
// throughputs, and returns its path.
func writeSummary(t *testing.T, dir string, campaigns int, offers, distinct, floor float64) string {
	t.Helper()
	s := Summary{Started: time.Date(2026, 11, 28, 5, 0, 0, 0, time.UTC), Campaigns: campaigns, Participants: 10 * campaigns}
	for _, p := range []PhaseSummary{
		{Scenario: ScOffers, Mode: "closed", Throughput: offers, HWM: 300 << 20},
		{Scenario: ScOffers, Mode: "open", Throughput: offers / 2, HWM: 310 << 20},
		{Scenario: ScOffersDistinct, Mode: "closed", Throughput: distinct, HWM: 320 << 20},
		{Scenario: ScFloor, Mode: "closed", Throughput: floor},
	} {
		if p.Throughput > 0 {
			s.Phases = append(s.Phases, p)
		}
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp(dir, "results-*.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// TestSizes: runs are ordered by size, their shares of the floor and peak memory read from
// results.json, each size's target beside it; a run without a floor is refused.
func TestSizes(t *testing.T) {
	dir := t.TempDir()
	big := writeSummary(t, dir, 100_000, 36_000, 30_000, 80_000)
	small := writeSummary(t, dir, 10_000, 45_000, 40_000, 90_000)
	rows, err := ReadSizes([]string{big, small})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Campaigns != 10_000 || rows[1].Campaigns != 100_000 {
		t.Fatalf("rows %+v", rows)
	}
	if got := rows[1].Share(rows[1].Offers); got != 0.45 || rows[1].PeakRSS != 320<<20 {
		t.Fatalf("100k: share %.3f, peak %d", got, rows[1].PeakRSS)
	}
	md := SizesMarkdown(rows)
	for _, want := range []string{"| 10000 | 100000 | 2026-11-28 05:00 | 45000 | 50% | 40000 | 44% | 90000 | ≥ 60% | 320 MiB |",
		"| 100000 | 1000000 | 2026-11-28 05:00 | 36000 | 45% | 30000 | 38% | 80000 | ≥ 45% | 320 MiB |"} {
		if !strings.Contains(md, want) {
			t.Errorf("table lacks %q:\n%s", want, md)
		}
	}
	wellFormed(t, "sizes", SizesChart(rows).SVG())
	// Of two runs at one size the chart keeps the latest.
	later := writeSummary(t, dir, 10_000, 54_000, 45_000, 90_000)
	b, _ := os.ReadFile(later)
	b = []byte(strings.Replace(string(b), "2026-11-28T05:00:00Z", "2026-11-28T06:00:00Z", 1))
	if err := os.WriteFile(later, b, 0o644); err != nil {
		t.Fatal(err)
	}
	rows, err = ReadSizes([]string{later, big, small})
	if err != nil {
		t.Fatal(err)
	}
	c := SizesChart(rows)
	if len(rows) != 3 {
		t.Fatalf("%d rows, want every run in the table", len(rows))
	}
	if pts := c.Series[0].Points; len(pts) != 2 || pts[0].Y != 60 || pts[1].Y != 45 {
		t.Fatalf("offers series %+v, want the later 10k run (60%%) and the 100k run (45%%)", pts)
	}
	old, err := ReadSizes([]string{writeSummary(t, dir, 1_000, 9_000, 0, 10_000)})
	if err != nil || !strings.Contains(SizesMarkdown(old), "| 9000 | 90% | – | – | 10000 |") {
		t.Fatalf("a run without the distinct phase: %v\n%s", err, SizesMarkdown(old))
	}
	if _, err := ReadSizes([]string{writeSummary(t, dir, 1_000, 9_000, 8_000, 0)}); err == nil || !strings.Contains(err.Error(), "no offers or floor") {
		t.Fatalf("a run without a floor: %v", err)
	}
}
