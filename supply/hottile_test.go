package supply

import (
	"math"
	"testing"

	"github.com/switchboard/switchboard/engine"
)

// TestHotTilesSample: the threshold is the 90th percentile of what a minute served,
// whether the minute served fewer offers than the reservoir holds (each one kept) or many
// more (a uniform sample of all of them, not the first ones nor the last).
func TestHotTilesSample(t *testing.T) {
	for _, tc := range []struct {
		name     string
		served   int
		want     float64
		leeway   float64
		answerOf int // offers per answer
	}{
		{"fewer than the reservoir", 300, 270, 1, 30},
		{"many more, answers of 30", 60_000, 54_000, 3_000, 30},
		{"many more, answers of 7", 60_000, 54_000, 3_000, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHotTiles()
			if h.isHot(math.MaxFloat64) {
				t.Fatal("hot before the first minute closed")
			}
			answer := make([]engine.Offer, 0, tc.answerOf)
			for v := range tc.served {
				answer = append(answer, engine.Offer{EPC: float64(v + 1)})
				if len(answer) == tc.answerOf || v == tc.served-1 {
					h.record(answer)
					answer = answer[:0]
				}
			}
			h.record(nil)
			h.roll()
			got := math.Float64frombits(h.threshold.Load())
			if math.Abs(got-tc.want) > tc.leeway {
				t.Fatalf("threshold %.0f, want %.0f ± %.0f", got, tc.want, tc.leeway)
			}
			if !h.isHot(got) || h.isHot(got-1) {
				t.Fatalf("isHot around the threshold %.0f", got)
			}
		})
	}
}
