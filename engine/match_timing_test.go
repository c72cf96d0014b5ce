package engine_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/engine/synth"
)

// benchMarket builds a synthetic market of n campaigns with live-looking
// counters: every quota part-way filled, one in ten full, some sessions in
// progress, and outcome statistics for conversion learning.
func benchMarket(n int) (*engine.Engine, []engine.Campaign, []engine.Participant) {
	cs := synth.Market(n, 1)
	ps := synth.Participants(1000, 2, n)
	e := engine.New(nil)
	r := rand.New(rand.NewPCG(3, 3))
	ctr := e.Counters()
	for _, c := range cs {
		for _, q := range c.Quotas {
			done := r.Int64N(int64(q.NumRespondents))
			if r.IntN(10) == 0 {
				done = int64(q.NumRespondents)
			}
			ctr.SetQuota(q.ID, engine.QuotaCounts{Completes: done, InProgress: r.Int64N(3), Entries: done * 3})
		}
		sessions := r.Int64N(400)
		ctr.SetCampaign(c.ID, engine.CampaignCounts{Day: synth.Now / 86400, DayCompletes: r.Int64N(20), Sessions: sessions, Completes: r.Int64N(sessions/2 + 1)})
	}
	e.Load(cs)
	return e, cs, ps
}

// BenchmarkMatch measures match + rank top 30 for one participant, over 1k,
// 10k and 100k active campaigns in one country. p50-ns is the median of
// individually timed calls; offers/op the number of offers returned.
func BenchmarkMatch(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("campaigns=%d", n), func(b *testing.B) {
			e, _, ps := benchMarket(n)
			timeMatches(b, e, ps)
		})
	}
}

// BenchmarkBruteForce runs the reference matcher (every campaign, every
// quota, every condition walked naively) on the same 10k market, for the
// speed-up ratio.
func BenchmarkBruteForce(b *testing.B) {
	e, cs, ps := benchMarket(10_000)
	ctr := e.Counters()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		out := refMatch(cs, ctr, &ps[i%len(ps)], 0.6, synth.Now)
		_ = out[:min(30, len(out))]
		i++
	}
}

// BenchmarkEligible measures the entry-time re-check of one campaign.
func BenchmarkEligible(b *testing.B) {
	e, _, ps := benchMarket(10_000)
	var targets []int64
	for i := range ps {
		if o := e.Match(&ps[i], 0.6, synth.Now, 1, nil); len(o) > 0 {
			targets = append(targets, o[0].CampaignID)
		} else {
			targets = append(targets, 1)
		}
	}
	quotas := make([]int64, 0, 8)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		quotas, _ = e.Eligible(&ps[i%len(ps)], targets[i%len(ps)], synth.Now, quotas[:0])
		i++
	}
}

// BenchmarkMatchAfterUpdates is BenchmarkMatch at 10k once the country has
// a full delta index: campaigns changed one at a time since the last full
// rebuild, each dead in the base and indexed again in the delta.
func BenchmarkMatchAfterUpdates(b *testing.B) {
	e, cs, ps := benchMarket(10_000)
	for i := range 300 { // just under the delta limit of a 10k country
		c := cs[(i*7919)%len(cs)]
		c.CPICents++
		e.Apply([]engine.Campaign{c}, nil)
	}
	timeMatches(b, e, ps)
}

// BenchmarkMatchBalanced is BenchmarkMatch under the balanced allocation:
// the same markets, weights computed from a panel of the benchmark's
// participants (active on some of the last 30 days) before timing.
func BenchmarkMatchBalanced(b *testing.B) { benchMatchUnder(b, engine.AllocationBalanced) }

// BenchmarkMatchBidPrice is BenchmarkMatch under the bid-price allocation:
// the same markets, quota prices computed from the same panel as
// BenchmarkMatchBalanced's before timing.
func BenchmarkMatchBidPrice(b *testing.B) { benchMatchUnder(b, engine.AllocationBidPrice) }

// BenchmarkMatchSplit is BenchmarkMatch under --allocation-split
// greedy:50,bidprice:50: half the participants walk the greedy order, half
// the bid-price one, weights computed from BenchmarkMatchBidPrice's panel.
func BenchmarkMatchSplit(b *testing.B) {
	sp, err := engine.ParseAllocationSplit("greedy:50,bidprice:50")
	if err != nil {
		b.Fatal(err)
	}
	benchMatchWith(b, func(e *engine.Engine, panel *engine.Panel) { e.SetAllocationSplit(sp, panel) })
}

// benchMatchUnder times matches at 10k and 100k campaigns under policy,
// its weights computed from benchPanel before timing.
func benchMatchUnder(b *testing.B, policy engine.Allocation) {
	benchMatchWith(b, func(e *engine.Engine, panel *engine.Panel) { e.SetAllocation(policy, panel) })
}

