package engine_test

import (
	"slices"
	"testing"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/engine/synth"
)

// TestBuildYield: Load calls the build's yield at its start and every few hundred
// campaigns, builds the same snapshot as without it, and stops calling it once it is unset.
func TestBuildYield(t *testing.T) {
	cs := synth.Market(3000, 11)
	ps := synth.Participants(200, 12, len(cs))
	plain := engine.New(nil)
	plain.Load(cs)

	yielded := engine.New(nil)
	calls := 0
	yielded.SetBuildYield(func() { calls++ })
	yielded.Load(cs)
	// At least once per 256 campaigns and at the start; the synthetic market's countries
	// each add a few more.
	if calls < 1+len(cs)/256 {
		t.Fatalf("%d calls of the yield over %d campaigns, want at least %d", calls, len(cs), 1+len(cs)/256)
	}
	for i := range ps {
		want := plain.Match(&ps[i], 0.6, synth.Now, 30, nil)
		got := yielded.Match(&ps[i], 0.6, synth.Now, 30, nil)
		if !slices.Equal(got, want) {
			t.Fatalf("participant %d: offers %s with the yield, %s without", ps[i].ID, ids(got), ids(want))
		}
	}

	yielded.SetBuildYield(nil)
	calls = 0
	yielded.Load(cs)
	if calls != 0 {
		t.Fatalf("%d calls after the yield was unset", calls)
	}
}
