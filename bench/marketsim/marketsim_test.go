package marketsim_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/switchboard/switchboard/bench/marketsim"
	"github.com/switchboard/switchboard/engine"
)

// tiny is a market small enough for a test under -race.
func tiny(seed int64) marketsim.Config {
	return marketsim.Config{Campaigns: 20, Arriving: 8, Participants: 350, Days: 3, Seed: seed}
}

// TestDeterministic runs a tiny market twice under each policy, with and
// without re-routing, with the same seed and requires the same result, and
// a different seed to give different visits. Every policy sees the same
// visits.
func TestDeterministic(t *testing.T) {
	visits := -1
	for _, v := range append(marketsim.Variants([]engine.Allocation{engine.AllocationGreedy, engine.AllocationEDF, engine.AllocationBalanced}, []int{0}),
		marketsim.Variant{Allocation: engine.AllocationBalanced, Reroute: 2}) {
		cfg := tiny(7)
		cfg.Allocation, cfg.RerouteAttempts = v.Allocation, v.Reroute
		r1, err1 := marketsim.Run(cfg)
		r2, err2 := marketsim.Run(cfg)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if !reflect.DeepEqual(r1, r2) {
			t.Errorf("%s: two runs of seed 7 differ:\n%+v\n%+v", v, r1, r2)
		}
		if r1.Completes == 0 || r1.Due == 0 || r1.Abandoned == 0 {
			t.Errorf("%s: tiny market completed, closed or abandoned nothing: %+v", v, r1)
		}
		if visits >= 0 && r1.Arrivals != visits {
			t.Errorf("%s: %d visits, another policy saw %d", v, r1.Arrivals, visits)
		}
		visits = r1.Arrivals
		for _, r := range []marketsim.Result{r1} {
			if r.Entries > r.Offered || r.Offered > r.Arrivals || r.Completes+r.Terminates+r.Abandoned > r.Sessions ||
				r.Filled > r.Due || r.QuotasFilled > r.DueQuotas || r.LeftEmpty > r.Entries {
				t.Errorf("%s: inconsistent result %+v", v, r)
			}
		}
	}
	cfg := tiny(8)
	r3, _ := marketsim.Run(cfg)
	if r3.Arrivals == visits {
		t.Errorf("seeds 7 and 8 gave the same visits")
	}
}

// TestReroute: with 2 attempts, screened-out visits continue (docs/rules.md
// §10), so the same visits bring more sessions and completes and fewer
// participants leave with nothing; without, nothing is re-routed.
func TestReroute(t *testing.T) {
	base := tiny(3)
	off, err := marketsim.Run(base)
	if err != nil {
		t.Fatal(err)
	}
	base.RerouteAttempts = 2
	on, err := marketsim.Run(base)
	if err != nil {
		t.Fatal(err)
	}
	if off.Rerouted != 0 || off.Sessions != off.Entries {
		t.Errorf("reroute off: %d re-routed, %d sessions for %d entries", off.Rerouted, off.Sessions, off.Entries)
	}
	if on.Arrivals != off.Arrivals {
		t.Errorf("visits differ: %d vs %d", on.Arrivals, off.Arrivals)
	}
	if on.Rerouted == 0 || on.Sessions <= on.Entries || on.Rerouted > 2*on.Entries || on.Sessions > 3*on.Entries {
		t.Errorf("reroute 2: %d sessions, %d re-routed for %d entries", on.Sessions, on.Rerouted, on.Entries)
	}
	if on.Completes <= off.Completes || on.LeftEmpty >= off.LeftEmpty {
		t.Errorf("reroute 2: completes %d (off %d), left with nothing %d (off %d)", on.Completes, off.Completes, on.LeftEmpty, off.LeftEmpty)
	}
}

// TestRerouteBounds: reroute_attempts is 0..5 (docs/rules.md §10).
func TestRerouteBounds(t *testing.T) {
	for _, n := range []int{-1, 6} {
		if _, err := marketsim.Run(marketsim.Config{Campaigns: 1, Participants: 1, Days: 1, RerouteAttempts: n}); !errors.Is(err, marketsim.ErrReroute) {
			t.Errorf("RerouteAttempts %d: err %v, want ErrReroute", n, err)
		}
	}
}

