package engine_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/switchboard/switchboard/engine"
)

// Match walks campaigns by an upper bound of their EPC and stops early; the
// bounds follow the live counters. Change counters after the snapshot was
// built (conversions going up and down, reconciliations lowering sessions,
// many campaigns at once) and check that the top k still agrees with the
// reference.
func TestTopKFollowsCounterChanges(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	var nextQuota int64
	pairs := 0
	for m := range 60 {
		n := 20 + r.IntN(200)
		firstID := int64(m*1000 + 1)
		cs := propMarket(r, firstID, n, &nextQuota)
		ctr := engine.NewCounters()
		propCounters(r, ctr, cs)
		e := engine.New(ctr)
		e.Load(cs)
		for round := range 6 {
			// Move some campaigns' conversions: outcomes, rejected or
			// reconciled completes, absolute counts (sessions may drop).
			moves := 1 + r.IntN(5)
			if round == 3 {
				moves = 600 // more than a match handles itself: fallback path
			}
			for range moves {
				c := &cs[r.IntN(len(cs))]
				var qids []int64
				if len(c.Quotas) > 0 {
					qids = []int64{c.Quotas[0].ID}
				}
				switch r.IntN(4) {
				case 0:
					for range 1 + r.IntN(20) {
						ctr.RecordOutcome(c.ID, qids, r.IntN(3) > 0, propNow-86400)
					}
				case 1:
					ctr.AddCompletes(c.ID, nil, r.Int64N(11)-5, propNow-86400)
				case 2:
					v := ctr.Campaign(c.ID, propNow)
					v.Sessions = r.Int64N(5)
					v.Completes = r.Int64N(v.Sessions + 1)
					ctr.SetCampaign(c.ID, v)
				default:
					for range 1 + r.IntN(20) {
						ctr.RecordOutcome(c.ID, qids, false, propNow-86400)
					}
				}
			}
			if round == 5 {
				time.Sleep(20 * time.Millisecond) // let a background reorder land
			}
			for range 8 {
				p := propParticipant(r, firstID, n)
				share := 0.5 + r.Float64()/2
				want := refMatch(cs, ctr, p, share, propNow)
				k := 1 + r.IntN(6)
				got := e.Match(p, share, propNow, k, nil)
				if !sameOffers(got, want[:min(k, len(want))]) {
					t.Fatalf("market %d round %d top %d:\n got %v\nwant %v", m, round, k, ids(got), ids(want[:min(k, len(want))]))
				}
				pairs++
			}
		}
	}
	t.Logf("%d pairs", pairs)
}

// A long run of one-campaign changes goes through the delta index, dead
// base slots and the occasional full rebuild of the country; matching must
// agree with the reference throughout.
func TestIncrementalUpdatesAgreeWithReference(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 17))
	var nextQuota int64
	const n = 300
	const firstID = 1
	cs := propMarket(r, firstID, n, &nextQuota)
	for i := range cs { // one country, mostly active: a large base
		cs[i].CountryID = 1
		if r.IntN(5) != 0 {
			cs[i].Status = engine.StatusActive
		}
	}
	ctr := engine.NewCounters()
	propCounters(r, ctr, cs)
	e := engine.New(ctr)
	e.Load(cs)
	pairs := 0
	for round := range 400 {
		i := r.IntN(n)
		var removed []int64
		switch r.IntN(4) {
		case 0: // remove
			cs[i].Status = 5
			removed = []int64{cs[i].ID}
			e.Apply(nil, removed)
		case 1: // pause or resume through a change
			c := cs[i]
			c.Status = []int{engine.StatusActive, 5}[r.IntN(2)]
			cs[i] = c
			e.Apply([]engine.Campaign{c}, nil)
		default: // new definition
			c := propMarket(r, cs[i].ID, 1, &nextQuota)[0]
			c.CountryID = 1
			c.Related = cs[i].Related
			propCounters(r, ctr, []engine.Campaign{c})
			cs[i] = c
			e.Apply([]engine.Campaign{c}, nil)
		}
		if got := e.Snapshot().Len(); got != activeCount(cs) {
			t.Fatalf("round %d: snapshot holds %d campaigns, want %d", round, got, activeCount(cs))
		}
		for range 3 {
			p := propParticipant(r, firstID, n)
			p.CountryID = 1
			share := 0.5 + r.Float64()/2
			want := refMatch(cs, ctr, p, share, propNow)
			k := []int{0, 1, 3, 10}[r.IntN(4)]
			got := e.Match(p, share, propNow, k, nil)
			if k > 0 {
				want = want[:min(k, len(want))]
			}
			if !sameOffers(got, want) {
				t.Fatalf("round %d top %d:\n got %v\nwant %v", round, k, ids(got), ids(want))
			}
			j := r.IntN(n)
			ref := refCampaign(&cs[j], ctr, p, propNow)
			if _, ok := e.Eligible(p, cs[j].ID, propNow, nil); ok != ref.ok {
				t.Fatalf("round %d campaign %d: Eligible %v, reference %v", round, cs[j].ID, ok, ref.ok)
			}
			pairs++
		}
	}
	t.Logf("%d pairs", pairs)
}
