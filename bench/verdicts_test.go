package bench

import (
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