// benchMatchWith times matches at 10k and 100k campaigns under the
// allocation set selects, its weights computed from benchPanel before
// timing.
func benchMatchWith(b *testing.B, set func(*engine.Engine, *engine.Panel)) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("campaigns=%d", n), func(b *testing.B) {
			e, _, ps := benchMarket(n)
			set(e, benchPanel(ps))
			e.RefreshAllocation(synth.Now)
			timeMatches(b, e, ps)
		})
	}
}

// BenchmarkMatchSupplyRich is the same markets under each policy with a panel
// whose supply covers most campaigns: 50,000 participants active 20 days of
// the last 30. benchPanel's 1,000 participants active 1-10 days leave most
// campaigns unable to finish by their deadline (weight 1, no exploration), so
// there the balanced walk is close to greedy's; a marketplace's panel makes
// most campaigns feasible, their weights spread over [0.25, 4] and the walk
// longer. Each runs with warm caches and cold (timeMatchesCold), the latter
// closer to a server, whose other work per request evicts the market.
func BenchmarkMatchSupplyRich(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		for _, alloc := range []engine.Allocation{engine.AllocationGreedy, engine.AllocationBalanced, engine.AllocationBidPrice} {
			b.Run(fmt.Sprintf("campaigns=%d/%v", n, alloc), func(b *testing.B) {
				e, _, ps := benchMarket(n)
				pl := engine.NewPanel()
				for _, p := range synth.Participants(50_000, 9, n) {
					for d := range 20 {
						if _, err := pl.Upsert(1, fmt.Sprint(p.ID), p, synth.Now-int64(d)*86400); err != nil {
							b.Fatal(err)
						}
					}
				}
				e.SetAllocation(alloc, pl)
				e.RefreshAllocation(synth.Now)
				b.Run("cache=warm", func(b *testing.B) { timeMatches(b, e, ps) })
				b.Run("cache=cold", func(b *testing.B) { timeMatchesCold(b, e, ps) })
			})
		}
	}
}

// timeMatches times match + rank top 30 of the participants in turn, after
// one warm-up pass (the scratch pool), reporting the median and 99th
// percentile of individually timed calls and the offers returned per call.
func timeMatches(b *testing.B, e *engine.Engine, ps []engine.Participant) {
	timeMatchesBetween(b, e, ps, func() {})
}

// timeMatchesCold is timeMatches with the core's caches overwritten before
// every call, as a server's other work per request does: what a match costs
// when the market's arrays must come from memory or L3. The overwrite is
// outside each call's own timing (p50-ns, p99-ns) but inside ns/op.
func timeMatchesCold(b *testing.B, e *engine.Engine, ps []engine.Participant) {
	junk := make([]uint64, 4<<20/8) // 4 MiB: four times L2 here
	timeMatchesBetween(b, e, ps, func() {
		for i := 0; i < len(junk); i += 8 {
			junk[i]++
		}
	})
}

// timeMatchesBetween times matches as timeMatches does, calling between
// before each timed call.
func timeMatchesBetween(b *testing.B, e *engine.Engine, ps []engine.Participant, between func()) {
	dst := make([]engine.Offer, 0, 30)
	for i := range ps {
		dst = e.Match(&ps[i], 0.6, synth.Now, 30, dst)
	}
	lat := make([]time.Duration, 0, 1<<16)
	offers := 0
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		between()
		t0 := time.Now()
		dst = e.Match(&ps[i%len(ps)], 0.6, synth.Now, 30, dst)
		if len(lat) < cap(lat) {
			lat = append(lat, time.Since(t0))
		}
		offers += len(dst)
		i++
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
	b.ReportMetric(float64(offers)/float64(i), "offers/op")
}

// BenchmarkRefreshAllocation measures the off-path recomputation of the
// weights at 10k and 100k campaigns: under balanced the panel supply scan
// and re-sorting, under bidprice the quotas' programme solved on the
// panel's sample and re-sorting.
func BenchmarkRefreshAllocation(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		for _, alloc := range []engine.Allocation{engine.AllocationBalanced, engine.AllocationBidPrice} {
			b.Run(fmt.Sprintf("campaigns=%d/%v", n, alloc), func(b *testing.B) {
				e, _, ps := benchMarket(n)
				e.SetAllocation(alloc, benchPanel(ps))
				b.ReportAllocs()
				for b.Loop() {
					e.RefreshAllocation(synth.Now)
				}
			})
		}
	}
}

// benchPanel stores the participants in a panel, each active on a few of
// the last 30 days.
func benchPanel(ps []engine.Participant) *engine.Panel {
	pl := engine.NewPanel()
	r := rand.New(rand.NewPCG(5, 5))
	for i := range ps {
		p := ps[i]
		for d := range 1 + r.IntN(10) {
			if _, err := pl.Upsert(1, fmt.Sprint(p.ID), p, synth.Now-int64(d*3)*86400); err != nil {
				panic(err)
			}
		}
	}
	return pl
}
