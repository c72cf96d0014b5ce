package engine_test

import (
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/engine/synth"
)

// processCPU is the CPU time this process has used so far (every goroutine, the
// background order refreshes included).
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkOutcomeAndMatch is the engine's share of a stream of callbacks beside offers:
// each op records one outcome (a complete, as the bench's callbacks phase sends) for a
// campaign participants were offered, then matches one participant. Completes raise
// campaigns' conversion bounds, and a match that finds many raised asks for a new rank
// order; cpu-ns/op counts the whole process (those background refreshes included), so
// it shows any cost that grows with the market's size.
func BenchmarkOutcomeAndMatch(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("campaigns=%d", n), func(b *testing.B) {
			e, cs, ps := benchMarket(n)
			quotas := map[int64][]int64{}
			for _, c := range cs {
				for _, q := range c.Quotas {
					quotas[c.ID] = append(quotas[c.ID], q.ID)
				}
			}
			dst := make([]engine.Offer, 0, 30)
			var offered []int64 // the campaigns the completes go to: those participants see
			for i := range ps {
				dst = e.Match(&ps[i], 0.6, synth.Now, 30, dst)
				for _, o := range dst {
					offered = append(offered, o.CampaignID)
				}
			}
			ctr := e.Counters()
			lat := make([]time.Duration, 0, 1<<16)
			b.ReportAllocs()
			cpu0, raises0 := processCPU(), ctr.Raises()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				id := offered[(i*7919)%len(offered)]
				ctr.RecordOutcome(id, quotas[id], true, synth.Now)
				t0 := time.Now()
				dst = e.Match(&ps[i%len(ps)], 0.6, synth.Now, 30, dst)
				if len(lat) < cap(lat) {
					lat = append(lat, time.Since(t0))
				}
				i++
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "match-p50-ns")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "match-p99-ns")
			b.ReportMetric(float64(processCPU()-cpu0)/float64(i), "cpu-ns/op")
			b.ReportMetric(float64(ctr.Raises()-raises0)/float64(i), "raises/op")
		})
	}
}
