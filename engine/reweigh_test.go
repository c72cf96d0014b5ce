package engine_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/switchboard/switchboard/engine"
)

// TestReweighedRanksAsRebuilt: a weight refresh of a market whose campaigns
// did not change since it was indexed reranks the index in place rather than
// rebuilding it; after counter moves it must rank every participant exactly
// as a snapshot built whole from the same campaigns and state. A market with
// changed campaigns (a delta, dead slots) is rebuilt by the refresh. Under
// balanced and under bidprice (its quotas' weights reweighed with the
// campaigns').
func TestReweighedRanksAsRebuilt(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 13))
	var nextQuota int64
	checked := 0
	for m := range 100 {
		n := 5 + r.IntN(40)
		policy := engine.AllocationBalanced
		if m%4 >= 2 {
			policy = engine.AllocationBidPrice
		}
		cs, ctr, e, firstID := weightedMarket(t, r, m, n, 100+r.IntN(200), 20, &nextQuota, policy)
		e.RefreshAllocation(propNow)
		// Changes between refreshes: some campaigns changed (delta), some removed (dead).
		var changed []engine.Campaign
		var removed []int64
		for i := range cs {
			switch r.IntN(8) {
			case 0:
				cs[i].CPICents += 11
				changed = append(changed, cs[i])
			case 1:
				removed = append(removed, cs[i].ID)
			}
		}
		changes := m%2 == 1
		if changes {
			e.Apply(changed, removed)
		}
		propCounters(r, ctr, cs)
		before := e.Snapshot()
		e.RefreshAllocation(propNow + 3600)
		if !changes && !e.Snapshot().SharesIndex(before) {
			t.Fatalf("market %d: no campaign changed, yet the refresh rebuilt the index", m)
		}
		type ask struct {
			p     *engine.Participant
			share float64
			k     int
			all   []engine.Offer
			top   []engine.Offer
		}
		asks := make([]ask, 10)
		for i := range asks {
			a := &asks[i]
			a.p, a.share, a.k = propParticipant(r, firstID, n), 0.5+r.Float64()/2, 1+r.IntN(5)
			a.all = e.Match(a.p, a.share, propNow+3600, 0, nil)
			a.top = e.Match(a.p, a.share, propNow+3600, a.k, nil)
		}
		e.Rebuild()
		for _, a := range asks {
			all := e.Match(a.p, a.share, propNow+3600, 0, nil)
			top := e.Match(a.p, a.share, propNow+3600, a.k, nil)
			if !slices.Equal(a.all, all) || !slices.Equal(a.top, top) {
				t.Fatalf("market %d: reweighed %v / %v, rebuilt %v / %v", m, scores(a.all), scores(a.top), scores(all), scores(top))
			}
			checked++
		}
	}
	t.Logf("%d participants ranked alike", checked)
}
