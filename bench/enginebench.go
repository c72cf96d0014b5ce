package bench

import (
	"runtime"
	"time"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/engine/synth"
)

// EngineResult is the in-process match time at one market size.
type EngineResult struct {
	Campaigns  int
	Matches    int
	Build      time.Duration // engine.Load of the whole market
	P50, P90   time.Duration // per match
	P99, Mean  time.Duration
	MeanOffers float64
	HeapBytes  uint64 // live heap after the load (market + snapshot)
}

// EngineBench times matches of participants against a synthetic market of each size, in
// this process, one at a time: engine.Match with the top 30, as GET /campaigns asks.
func EngineBench(sizes []int, participants, rounds int, seed int64) []EngineResult {
	var out []EngineResult
	for _, n := range sizes {
		cs := synth.Market(n, seed)
		ps := synth.Participants(participants, seed+1, n)
		e := engine.New(nil)
		t0 := time.Now()
		e.Load(cs)
		r := EngineResult{Campaigns: n, Build: time.Since(t0)}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		r.HeapBytes = ms.HeapAlloc
		h := NewHistogram()
		dst := make([]engine.Offer, 0, 30)
		offers := 0
		for i := range ps { // warm-up round
			dst = e.Match(&ps[i], benchRevShare, synth.Now, 30, dst)
		}
		for range rounds {
			for i := range ps {
				s := time.Now()
				dst = e.Match(&ps[i], benchRevShare, synth.Now, 30, dst)
				h.RecordDuration(time.Since(s))
				offers += len(dst)
			}
		}
		r.Matches = int(h.Count())
		r.P50, r.P90, r.P99 = time.Duration(h.Quantile(0.5)), time.Duration(h.Quantile(0.9)), time.Duration(h.Quantile(0.99))
		r.Mean = time.Duration(h.Mean())
		r.MeanOffers = float64(offers) / float64(max(r.Matches, 1))
		out = append(out, r)
		runtime.KeepAlive(cs)
	}
	return out
}
