package engine_test

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard/switchboard/engine"
)

func TestParseAllocationSplit(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want: the canonical form, or the error's telling part
		ok       bool
	}{
		{"greedy:50,bidprice:50", "greedy:50,bidprice:50", true},
		{" bidprice : 30 , greedy:70 ", "bidprice:30,greedy:70", true},
		{"greedy:25,bidprice:25,balanced:25,edf:25", "greedy:25,bidprice:25,balanced:25,edf:25", true},
		{"greedy:100", "greedy:100", true},
		{"", "empty", false},
		{"greedy", "not policy:share", false},
		{"greedy:50,fifo:50", `unknown policy "fifo"`, false},
		{"greedy:50,greedy:50", "greedy given twice", false},
		{"greedy:50,bidprice:40", "sum to 90", false},
		{"greedy:60,bidprice:60", "sum to 120", false},
		{"greedy:0,bidprice:100", "1..100", false},
		{"greedy:-5,bidprice:105", "1..100", false},
		{"greedy:x,bidprice:50", "1..100", false},
		{"greedy:50,", "not policy:share", false},
	} {
		sp, err := engine.ParseAllocationSplit(tc.in)
		switch {
		case tc.ok && (err != nil || sp.String() != tc.want || !sp.Enabled()):
			t.Errorf("ParseAllocationSplit(%q) = %q, %v; want %q", tc.in, sp, err, tc.want)
		case !tc.ok && (err == nil || !strings.HasPrefix(err.Error(), "allocation-split: ") || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("ParseAllocationSplit(%q) error = %v; want one naming the flag and %q", tc.in, err, tc.want)
		}
	}
}

// TestAllocationSplitAssign: a participant's arm is stable, the arms take
// their shares of the participants within sampling error (sequential and
// random ids), the draw is independent of the exploration draw, and
// assigning allocates nothing.
func TestAllocationSplitAssign(t *testing.T) {
	if (engine.AllocationSplit{}).Assign(7) != engine.AllocationGreedy {
		t.Fatal("no split: want greedy")
	}
	rng := rand.New(rand.NewPCG(3, 5))
	for _, flag := range []string{"greedy:50,bidprice:50", "greedy:10,balanced:30,edf:60", "bidprice:1,greedy:99"} {
		sp, err := engine.ParseAllocationSplit(flag)
		if err != nil {
			t.Fatal(err)
		}
		for _, ids := range []struct {
			name string
			next func(i int) int64
		}{
			{"sequential", func(i int) int64 { return int64(i + 1) }},
			{"random", func(int) int64 { return rng.Int64() }},
		} {
			const n = 200_000
			got := map[engine.Allocation]int{}
			explore := map[engine.Allocation]float64{} // sum of one campaign's exploration draws
			for i := range n {
				id := ids.next(i)
				a := sp.Assign(id)
				if again := sp.Assign(id); again != a {
					t.Fatalf("%s: participant %d assigned %v then %v", flag, id, a, again)
				}
				got[a]++
				explore[a] += engine.ExplorationDraw(id, 42)
			}
			for _, a := range sp.Policies() {
				p := float64(sp.Share(a)) / 100
				sd := math.Sqrt(n * p * (1 - p))
				if diff := math.Abs(float64(got[a]) - n*p); diff > 5*sd+1 {
					t.Errorf("%s %s: %v took %d of %d, want %.0f ± %.0f", flag, ids.name, a, got[a], n, n*p, 5*sd)
				}
				// Uniform draws: mean 1/2, sd 1/√(12 m) over m participants.
				m := float64(got[a])
				if mean := explore[a] / m; math.Abs(mean-0.5) > 5/math.Sqrt(12*m) {
					t.Errorf("%s %s: exploration draws of arm %v average %.4f, want 0.5 (split not independent)", flag, ids.name, a, mean)
				}
			}
			if len(got) != len(sp.Policies()) {
				t.Errorf("%s: assigned to %v, want only %v", flag, got, sp.Policies())
			}
		}
		if allocs := testing.AllocsPerRun(100, func() { _ = sp.Assign(rng.Int64()) }); allocs != 0 {
			t.Errorf("Assign allocates %.0f", allocs)
		}
	}
}

