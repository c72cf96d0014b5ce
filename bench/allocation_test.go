package bench

import (
	"math"
	"testing"
	"time"
)

// TestAllocationRatios checks the paired comparisons' medians: per-round ratios of
// balanced over greedy (and of this binary over a baseline), the median over an odd and an even number of rounds, and a round
// without requests left out.
func TestAllocationRatios(t *testing.T) {
	// phase answers rps requests/s over a 10 s window, spending cpu seconds per 1,000.
	phase := func(rps, cpu float64) *Phase {
		n := uint64(rps * 10)
		return &Phase{Result: &Result{Throughput: rps, Requests: n, Window: 10 * time.Second},
			Elapsed: 10 * time.Second, ServerCPU: time.Duration(cpu * float64(n) / 1000 * float64(time.Second))}
	}
	round := func(g, b, gcpu, bcpu float64) AllocationRound {
		return AllocationRound{Greedy: phase(g, gcpu), Balanced: phase(b, bcpu)}
	}
	for _, tc := range []struct {
		name            string
		rounds          []AllocationRound
		throughput, cpu float64
	}{
		{"none", nil, 0, 0},
		{"one", []AllocationRound{round(1000, 900, 0.1, 0.12)}, 0.9, 1.2},
		{"odd", []AllocationRound{round(1000, 1100, 0.1, 0.1), round(1000, 900, 0.1, 0.2), round(2000, 1900, 0.1, 0.11)}, 0.95, 1.1},
		{"even", []AllocationRound{round(1000, 1000, 0.1, 0.1), round(1000, 900, 0.1, 0.12)}, 0.95, 1.1},
		{"a round without answers", []AllocationRound{round(1000, 980, 0.1, 0.1), round(0, 500, 0, 0.1)}, 0.98, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The same rounds as a comparison with a baseline binary (greedy's place).
			var binaries []BinaryRound
			for _, a := range tc.rounds {
				binaries = append(binaries, BinaryRound{Baseline: a.Greedy, This: a.Balanced})
			}
			r := &Report{Allocation: tc.rounds, Binaries: binaries}
			th, cpu := r.AllocationRatios()
			if math.Abs(th-tc.throughput) > 1e-9 || math.Abs(cpu-tc.cpu) > 1e-9 {
				t.Fatalf("ratios %.4f, %.4f; want %.4f, %.4f", th, cpu, tc.throughput, tc.cpu)
			}
			if bth, bcpu := r.BinaryRatios(); bth != th || bcpu != cpu {
				t.Fatalf("binary ratios %.4f, %.4f; want %.4f, %.4f", bth, bcpu, th, cpu)
			}
		})
	}
}
