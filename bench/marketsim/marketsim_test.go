package marketsim_test

import (
	"errors"
	"flag"
	"reflect"
	"testing"

	"github.com/switchboard/switchboard/bench/marketsim"
	"github.com/switchboard/switchboard/engine"
)

// The market's size; docs/allocation.md gives the sizes its figures used
// (switchboard simulate runs the full comparison).
var (
	campaigns    = flag.Int("sim.campaigns", 100, "simulated campaigns")
	participants = flag.Int("sim.participants", 400, "simulated panel size")
	days         = flag.Int("sim.days", 4, "simulated days")
	scale        = flag.Int("sim.scale", 150, "divide quota targets by this")
	seed         = flag.Int64("sim.seed", 1, "market and arrivals seed")
)

// TestCompareAllocations runs one market under each policy and logs what
// each delivered (go test -v -run TestCompareAllocations ./bench/marketsim
// -args -sim.campaigns ...). It checks that both see the same visits and
// that the figures are consistent with one another.
func TestCompareAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
	}
	var rs []marketsim.Result
	for _, a := range []engine.Allocation{engine.AllocationGreedy, engine.AllocationBalanced} {
		r, err := marketsim.Run(marketsim.Config{Campaigns: *campaigns, Participants: *participants, Days: *days,
			Seed: *seed, Allocation: a, TargetScale: *scale})
		if err != nil {
			t.Fatal(err)
		}
		t.Log(r)
		rs = append(rs, r)
	}
	if rs[0].Arrivals != rs[1].Arrivals || rs[0].Arrivals == 0 {
		t.Errorf("arrivals differ: %d vs %d", rs[0].Arrivals, rs[1].Arrivals)
	}
	for _, r := range rs {
		if r.Entries > r.Offered || r.Offered > r.Arrivals || r.Completes+r.Terminates > r.Entries ||
			r.Filled > r.Due || r.QuotasFilled > r.DueQuotas || len(r.Fill) != *days || r.Completes == 0 {
			t.Errorf("inconsistent result %+v", r)
		}
	}
}

// TestDeterministic runs a tiny market twice under each policy, with and
// without re-routing, with the same seed and requires the same result, and
// a different seed to give a different one.
func TestDeterministic(t *testing.T) {
	for _, v := range marketsim.Variants([]engine.Allocation{engine.AllocationGreedy, engine.AllocationBalanced}, []int{0, 2}) {
		cfg := marketsim.Config{Campaigns: 30, Participants: 150, Days: 3, Seed: 7, Allocation: v.Allocation, RerouteAttempts: v.Reroute, TargetScale: 100}
		r1, err1 := marketsim.Run(cfg)
		r2, err2 := marketsim.Run(cfg)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if !reflect.DeepEqual(r1, r2) {
			t.Errorf("%s: two runs of seed 7 differ:\n%+v\n%+v", v, r1, r2)
		}
		if r1.Completes == 0 {
			t.Errorf("%s: tiny market completed nothing: %+v", v, r1)
		}
		cfg.Seed = 8
		r3, _ := marketsim.Run(cfg)
		if reflect.DeepEqual(r1, r3) {
			t.Errorf("%s: seeds 7 and 8 gave the same result", v)
		}
	}
}

// TestReroute: with 2 attempts, terminated visits continue (docs/rules.md
// §10), so the same visits bring more sessions and completes and fewer
// participants leave with nothing; without, nothing is re-routed.
func TestReroute(t *testing.T) {
	base := marketsim.Config{Campaigns: 60, Participants: 200, Days: 3, Seed: 3, TargetScale: 100}
	off, err := marketsim.Run(base)
	if err != nil {
		t.Fatal(err)
	}
	base.RerouteAttempts = 2
	on, err := marketsim.Run(base)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(off)
	t.Log(on)
	if off.Rerouted != 0 || off.Sessions != off.Entries {
		t.Errorf("reroute off: %d re-routed, %d sessions for %d entries", off.Rerouted, off.Sessions, off.Entries)
	}
	if on.Arrivals != off.Arrivals {
		t.Errorf("arrivals differ: %d vs %d", on.Arrivals, off.Arrivals)
	}
	if on.Rerouted == 0 || on.Sessions <= on.Entries || on.Rerouted > 2*on.Entries || on.Sessions > 3*on.Entries {
		t.Errorf("reroute 2: %d sessions, %d re-routed for %d entries", on.Sessions, on.Rerouted, on.Entries)
	}
	if on.Completes <= off.Completes || on.LeftEmpty >= off.LeftEmpty {
		t.Errorf("reroute 2: completes %d (off %d), left with nothing %d (off %d)", on.Completes, off.Completes, on.LeftEmpty, off.LeftEmpty)
	}
	for _, r := range []marketsim.Result{off, on} {
		if r.LeftEmpty > r.Entries || r.Completes+r.Terminates > r.Sessions {
			t.Errorf("inconsistent result %+v", r)
		}
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
