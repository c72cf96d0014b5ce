package marketsim_test

import (
	"flag"
	"testing"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/bench/marketsim"
)

// The market's size; docs/allocation.md gives the sizes its figures used.
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
// that no policy over-delivers or offers what it then refuses at entry.
func TestCompareAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
	}
	var rs []marketsim.Result
	for _, a := range []engine.Allocation{engine.AllocationGreedy, engine.AllocationBalanced} {
		r := marketsim.Run(marketsim.Config{Campaigns: *campaigns, Participants: *participants, Days: *days,
			Seed: *seed, Allocation: a, TargetScale: *scale})
		t.Log(r)
		rs = append(rs, r)
	}
	if rs[0].Arrivals != rs[1].Arrivals || rs[0].Arrivals == 0 {
		t.Errorf("arrivals differ: %d vs %d", rs[0].Arrivals, rs[1].Arrivals)
	}
	for _, r := range rs {
		if r.Completes > r.Target || r.Entries != r.Offered || r.Offered > r.Arrivals {
			t.Errorf("inconsistent result %v", r)
		}
	}
}
