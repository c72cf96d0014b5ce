package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkRefresh measures what a match asks for once refreshAfter campaigns had their
// conversion bound raised (a stream of completes): a new rank order of the partition. "full"
// recomputes every bound and sorts every slot (what every refresh did before); "refresh" is
// the refresh as it runs now (mostly a merge of the raised campaigns into the current order).
func BenchmarkRefresh(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		cs := make([]Campaign, n)
		r := rand.New(rand.NewPCG(8, 8))
		ctr := NewCounters()
		for i := range cs {
			cs[i] = Campaign{ID: int64(i + 1), CountryID: 1, Status: StatusActive, CPICents: 50 + r.Int64N(400),
				Incidence: 5 + r.IntN(90), Quotas: []Quota{{ID: int64(i + 1), NumRespondents: 100}}}
			s := r.Int64N(400)
			ctr.SetCampaign(cs[i].ID, CampaignCounts{Sessions: s, Completes: r.Int64N(s/2 + 1)})
		}
		part := Build(cs, ctr).parts[1].base
		for _, mode := range []string{"full", "refresh"} {
			b.Run(fmt.Sprintf("campaigns=%d/%s", n, mode), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					b.StopTimer()
					for range refreshAfter + 1 { // completes that raise bounds
						id := cs[r.IntN(n/100)].ID // the few campaigns getting traffic
						v := ctr.Campaign(id, 0)
						v.Completes += (v.Sessions+ConversionPriorWeight)/50 + 1 // a up by over 0.02
						ctr.SetCampaign(id, v)
					}
					b.StartTimer()
					if mode == "full" {
						old := part.ord.Load()
						part.ord.Store(part.order(ctr.raises.Load(), old.w, old.x, old.qw))
					} else {
						part.refresh()
					}
				}
			})
		}
	}
}
