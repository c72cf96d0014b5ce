package engine_test

import (
	"math"
	"math/rand/v2"
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
