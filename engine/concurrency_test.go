package engine_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/engine/synth"
)

// Matches run while counters change and snapshots are swapped; run with
// -race. Every answer must be internally consistent, and once writers stop
// the engine must agree with the reference again.
func TestConcurrentMatchCountersAndSwaps(t *testing.T) {
	cs := synth.Market(200, 3)
	ps := synth.Participants(200, 4, len(cs))
	e := engine.New(nil)
	e.Load(cs)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dst := make([]engine.Offer, 0, 30)
			var quotas []int64
			for i := 0; !stop.Load(); i++ {
				p := &ps[(i*7+w)%len(ps)]
				dst = e.Match(p, 0.6, synth.Now, 30, dst)
				seen := map[int64]bool{}
				for j, o := range dst {
					if seen[o.CampaignID] || (j > 0 && dst[j-1].EPC < o.EPC) {
						t.Errorf("inconsistent answer %v", ids(dst))
						return
					}
					seen[o.CampaignID] = true
				}
				if len(dst) > 0 {
					quotas, _ = e.Eligible(p, dst[0].CampaignID, synth.Now, quotas[:0])
				}
			}
		}()
	}
	wg.Add(2)
	go func() { // counters: entries, outcomes, reconciliation
		defer wg.Done()
		ctr := e.Counters()
		for i := 0; !stop.Load(); i++ {
			c := &cs[i%len(cs)]
			q := []int64{c.Quotas[0].ID}
			ctr.RecordEntry(c.ID, q)
			ctr.RecordOutcome(c.ID, q, i%3 == 0, synth.Now)
			if i%10 == 0 {
				ctr.SetQuota(q[0], engine.QuotaCounts{Completes: int64(i % 7)})
			}
		}
	}()
	go func() { // snapshot swaps: pause and resume campaigns
		defer wg.Done()
		for i := 0; i < 20; i++ {
			c := cs[i%len(cs)]
			c.Status = 5
			e.Apply([]engine.Campaign{c}, nil)
			e.Apply([]engine.Campaign{cs[i%len(cs)]}, nil)
		}
		stop.Store(true)
	}()
	wg.Wait()

	if got := e.Snapshot().Len(); got != len(cs) {
		t.Fatalf("after swaps the snapshot holds %d campaigns, want %d", got, len(cs))
	}
	for i := range ps[:50] {
		want := refMatch(cs, e.Counters(), &ps[i], 0.6, synth.Now)
		if got := e.Match(&ps[i], 0.6, synth.Now, 0, nil); !sameOffers(got, want) {
			t.Fatalf("participant %d after concurrency:\n got %v\nwant %v", ps[i].ID, ids(got), ids(want))
		}
	}
}