// FuzzParseAllocationSplit: any text parses to a split or fails with an
// error naming the flag; none panics, and a split's canonical form parses
// back to the same split, whose shares sum to 100 and whose assignment
// names one of its policies.
func FuzzParseAllocationSplit(f *testing.F) {
	for _, s := range []string{"greedy:50,bidprice:50", "greedy:100", "edf:1,balanced:99", "greedy:50,greedy:50", ":,", "bidprice:+50,greedy:050"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sp, err := engine.ParseAllocationSplit(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "allocation-split: ") {
				t.Fatalf("error %q does not name the flag", err)
			}
			return
		}
		again, err := engine.ParseAllocationSplit(sp.String())
		if err != nil || again.String() != sp.String() {
			t.Fatalf("%q: canonical %q reparses to %q, %v", s, sp, again, err)
		}
		sum := 0
		for _, a := range sp.Policies() {
			sum += sp.Share(a)
		}
		if sum != 100 {
			t.Fatalf("%q: shares sum to %d", s, sum)
		}
		if a := sp.Assign(int64(len(s))); !sp.Has(a) {
			t.Fatalf("%q: assigned %v, not an arm", s, a)
		}
	})
}

// TestAllocationSplitRanksByArm: under a split, each participant's offers
// are ranked as an engine running only the policy of the participant's arm
// ranks them (same counters, panel and refresh time): after a refresh,
// after outcomes raise bounds and the orders are refreshed, and after a
// campaign changes (a delta partition). Both arms are met, the policies
// disagree on some participant (the arm matters), and a match allocates
// nothing.
func TestAllocationSplitRanksByArm(t *testing.T) {
	for _, flag := range []string{"greedy:50,bidprice:50", "balanced:40,greedy:30,bidprice:30"} {
		t.Run(flag, func(t *testing.T) { splitRanksByArm(t, flag) })
	}
}

func splitRanksByArm(t *testing.T, flag string) {
	sp, err := engine.ParseAllocationSplit(flag)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(41, 3))
	var nextQuota int64
	const firstID, n = 1, 30
	cs := propMarket(r, firstID, n, &nextQuota)
	propFieldPeriods(r, cs, 5)
	panel := propPanel(t, r, firstID, n, 200, 20, 40)
	ps := make([]engine.Participant, 300)
	for i := range ps {
		ps[i] = *propParticipant(r, firstID, n)
		ps[i].ID = r.Int64N(1 << 40)
	}
	ctr := engine.NewCounters()
	propCounters(r, ctr, cs)
	split := engine.New(ctr)
	split.Load(cs)
	split.SetAllocationSplit(sp, panel)
	single := map[engine.Allocation]*engine.Engine{}
	for _, a := range sp.Policies() {
		e := engine.New(ctr)
		e.Load(cs)
		e.SetAllocation(a, panel)
		single[a] = e
	}
	refresh := func(now int64) {
		for _, e := range append([]*engine.Engine{split}, slices.Collect(maps.Values(single))...) {
			e.RefreshAllocation(now)
		}
	}
	check := func(step string) {
		met, differ := map[engine.Allocation]int{}, 0
		for i := range ps {
			p := &ps[i]
			a := sp.Assign(p.ID)
			met[a]++
			got := split.Match(p, 0.6, propNow, 0, nil)
			if want := single[a].Match(p, 0.6, propNow, 0, nil); !sameRanking(got, want) {
				t.Fatalf("%s: participant %d (%v):\n got %v\nwant %v", step, p.ID, a, scores(got), scores(want))
			}
			for _, b := range sp.Policies() {
				if b != a && !sameRanking(got, single[b].Match(p, 0.6, propNow, 0, nil)) {
					differ++
					break
				}
			}
		}
		if len(met) != len(sp.Policies()) || differ == 0 {
			t.Fatalf("%s: arms met %v, %d participants ranked differently by another arm", step, met, differ)
		}
	}
	refresh(propNow)
	check("refreshed")
	for i := range 400 {
		c := &cs[i%len(cs)]
		var quotas []int64
		for _, q := range c.Quotas {
			quotas = append(quotas, q.ID)
		}
		ctr.RecordOutcome(c.ID, quotas, i%3 == 0, propNow)
	}
	refresh(propNow + 600)
	check("outcomes")
	changed := cs[3]
	changed.CPICents += 40
	for _, e := range append([]*engine.Engine{split}, slices.Collect(maps.Values(single))...) {
		e.Apply([]engine.Campaign{changed}, nil)
	}
	check("delta")
	if raceEnabled {
		return
	}
	dst := make([]engine.Offer, 0, 10)
	if allocs := testing.AllocsPerRun(200, func() { dst = split.Match(&ps[7], 0.6, propNow, 10, dst) }); allocs != 0 {
		t.Errorf("a split's match allocates %.1f", allocs)
	}
}
