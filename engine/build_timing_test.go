package engine_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/engine/synth"
)

// BenchmarkBuild measures building the snapshot of a whole market and
// reports the index memory per campaign two ways: the engine's own estimate
// (index-B/campaign) and the live heap the snapshot adds (heap-B/campaign).
func BenchmarkBuild(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("campaigns=%d", n), func(b *testing.B) {
			cs := synth.Market(n, 1)
			ctr := engine.NewCounters()
			engine.Build(cs, ctr) // counters exist from here on: measure the index alone
			var s *engine.Snapshot
			b.ReportAllocs()
			for b.Loop() {
				s = engine.Build(cs, ctr)
			}
			b.ReportMetric(float64(s.IndexBytes())/float64(n), "index-B/campaign")
			b.ReportMetric(float64(heapOf(func() any { return engine.Build(cs, ctr) }))/float64(n), "heap-B/campaign")
		})
	}
}

// BenchmarkWith measures the copy-on-write update of one campaign in a
// market of 10,000 (a rebuild of its country partition).
func BenchmarkWith(b *testing.B) {
	cs := synth.Market(10_000, 1)
	s := engine.Build(cs, nil)
	changed := []engine.Campaign{cs[42]}
	changed[0].CPICents++
	b.ReportAllocs()
	for b.Loop() {
		s.With(changed, nil)
	}
}

// heapOf returns the live heap bytes held by what build returns.
func heapOf(build func() any) int64 {
	// The heap with the built value, less the heap once it is dropped: read the other way
	// round (before the build, then with it), a snapshot the counters or an earlier build
	// held and let go during the build made the figure negative.
	var m runtime.MemStats
	with := func() uint64 {
		v := build()
		runtime.GC()
		runtime.ReadMemStats(&m)
		runtime.KeepAlive(v)
		return m.HeapAlloc
	}()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(with) - int64(m.HeapAlloc)
}

// BenchmarkApplySteady measures Engine.Apply of one changed campaign at a
// time in a 10k market, as steady admin writes do: most updates only
// rebuild the country's small delta index, one in a few hundred rebuilds it
// whole. ns/op is the amortized cost; max-ns the worst single update.
func BenchmarkApplySteady(b *testing.B) {
	cs := synth.Market(10_000, 1)
	e := engine.New(nil)
	e.Load(cs)
	var worst time.Duration
	i := 0
	for b.Loop() {
		c := cs[(i*7919)%len(cs)]
		c.CPICents = 50 + int64(i%450)
		t0 := time.Now()
		e.Apply([]engine.Campaign{c}, nil)
		worst = max(worst, time.Since(t0))
		i++
	}
	b.ReportMetric(float64(worst.Nanoseconds()), "max-ns")
}
