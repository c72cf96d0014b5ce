package bench

import (
	"fmt"
	"maps"
	"testing"
)

func TestParseVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       map[string]float64
	}{
		{"empty", "", map[string]float64{}},
		{"other metrics only", "# HELP x y\nswitchboard_offers_total 4\n", map[string]float64{}},
		{"verdicts", "# TYPE switchboard_entries_total counter\n" +
			`switchboard_entries_total{verdict="admitted"} 120` + "\n" +
			`switchboard_entries_total{verdict="refused",by="engine",reason="not_eligible"} 7` + "\n" +
			`switchboard_entries_total{verdict="refused",by="database",reason="quota"} 3` + "\n" +
			`switchboard_entries_total{verdict="refused",by="database",reason="garbled"} x` + "\n",
			map[string]float64{"admitted": 120, "refused by engine (not_eligible)": 7, "refused by database (quota)": 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseVerdicts(tc.text); !maps.Equal(got, tc.want) {
				t.Errorf("parseVerdicts = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseCounter(t *testing.T) {
	text := "# HELP switchboard_offers_cache_hits_total x\n# TYPE switchboard_offers_cache_hits_total counter\n" +
		"switchboard_offers_cache_hits_total 1234\nswitchboard_offers_cache_hits_total_other 9\n" +
		"switchboard_offers_cache_misses_total 56\n"
	for name, want := range map[string]float64{
		"switchboard_offers_cache_hits_total": 1234, "switchboard_offers_cache_misses_total": 56, "switchboard_absent_total": 0,
	} {
		if got := parseCounter(text, name); got != want {
			t.Errorf("parseCounter(%s) = %v, want %v", name, got, want)
		}
	}
}

// TestWriteSweeps: the sweeps' line states their count, their time and the release's, each
// in all and per sweep; no sweep, no line.
func TestWriteSweeps(t *testing.T) {
	var got string
	w := func(format string, args ...any) { got += fmt.Sprintf(format, args...) }
	writeSweeps(w, &SweepSummary{})
	writeSweeps(w, nil)
	if got != "" {
		t.Errorf("no sweep: %q, want nothing", got)
	}
	writeSweeps(w, &SweepSummary{Count: 4, Seconds: 1.2, ReleaseSeconds: 0.4})
	want := "The serve process's sweeps during the load phases (its /metrics): 4, 1.20 s in all (300 ms a sweep), of which 0.40 s releasing stale sessions (100 ms a sweep).\n\n"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
