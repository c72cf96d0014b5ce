package engine_test

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/engine/synth"
)

// panelBenchN is the number of participants BenchmarkPanelMemory loads.
const panelBenchN = 1_000_000

// heapInUse returns the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// loadSynthPanel upserts n synthetic participants (AGE, GENDER, ZIP and up
// to eight more answers, half with a device id, no entries) with 12-byte
// user identifiers, generated chunk by chunk so that only the panel's own
// memory stays live.
// It returns the time spent in Upsert alone.
func loadSynthPanel(pl *engine.Panel, n int) time.Duration {
	const chunk = 10_000
	var took time.Duration
	for base := 0; base < n; base += chunk {
		ps := synth.Participants(min(chunk, n-base), int64(base), 0)
		users := make([]string, len(ps))
		for i := range ps {
			users[i] = "u" + strconv.FormatInt(100_000_000_001+int64(base+i), 10)
		}
		start := time.Now()
		for i := range ps {
			id := int64(base + i + 1)
			ps[i].ID = id
			if err := pl.Put(int64(1+id%7), users[i], ps[i], synth.Now-id%(20*86400)); err != nil {
				panic(err)
			}
		}
		took += time.Since(start)
	}
	return took
}

// BenchmarkPanelMemory loads panelBenchN synthetic participants into an
// empty panel and reports the live heap the panel holds per participant
// (bytes/participant) and the time spent in Upsert (load-s). Run with
// go test ./engine -run '^$' -bench PanelMemory -benchtime 1x
func BenchmarkPanelMemory(b *testing.B) {
	for range b.N {
		before := heapInUse()
		pl := engine.NewPanel()
		took := loadSynthPanel(pl, panelBenchN)
		after := heapInUse()
		b.ReportMetric(float64(after-before)/panelBenchN, "bytes/participant")
		b.ReportMetric(took.Seconds(), "load-s")
		runtime.KeepAlive(pl)
	}
}

// BenchmarkPanelLookup measures GET /campaigns' read of the panel: Lookup
// of a participant among 100,000 into a reused Participant (0 allocs/op),
// and the same followed by Match over 1k campaigns.
func BenchmarkPanelLookup(b *testing.B) {
	const n = 100_000
	pl := engine.NewPanel()
	loadSynthPanel(pl, n)
	users := make([]string, 1024)
	for i := range users {
		users[i] = "u" + strconv.FormatInt(100_000_000_001+int64(i*97%n), 10)
	}
	pub := func(i int) int64 { return int64(1 + (int64(i*97%n)+1)%7) }
	var p engine.Participant
	b.Run("lookup", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			if !pl.Lookup(pub(i%1024), users[i%1024], &p) {
				b.Fatal("missing")
			}
		}
	})
	e, _, _ := benchMarket(1000)
	var dst []engine.Offer
	b.Run("lookup+match", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			pl.Lookup(pub(i%1024), users[i%1024], &p)
			dst = e.Match(&p, 0.7, synth.Now, 30, dst)
		}
	})
}

// BenchmarkPanelWalk walks a panel of 1M synthetic participants as the activity write-back
// does (every participant's id and activity): decoding each (Range) against reading the two
// columns (RangeActivity). ns/participant is one walk's time over the panel's size.
func BenchmarkPanelWalk(b *testing.B) {
	const n = 1_000_000
	pl := engine.NewPanel()
	loadSynthPanel(pl, n)
	var sum int64
	walk := map[string]func(){
		"Range": func() {
			pl.Range(func(p *engine.Participant, a engine.Activity) bool { sum += p.ID ^ a.LastActive; return true })
		},
		"RangeActivity": func() {
			pl.RangeActivity(func(id int64, a engine.Activity) bool { sum += id ^ a.LastActive; return true })
		},
	}
	for _, name := range []string{"Range", "RangeActivity"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				walk[name]()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/participant")
		})
	}
	_ = sum
}