// TestDemand: quotas sized at a larger multiple of their feasibility leave
// more of them unfilled under the same policy.
func TestDemand(t *testing.T) {
	share := map[float64]float64{}
	for _, d := range []float64{0.2, 3} {
		cfg := tiny(5)
		cfg.Demand, cfg.QuotaMin, cfg.Participants = d, 1, 1500
		r, err := marketsim.Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		share[d] = r.QuotasFilledShare()
	}
	if share[0.2] <= share[3] {
		t.Errorf("quotas filled: %.3f at demand 0.2, %.3f at demand 3", share[0.2], share[3])
	}
}

// TestSeedSets: the tuning and evaluation seeds are disjoint, at least 100
// each, without repeats.
func TestSeedSets(t *testing.T) {
	seen := map[int64]string{}
	for name, set := range map[string][]int64{"tuning": marketsim.TuningSeeds, "evaluation": marketsim.EvaluationSeeds} {
		if len(set) < 100 {
			t.Errorf("%s: %d seeds, want at least 100", name, len(set))
		}
		for _, s := range set {
			if other, ok := seen[s]; ok {
				t.Errorf("seed %d is in %s and %s", s, other, name)
			}
			seen[s] = name
		}
	}
}

// TestShapes: the grid has the named shapes the evaluation states, each
// name once, each a different market.
func TestShapes(t *testing.T) {
	names := map[string]bool{}
	for i, s := range marketsim.Shapes {
		if names[s.Name] || s.About == "" {
			t.Errorf("shape %q repeated or undescribed", s.Name)
		}
		names[s.Name] = true
		for _, o := range marketsim.Shapes[:i] {
			if reflect.DeepEqual(o.Config, s.Config) {
				t.Errorf("shapes %s and %s are the same market", o.Name, s.Name)
			}
		}
	}
	for _, n := range []string{"supply-short", "balanced", "demand-short", "realistic-quotas", "arrivals", "field-7", "field-14", "field-30",
		"one-partner", "many-partners", "low-conversion", "high-conversion"} {
		if !names[n] {
			t.Errorf("no shape %s", n)
		}
	}
	if s, ok := marketsim.ShapeByName("realistic-quotas"); !ok || s.Config.QuotaMin != 20 || s.Config.QuotaMax != 2000 {
		t.Errorf("realistic-quotas: %+v", s.Config)
	}
}

// TestGrid runs a tiny grid and checks that every shape compares the
// policy with each baseline on every seed.
func TestGrid(t *testing.T) {
	shapes := []marketsim.Shape{{Name: "a", About: "a", Config: tiny(0)}, {Name: "b", About: "b", Config: tiny(0)}}
	shapes[1].Config.Demand = 3
	g, err := marketsim.RunGrid(context.Background(), engine.AllocationBalanced, []engine.Allocation{engine.AllocationGreedy, engine.AllocationEDF}, shapes, []int64{1, 2}, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range g.Cmp {
		if len(c.Variants) != 4 {
			t.Fatalf("shape %d: variants %v", i, c.Variants)
		}
		for _, v := range c.Variants {
			for j, r := range c.Runs[v] {
				if r.Seed != []int64{1, 2}[j] || r.Allocation != v.Allocation || r.Reroute != v.Reroute || r.Arrivals == 0 {
					t.Errorf("shape %d %s run %d: %+v", i, v, j, r)
				}
			}
		}
	}
}

// TestCompareStops: a comparison whose context is done starts no more runs
// and says why (simulate stops on SIGINT and SIGTERM).
func TestCompareStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c, err := marketsim.Compare(ctx, tiny(1), []int64{1, 2, 3}, []marketsim.Variant{{Allocation: engine.AllocationGreedy}}, 1)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	for _, r := range c.Runs[marketsim.Variant{Allocation: engine.AllocationGreedy}] {
		if r.Arrivals != 0 {
			t.Errorf("a run started after the context was done: %+v", r)
		}
	}
}
