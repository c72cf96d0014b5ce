package engine

import (
	"math/rand/v2"
	"testing"
)

// A refresh under a stream of outcomes moves only the raised campaigns most of the time
// (reorder) and recomputes everything every fullRefreshEvery-th time. After each one the
// published order must still be exact for matching: every slot once, keys descending, and
// each slot's key at least its campaign's bound now (no campaign is raised while the test
// refreshes, so every bound counts). Outcomes of campaigns of another country are logged
// as raises too and must be ignored.
func TestRefreshKeepsOrderExact(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 4))
	for _, n := range []int{1, 7, 300, 2000} {
		var cs []Campaign
		for i := range n + 20 {
			c := Campaign{ID: int64(i + 1), CountryID: 1, Status: StatusActive, CPICents: 50 + r.Int64N(400),
				Incidence: 5 + r.IntN(90), Quotas: []Quota{{ID: int64(i + 1), NumRespondents: 100}}}
			if i >= n {
				c.CountryID = 2
			}
			cs = append(cs, c)
		}
		ctr := NewCounters()
		for _, c := range cs {
			s := r.Int64N(200)
			ctr.SetCampaign(c.ID, CampaignCounts{Sessions: s, Completes: r.Int64N(s + 1)})
		}
		s := Build(cs, ctr)
		part := s.parts[1].base
		for round := range 3 * fullRefreshEvery {
			// Raise some bounds (completes), lower others (outcomes that do not complete).
			for range r.IntN(3 * refreshAfter) {
				id := cs[r.IntN(len(cs))].ID
				for range 1 + r.IntN(10) {
					ctr.RecordOutcome(id, []int64{id}, r.IntN(4) > 0, 0)
				}
			}
			part.refresh()
			ord := part.ord.Load()
			if ord.seq != ctr.raises.Load() {
				t.Fatalf("n %d round %d: order seq %d, raises %d", n, round, ord.seq, ctr.raises.Load())
			}
			if len(ord.slots) != n || len(ord.keys) != n {
				t.Fatalf("n %d round %d: %d slots, %d keys", n, round, len(ord.slots), len(ord.keys))
			}
			seen := make([]bool, n)
			for i, slot := range ord.slots {
				if seen[slot] {
					t.Fatalf("n %d round %d: slot %d twice", n, round, slot)
				}
				seen[slot] = true
				if i > 0 && ord.keys[i] > ord.keys[i-1] {
					t.Fatalf("n %d round %d: keys not descending at %d", n, round, i)
				}
				m := &part.camps[slot]
				if b := boundKey(m.cpi, m.inc, m.counter); ord.keys[i] < b {
					t.Fatalf("n %d round %d: campaign %d keyed %v below its bound %v", n, round, part.cold[slot].id, ord.keys[i], b)
				}
			}
		}
	}
}
